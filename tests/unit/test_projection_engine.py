"""The projection engine on real SQLite files: declarations, failures, versions, waiting."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import pytest
from strategies import HISTORY_START, neuron_activated, neuron_created

from engram.ledger import Event, KindRegistry, Ledger, NewEvent, default_registry
from engram.ledger.catalog import NeuronArchived, NeuronCreated
from engram.projections.base import Projection, Tables, kind_names
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import (
    CatchUpError,
    HandlerError,
    ProjectionConfigError,
    ProjectionError,
    ProjectionStoreError,
    UnknownProjectionError,
    WaitTimeoutError,
)
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex
from engram.projections.store import CACHE_KIB


class Unnamed(msgspec.Struct, frozen=True):
    """A Struct that is no kind's payload."""

    n: int


class Counted(msgspec.Struct, frozen=True):
    """A payload registered in a registry other than the ledger's."""

    n: int


class Tally(Projection):
    """Counts neuron events per neuron; raises on neuron ``boom`` while ``broken``.

    Each event writes a row before the check, so a half-applied event would show.
    """

    name = "tally"
    version = 1
    kinds = ("neuron.created", "neuron.activated")
    tables = ("tally", "tally_log")
    step: ClassVar[int] = 1

    def __init__(self, broken: bool = False) -> None:
        self.broken = broken

    def create(self, db: Tables) -> None:
        db.conn.execute(f"CREATE TABLE {db['tally']} (id TEXT PRIMARY KEY, n INTEGER NOT NULL)")
        db.conn.execute(f"CREATE TABLE {db['tally_log']} (position INTEGER PRIMARY KEY)")

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        for e in events:
            db.conn.execute(f"INSERT INTO {db['tally_log']} VALUES (?)", (e.position,))
            db.conn.execute(
                f"INSERT INTO {db['tally']} VALUES (?, ?)"
                " ON CONFLICT (id) DO UPDATE SET n = n + excluded.n",
                (e.payload.id, self.step),
            )
            if self.broken and e.payload.id == "boom":
                raise RuntimeError("the handler broke on boom")


class TallyV2(Tally):
    """The next code version: counts in steps of 10, so its state differs from v1's."""

    version = 2
    step = 10


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


def _history(ledger: Ledger, n: int = 12, boom_at: int | None = None) -> None:
    """Append ``n`` events: creations of a, b, then activations; ``boom`` at ``boom_at``."""
    events = [neuron_created("a", HISTORY_START), neuron_created("b", HISTORY_START)]
    while len(events) < n:
        neuron = "boom" if len(events) + 1 == boom_at else "ab"[len(events) % 2]
        events.append(neuron_activated(neuron, HISTORY_START))
    ledger.append(events)


def _rows(engine: ProjectionEngine, table: str) -> list[tuple[Any, ...]]:
    with engine.read() as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


# -- declarations ---------------------------------------------------------------------------


def _declared(**attrs: Any) -> Projection:
    return type("Custom", (Tally,), attrs)()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"name": "Bad"}, "Custom.name must match"),
        ({"name": ""}, "Custom.name must match"),
        ({"name": "x" * 64}, "Custom.name must match"),
        ({"version": 0}, "Custom.version must be a positive int, got 0"),
        ({"version": True}, "Custom.version must be a positive int, got True"),
        ({"version": "1"}, "Custom.version must be a positive int, got '1'"),
        ({"kinds": ()}, "Custom.kinds must be a non-empty tuple"),
        ({"kinds": ["neuron.created"]}, "Custom.kinds must be a non-empty tuple"),
        ({"kinds": ("",)}, "Custom.kinds: a kind name must not be empty"),
        ({"kinds": (3,)}, "Custom.kinds: a kind is named by a string or a payload Struct type"),
        ({"kinds": (Unnamed,)}, "Custom.kinds: Unnamed carries no kind name"),
        ({"tables": ()}, "Custom.tables must be a non-empty tuple"),
        ({"tables": ("tally", "Tally-Log")}, "'Tally-Log' must match"),
        ({"tables": ("tally", "tally")}, "Custom.tables has duplicates"),
    ],
)
def test_invalid_declarations_name_the_problem(
    ledger: Ledger, tmp_path: Path, attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ProjectionConfigError, match=message.replace("(", r"\(")):
        ProjectionEngine(ledger, tmp_path / "store", [_declared(**attrs)])
    assert not (tmp_path / "store").exists()  # refused before the store is touched


def test_a_kind_the_registry_does_not_know_is_refused_at_open(
    ledger: Ledger, tmp_path: Path
) -> None:
    typo = _declared(kinds=("neuron.created", "memory.observd"))
    with pytest.raises(ProjectionConfigError) as caught:
        ProjectionEngine(ledger, tmp_path / "store", [typo])
    assert str(caught.value) == (
        "projection 'tally' consumes kind 'memory.observd', which the ledger's registry does "
        "not know; did you mean 'memory.observed'? (register its payload type before opening "
        "the engine)"
    )
    assert not (tmp_path / "store").exists()  # refused before the store is touched

    # A kind registered in another registry is unknown to this ledger all the same.
    other = KindRegistry()
    other.register("tally.counted", Counted)
    with pytest.raises(ProjectionConfigError, match=r"kind 'tally\.counted', which the ledger's"):
        ProjectionEngine(ledger, tmp_path / "store", [_declared(kinds=(Counted,))])


def test_kinds_may_be_payload_types_and_mix_with_names(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 6)
    ledger.append(NewEvent.of(NeuronArchived(id="a"), stream="neuron:a"))
    by_type = _declared(name="by_type", kinds=(NeuronCreated, "neuron.activated", NeuronCreated))
    assert kind_names(by_type) == ("neuron.created", "neuron.activated")
    # The class keeps stored names, so every reader of `kinds` sees strings.
    assert type(by_type).kinds == ("neuron.created", "neuron.activated", "neuron.created")
    assert NeuronGraph.kinds[:2] == ("neuron.created", "neuron.activated")
    with ProjectionEngine(ledger, tmp_path / "store", [by_type]) as engine:
        engine.catch_up()
        # 2 creations + 4 activations; the archive is not a consumed kind.
        assert [n for _, n in _rows(engine, "tally")] == [3, 3]
        assert len(_rows(engine, "tally_log")) == 6


def test_a_payload_type_registered_after_the_class_is_named_at_open(tmp_path: Path) -> None:
    class Tallied(msgspec.Struct, frozen=True):
        id: str

    late = _declared(name="late", kinds=(Tallied,))
    assert type(late).kinds == (Tallied,)  # no name yet: kept, named when the engine opens
    registry = default_registry()
    registry.register("tally.tallied", Tallied)
    with Ledger.open(str(tmp_path / "ledger.db"), registry) as ledger:
        ledger.append(NewEvent.of(Tallied("x"), stream="tally:x"))
        assert kind_names(late) == ("tally.tallied",)
        with ProjectionEngine(ledger, tmp_path / "store", [late]) as engine:
            assert engine.catch_up() == 1
            assert _rows(engine, "tally") == [("x", 1)]


def test_engine_refuses_clashes_and_bad_options(ledger: Ledger, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with pytest.raises(ProjectionConfigError, match="two projections are named 'tally'"):
        ProjectionEngine(ledger, store, [Tally(), TallyV2()])
    with pytest.raises(ProjectionConfigError, match="table 'tally' is declared by both"):
        ProjectionEngine(ledger, store, [Tally(), _declared(name="other")])
    with pytest.raises(ProjectionConfigError, match="not a Projection: 'graph'"):
        ProjectionEngine(ledger, store, ["graph"])  # type: ignore[list-item]
    with pytest.raises(ProjectionConfigError, match="batch_size must be a positive int"):
        ProjectionEngine(ledger, store, [Tally()], batch_size=0)
    with pytest.raises(ProjectionConfigError, match="ledger must be a Ledger"):
        ProjectionEngine("ledger.db", store, [Tally()])  # type: ignore[arg-type]
    with pytest.raises(ProjectionConfigError, match="decay rate must be in"):
        SalienceIndex(rate=1.5)
    (tmp_path / "file").write_text("")
    with pytest.raises(ProjectionConfigError, match="exists and is not a directory"):
        ProjectionEngine(ledger, tmp_path / "file", [Tally()])


def test_unknown_projection_names_are_refused(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 4)
    with ProjectionEngine(ledger, tmp_path / "store", [Tally(), NeuronGraph()]) as engine:
        for call in (
            lambda: engine.catch_up(names=["tally", "nope"]),
            lambda: engine.rebuild(["nope"]),
            lambda: engine.digest("nope"),
        ):
            with pytest.raises(UnknownProjectionError, match=r"'nope'.*registered: neuron_graph"):
                call()
        assert engine.status()[0].checkpoint == 0  # nothing ran
        assert engine.catch_up(names="tally") == 4
        assert [s.checkpoint for s in engine.status()] == [4, 0]


# -- a failing handler ----------------------------------------------------------------------


def test_a_failing_handler_stops_only_its_projection_at_the_event(
    ledger: Ledger, tmp_path: Path
) -> None:
    _history(ledger, 20, boom_at=13)
    tally = Tally(broken=True)
    with ProjectionEngine(ledger, tmp_path / "store", [tally, NeuronGraph()]) as engine:
        with pytest.raises(CatchUpError) as caught:
            engine.catch_up()
        error = caught.value
        assert isinstance(error, HandlerError)
        assert (error.projection, error.position, error.kind) == ("tally", 13, "neuron.activated")
        assert [f.projection for f in error.failures] == ["tally"]
        assert "'tally' failed at position 13 (neuron.activated)" in str(error)
        assert "the handler broke on boom" in str(error)

        tally_status, graph_status = engine.status()
        assert (tally_status.state, tally_status.checkpoint) == ("failed", 12)
        assert tally_status.error is not None
        assert "stopped at position 13 (neuron.activated)" in tally_status.error
        assert (graph_status.state, graph_status.checkpoint, graph_status.lag) == ("live", 20, 0)
        # Exactly the prefix: nothing of event 13 (its log row was written before the raise).
        assert _rows(engine, "tally_log") == [(p,) for p in range(1, 13)]
        with ProjectionEngine(ledger, tmp_path / "prefix", [Tally()]) as prefix:
            prefix.catch_up(upto=12)
            assert engine.digest("tally") == prefix.digest("tally")

        # Still broken: the next catch-up stops at the same event again, no further.
        with pytest.raises(CatchUpError, match="position 13"):
            engine.catch_up()
        assert engine.status()[0].checkpoint == 12

        tally.broken = False
        assert engine.catch_up() == 20
        status = engine.status()[0]
        assert (status.state, status.checkpoint, status.error) == ("live", 20, None)
        assert _rows(engine, "tally") == [("a", 9), ("b", 10), ("boom", 1)]
        with ProjectionEngine(ledger, tmp_path / "fresh", [Tally()]) as fresh:
            fresh.catch_up()
            assert engine.digest("tally") == fresh.digest("tally")


def test_a_failing_handler_in_a_rebuild_keeps_the_live_generation(
    ledger: Ledger, tmp_path: Path
) -> None:
    _history(ledger, 10)
    tally = Tally()
    with ProjectionEngine(ledger, tmp_path / "store", [tally], batch_size=3) as engine:
        engine.catch_up()
        live = engine.digest("tally")
        _history(ledger, 6, boom_at=5)  # positions 11..16, boom at 15
        tally.broken = True
        with pytest.raises(CatchUpError) as caught:
            engine.rebuild()
        assert (caught.value.projection, caught.value.position) == ("tally", 15)
        assert engine.digest("tally") == live  # readers still see the old live state
        assert engine.status()[0].checkpoint == 10
        tally.broken = False
        engine.rebuild()
        with ProjectionEngine(ledger, tmp_path / "fresh", [Tally()]) as fresh:
            fresh.catch_up()
            assert engine.digest("tally") == fresh.digest("tally")
        assert engine.status()[0].state == "live"


class _Interrupted(Exception):
    """Stands for a crash between a rebuild's batches."""


def _interrupt(label: str, done: int, total: int) -> None:
    if label == "rebuild":
        raise _Interrupted


def test_an_interrupted_rebuild_is_resumed_by_the_next_catch_up(
    ledger: Ledger, tmp_path: Path
) -> None:
    _history(ledger, 12)
    with ProjectionEngine(ledger, tmp_path / "store", [Tally()], batch_size=4) as engine:
        engine.catch_up()
        live = engine.digest("tally")
        with pytest.raises(_Interrupted):
            engine.rebuild(progress=_interrupt)
        assert engine.status()[0].state == "rebuilding"
        assert engine.digest("tally") == live
        engine.catch_up()
        assert engine.status()[0].state == "live"
        with engine.read() as conn:
            states = [r[0] for r in conn.execute("SELECT state FROM engram_generations")]
        assert states == ["live"]


def test_an_interrupted_rebuild_is_replaced_by_the_next_rebuild(
    ledger: Ledger, tmp_path: Path
) -> None:
    _history(ledger, 12)
    with ProjectionEngine(ledger, tmp_path / "store", [Tally()], batch_size=4) as engine:
        engine.catch_up()
        with pytest.raises(_Interrupted):
            engine.rebuild(progress=_interrupt)
        _history(ledger, 5)
        engine.rebuild()
        [status] = engine.status()
        assert (status.state, status.checkpoint) == ("live", 17)
        with ProjectionEngine(ledger, tmp_path / "fresh", [Tally()]) as fresh:
            fresh.catch_up()
            assert engine.digest("tally") == fresh.digest("tally")


# -- versions -------------------------------------------------------------------------------


def test_a_version_bump_rebuilds_automatically(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 9)
    store = tmp_path / "store"
    with ProjectionEngine(ledger, store, [Tally()]) as engine:
        engine.catch_up()
        assert _rows(engine, "tally") == [("a", 5), ("b", 4)]
    with ProjectionEngine(ledger, store, [TallyV2()], batch_size=2) as engine:
        [stale] = engine.status()
        assert (stale.state, stale.identity, stale.stored_identity) == ("stale", "v2", "v1")
        assert engine.catch_up() == 9
        [status] = engine.status()
        assert (status.state, status.identity, status.stored_identity) == ("live", "v2", "v2")
        assert status.checkpoint == 9
        assert status.generation != stale.generation
        assert _rows(engine, "tally") == [("a", 50), ("b", 40)]
        with ProjectionEngine(ledger, tmp_path / "fresh", [TallyV2()]) as fresh:
            fresh.catch_up()
            assert engine.digest("tally") == fresh.digest("tally")
        with engine.read() as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert f"_g{stale.generation}__tally" not in tables  # the old generation is gone


def test_a_config_change_is_part_of_the_identity(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 6)
    store = tmp_path / "store"
    with ProjectionEngine(ledger, store, [SalienceIndex()]) as engine:
        engine.catch_up()
        before = engine.digest("salience")
    with ProjectionEngine(ledger, store, [SalienceIndex(rate=0.5)]) as engine:
        assert engine.status()[0].state == "stale"
        engine.catch_up()
        [status] = engine.status()
        assert (status.state, status.identity) == ("live", f"v{SalienceIndex.version};rate=0.5")
        assert engine.digest("salience") != before  # ranks depend on the rate


# -- read-your-writes -----------------------------------------------------------------------


def test_wait_for_gives_read_your_writes(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 3)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()]) as engine:
        engine.catch_up()
        [position] = ledger.append(neuron_created("late", HISTORY_START))
        engine.wait_for(position)
        assert ("late",) in _rows(engine, "(SELECT id FROM neurons)")

        def append_later() -> None:
            time.sleep(0.3)
            ledger.append(neuron_created("later", HISTORY_START))

        writer = threading.Thread(target=append_later)
        writer.start()
        engine.wait_for(position + 1, timeout=10)
        writer.join()
        assert ("later",) in _rows(engine, "(SELECT id FROM neurons)")


def test_wait_for_a_position_never_reached_times_out(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 3)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()]) as engine:
        started = time.monotonic()
        with pytest.raises(WaitTimeoutError, match=r"position 9 within 0\.3s"):
            engine.wait_for(9, timeout=0.3)
        assert time.monotonic() - started < 5
        with pytest.raises(ProjectionConfigError, match="position must be an int >= 0"):
            engine.wait_for(-1)


def test_status_can_be_read_inside_a_read_snapshot(ledger: Ledger, tmp_path: Path) -> None:
    _history(ledger, 3)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()]) as engine:
        engine.catch_up()
        with engine.read() as conn:
            assert conn.execute("SELECT count(*) FROM neurons").fetchone() == (2,)
            assert engine.status()[0].checkpoint == 3


def test_readers_keep_the_writer_s_page_cache(ledger: Ledger, tmp_path: Path) -> None:
    """A recall's scattered reads stay cached between recalls (ADR 0103): a reader's page
    cache is the writer's, not SQLite's default 2 MB."""
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()]) as engine:
        with engine.read() as conn:
            assert conn.execute("PRAGMA cache_size").fetchone() == (-CACHE_KIB,)
            assert conn.execute("PRAGMA mmap_size").fetchone() == (0,)
        with engine.store.transaction() as conn:
            assert conn.execute("PRAGMA cache_size").fetchone() == (-CACHE_KIB,)


# -- the store belongs to one ledger --------------------------------------------------------


@pytest.mark.parametrize("other_head", [0, 4, 12])
def test_a_store_opened_against_another_ledger_is_built_again_from_it(
    ledger: Ledger, tmp_path: Path, other_head: int
) -> None:
    # ADR 0124 (amending ADR 0011, which refused a store whose checkpoint was past the head
    # and trusted it once the head had passed it): the store records the history it read,
    # and one opened over another ledger, shorter or longer, is emptied and built again.
    _history(ledger, 10)
    store = tmp_path / "store"
    with ProjectionEngine(ledger, store, [NeuronGraph(), SalienceIndex()]) as engine:
        assert engine.reset is None
        engine.catch_up()
    with Ledger.open(str(tmp_path / "other.db")) as other:
        if other_head:
            _history(other, other_head)
        with ProjectionEngine(other, store, [NeuronGraph(), SalienceIndex()]) as engine:
            assert engine.reset is not None
            assert engine.catch_up() == other_head
            digest = engine.digest("neuron_graph")
        with ProjectionEngine(other, tmp_path / "fresh", [NeuronGraph(), SalienceIndex()]) as fresh:
            fresh.catch_up()
            assert fresh.digest("neuron_graph") == digest  # as if built from it alone


def test_every_projection_error_derives_from_the_root() -> None:
    for error in (
        ProjectionConfigError,
        UnknownProjectionError,
        ProjectionStoreError,
        HandlerError,
        CatchUpError,
        WaitTimeoutError,
    ):
        assert issubclass(error, ProjectionError)
    assert issubclass(CatchUpError, HandlerError)
