"""One contract for every projection the runtime opens (DESIGN.md, rules 3 and 4).

The suite is parametrised over ``engram.runtime.default_projections`` — the very list the
runtime opens, with the deterministic hash embedder, so FAISS-ready vectors are real and no
model is needed — and a projection added to that list is covered with no new test code. The
kinds it consumes must be ones tests/strategies.py generates; a test below says so if not.

For random histories of every catalog kind (edge cases included: activations before
creation, duplicate connections, archives and recalls of unknown, future or neuron positions,
texts past the indexes' cap, times that go back) cut into random appends and engine batch
sizes, each projection must give:

- the same state caught up incrementally as rebuilt, in place or in a fresh store;
- no change from a second catch-up;
- no change when an already-applied batch is offered again;
- the same digest after the store is closed and reopened;
- no change from events of kinds it does not consume;
- after a SIGKILL in the middle of a batch, and another at a random moment, the state of a
  clean rebuild once a fresh process has caught up;
- the same state from a PostgreSQL ledger as from a SQLite one holding the same events.

State is compared two ways: the projection's own digest, and the rows of its tables read
straight from the store file with sqlite3 (an FTS5 table's rowid included), so a digest that
overlooks a column cannot hide a difference.

Offering a batch again: a projection's handler is promised each event exactly once per
generation (projections/base.py), and the engine keeps that promise with a checkpoint
committed in the batch's transaction. So an applied batch is offered again the ways it is
in production — the same events appended again (a retried append) and another engine over
the same store (another process) — and never by calling the handler behind the engine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import (
    HISTORY_KINDS,
    connection_created,
    memory_observed,
    memory_recalled,
    memory_reflected,
    neuron_activated,
    neuron_archived,
    neuron_created,
    partitions,
    projection_histories,
    seeded_history,
    split,
)

from engram.config import Settings, resolve_settings
from engram.ledger import KindRegistry, Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived
from engram.projections.base import Projection
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.store import physical
from engram.runtime import default_projections, open_engine, open_settings

WORKER = Path(__file__).parents[1] / "integration" / "_workers" / "projection_contract_worker.py"


def runtime_settings(ledger: str, store: Path, **options: Any) -> Settings:
    """Resolve the runtime's settings for ``ledger`` with its projection store at ``store``."""
    # config=os.devnull: the contract must not read this machine's engram config files.
    return resolve_settings(ledger, config=os.devnull, projections=str(store), **options)


def runtime_projections(ledger: str, store: Path) -> list[Projection]:
    """The runtime's default projections, on the deterministic hash embedder."""
    return default_projections(runtime_settings(ledger, store), HashEmbedder())


_DEFAULT = runtime_projections("ledger.db", Path("ledger.db.projections"))
NAMES = [p.name for p in _DEFAULT]
KINDS = {p.name: p.kinds for p in _DEFAULT}

#: Every test runs its share of the profile's examples: the file takes about a minute.
contract = settings(max_examples=max(4, settings.default.max_examples // 5))
batch_sizes = st.integers(min_value=1, max_value=7)


class Noted(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The payload of ``test.noted``, a user kind no projection consumes."""

    text: str


def contract_registry() -> KindRegistry:
    """engram's kinds and one user kind."""
    registry = default_registry()
    registry.register("test.noted", Noted)
    return registry


# -- reading a projection's state -----------------------------------------------------------


class State(NamedTuple):
    """A projection's digest and the rows of its tables, by logical table name."""

    digest: str
    rows: dict[str, list[tuple[Any, ...]]]


def table_rows(store_file: Path, projection: Projection) -> dict[str, list[tuple[Any, ...]]]:
    """Read every table of the live generation straight from the store file, rows sorted."""
    conn = sqlite3.connect(f"file:{store_file}?mode=ro", uri=True)
    try:
        (generation,) = conn.execute(
            "SELECT generation FROM engram_generations WHERE name = ? AND state = 'live'",
            (projection.name,),
        ).fetchone()
        out = {}
        for table in projection.tables:
            name = physical(generation, table)
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (name.strip('"'),)
            ).fetchone()
            # An FTS5 table keeps its key, the ledger position, in the rowid.
            columns = "rowid, *" if sql.upper().startswith("CREATE VIRTUAL TABLE") else "*"
            width = len(conn.execute(f"SELECT {columns} FROM {name} LIMIT 0").description)
            order = ", ".join(str(i) for i in range(1, width + 1))
            out[table] = conn.execute(f"SELECT {columns} FROM {name} ORDER BY {order}").fetchall()
        return out
    finally:
        conn.close()


def state(engine: ProjectionEngine, name: str) -> State:
    """The state of ``name``, which must be live and caught up with the ledger."""
    (status,) = [s for s in engine.status(digest=True) if s.name == name]
    assert (status.state, status.lag, status.error) == ("live", 0, None), status
    assert status.digest is not None
    return State(status.digest, table_rows(engine.store.path, engine.projections[name]))


def checkpoint(store: Path, name: str) -> int:
    """The live checkpoint of ``name``, read from the store file (0 before there is one)."""
    path = store / "projections.db"
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute(
            "SELECT checkpoint FROM engram_generations WHERE name = ? AND state = 'live'",
            (name,),
        ).fetchone()
    except sqlite3.OperationalError:  # the catalog is not created yet
        return 0
    finally:
        conn.close()
    return 0 if row is None else int(row[0])


# -- environments ---------------------------------------------------------------------------


@dataclass
class Env:
    """A SQLite ledger in a fresh directory, and engines over stores beside it."""

    root: Path
    ledger: Ledger

    @property
    def path(self) -> str:
        """The ledger file."""
        return str(self.root / "ledger.db")

    def engine(self, store: str, name: str, batch_size: int = 5000) -> ProjectionEngine:
        """An engine over the store ``store`` with only the runtime's projection ``name``."""
        projections = runtime_projections(self.path, self.root / store)
        return ProjectionEngine(
            self.ledger,
            self.root / store,
            [p for p in projections if p.name == name],
            batch_size=batch_size,
        )

    def reopen(self) -> None:
        """Close the ledger and open it again, as another process would."""
        self.ledger.close()
        self.ledger = Ledger.open(self.path, contract_registry())


@contextmanager
def sqlite_env() -> Iterator[Env]:
    """A fresh SQLite ledger (engram's kinds and ``test.noted``), closed after the block."""
    # Hypothesis runs many examples per test: each gets its own directory, not tmp_path.
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(Path(tmp), Ledger.open(str(Path(tmp) / "ledger.db"), contract_registry()))
        try:
            yield env
        finally:
            env.ledger.close()


Plan = tuple[list[NewEvent], list[int], list[int]]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    """A history, how to cut it into appends, and the engine's batch size for each catch-up."""
    history = draw(projection_histories())
    sizes = draw(partitions(len(history)))
    return history, sizes, draw(st.lists(batch_sizes, min_size=len(sizes), max_size=len(sizes)))


# Written out once: each rule of every projection meets an event it must ignore or survive.
_T = datetime(2030, 1, 1, tzinfo=UTC)
_EDGE_CASES = [
    neuron_activated("n1", _T, 0.5),  # 1: activation before creation
    neuron_created("n1", _T),  # 2
    neuron_created("n1", _T, concept="again"),  # 3: duplicate creation
    neuron_created("n2", _T + timedelta(hours=2)),  # 4
    connection_created("n1", "n2", 65535, _T),  # 5
    connection_created("n1", "n2", 7, _T),  # 6: duplicate connection
    connection_created("n1", "n9", 7, _T),  # 7: unknown target
    memory_observed("the parser failed " * 1000, _T, 10),  # 8: past the texts' cap
    memory_recalled([8, 8, 1, 10**9], _T - timedelta(hours=5)),  # 9: twice, a neuron, unknown
    NewEvent(
        stream="agent:inner",
        kind="memory.archived",
        payload=MemoryArchived(agent="inner", positions=[8, 1, 12, 2**63 - 1]),
        at=_T.astimezone(timezone(timedelta(hours=-8))),
    ),  # 10: a memory, a neuron event, a future position, the last position there can be
    memory_recalled([8], _T + timedelta(hours=1)),  # 11: an archived memory
    memory_observed("later", _T + timedelta(hours=1)),  # 12: archived before it existed
    neuron_archived("n2", _T),  # 13
    neuron_activated("n2", _T + timedelta(hours=3), 1e6),  # 14: after archival
    memory_reflected(
        ["00000000-0000-7000-8000-000000000008", "00000000-0000-7000-8000-000000000012"], _T
    ),  # 15: on an archived memory and one observed after the archival
    memory_reflected(
        [
            "00000000-0000-7000-8000-000000000015",
            "00000000-0000-7000-8000-000000000009",
            "00000000-0000-7000-8000-000000000099",
            "00000000-0000-7000-8000-000000000015",
        ],
        _T - timedelta(hours=9),
        depth=5,
        agent="outer",
    ),  # 16: a reflection, a recall, an id no event has, one twice; a depth that is wrong
]
EDGE_CASES = [
    msgspec.structs.replace(e, id=f"00000000-0000-7000-8000-{i:012d}")
    for i, e in enumerate(_EDGE_CASES, start=1)
]


# -- the contract ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_histories_generate_every_kind_the_projection_consumes(name: str) -> None:
    registry = default_registry()
    unregistered = sorted(k for k in KINDS[name] if k not in registry)
    assert not unregistered, f"{name} consumes kinds no registry knows: {unregistered}"
    missing = sorted(set(KINDS[name]) - set(HISTORY_KINDS))
    assert not missing, (
        f"{name} consumes {missing}, which the contract's histories never generate:"
        " teach _history in tests/strategies.py to write them, edge cases included"
    )
    generated = {e.kind for e in seeded_history(0, 500)}
    assert set(KINDS[name]) <= generated


@pytest.mark.parametrize("name", NAMES)
@contract
@given(plan=plans())
@example(plan=(EDGE_CASES, [len(EDGE_CASES)], [5000]))
@example(plan=(EDGE_CASES, [1] * len(EDGE_CASES), [1] * len(EDGE_CASES)))
def test_rebuild_equals_incremental_catch_up(name: str, plan: Plan) -> None:
    history, sizes, batches = plan
    with sqlite_env() as env:
        with env.engine("incremental", name) as engine:
            for chunk, batch_size in zip(split(history, sizes), batches, strict=True):
                env.ledger.append(chunk)
                engine.batch_size = batch_size
                assert engine.catch_up() == env.ledger.head()
            incremental = state(engine, name)
            engine.rebuild()  # beside the live generation, then swapped in
            assert state(engine, name) == incremental
        with env.engine("fresh", name) as fresh:
            assert fresh.catch_up() == env.ledger.head()
            assert state(fresh, name) == incremental


@pytest.mark.parametrize("name", NAMES)
@contract
@given(history=projection_histories(), batch_size=batch_sizes, data=st.data())
def test_a_second_catch_up_changes_nothing(
    name: str, history: list[NewEvent], batch_size: int, data: st.DataObject
) -> None:
    with sqlite_env() as env, env.engine("store", name, batch_size) as engine:
        env.ledger.append(history)
        head = engine.catch_up()
        before = state(engine, name)
        assert engine.catch_up() == head
        assert engine.catch_up(upto=data.draw(st.integers(0, head), label="upto")) <= head
        assert state(engine, name) == before
        assert checkpoint(env.root / "store", name) == head


@pytest.mark.parametrize("name", NAMES)
@contract
@given(plan=plans(), data=st.data())
def test_an_applied_batch_offered_again_changes_nothing(
    name: str, plan: Plan, data: st.DataObject
) -> None:
    history, sizes, batches = plan
    with (
        sqlite_env() as env,
        env.engine("store", name) as engine,
        env.engine("store", name) as other,  # another process over the same store
    ):
        for chunk, batch_size in zip(split(history, sizes), batches, strict=True):
            positions = env.ledger.append(chunk)
            engine.batch_size = other.batch_size = batch_size
            assert engine.catch_up() == positions[-1]
            applied = state(engine, name)
            # A retried append of the batch stores nothing and returns the same positions.
            assert env.ledger.append(chunk) == positions
            assert engine.catch_up() == positions[-1]
            assert other.catch_up() == positions[-1]
            assert state(engine, name) == applied
            assert state(other, name) == applied
        # A retried append of any suffix, across batches, stores nothing either.
        cut = data.draw(st.integers(0, len(history) - 1), label="suffix start")
        assert env.ledger.append(history[cut:]) == list(range(cut + 1, len(history) + 1))
        assert engine.catch_up() == other.catch_up() == len(history)
        assert state(engine, name) == state(other, name) == applied


@pytest.mark.parametrize("name", NAMES)
@contract
@given(history=projection_histories(), batch_size=batch_sizes)
def test_the_digest_is_stable_after_close_and_reopen(
    name: str, history: list[NewEvent], batch_size: int
) -> None:
    with sqlite_env() as env:
        env.ledger.append(history)
        with env.engine("store", name, batch_size) as engine:
            engine.catch_up()
            before = state(engine, name)
            (generation,) = [s.generation for s in engine.status() if s.name == name]
        env.reopen()
        with env.engine("store", name, batch_size) as engine:
            # Before any catch-up: new projection objects recognise the stored generation.
            assert [(s.generation, s.stored_identity == s.identity) for s in engine.status()] == [
                (generation, True)
            ]
            assert state(engine, name) == before
            assert engine.catch_up() == env.ledger.head()
            assert state(engine, name) == before


@pytest.mark.parametrize("name", NAMES)
@contract
@given(history=projection_histories(), data=st.data())
def test_events_of_kinds_it_does_not_consume_leave_it_unchanged(
    name: str, history: list[NewEvent], data: st.DataObject
) -> None:
    foreign = tuple(k for k in HISTORY_KINDS if k not in KINDS[name])
    with sqlite_env() as env, env.engine("store", name) as engine:
        env.ledger.append(history)
        engine.catch_up()
        before = state(engine, name)
        noise = data.draw(projection_histories(kinds=foreign), label="noise") if foreign else []
        noise = [msgspec.structs.replace(e, id=None) for e in noise]  # ids of their own
        noise.append(NewEvent(stream="test:noise", kind="test.noted", payload=Noted(text="x")))
        env.ledger.append(noise)
        assert engine.catch_up() == env.ledger.head()
        assert state(engine, name) == before  # and its checkpoint reached the head


@contract
@given(plan=plans())
def test_the_runtime_engine_gives_each_projection_the_state_it_has_alone(plan: Plan) -> None:
    history, sizes, batches = plan
    with sqlite_env() as env:
        settings = runtime_settings(env.path, env.root / "together")
        with open_engine(env.ledger, settings, HashEmbedder()) as together:
            assert sorted(together.projections) == sorted(NAMES)
            for chunk, batch_size in zip(split(history, sizes), batches, strict=True):
                env.ledger.append(chunk)
                together.batch_size = batch_size
                together.catch_up()
            for name in NAMES:
                with env.engine(f"alone-{name}", name) as alone:
                    alone.catch_up()
                    assert state(together, name) == state(alone, name), name


# -- a SIGKILL in the middle of a batch ------------------------------------------------------

CRASH_EVENTS = 2000
CRASH_BATCH = 3


@pytest.fixture(scope="module")
def crash_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """A SQLite ledger of a seeded history of every kind, for the crash tests."""
    path = str(tmp_path_factory.mktemp("crash") / "ledger.db")
    seed = random.randrange(2**31)
    print(f"crash history seed {seed}")
    with Ledger.open(path, durability="fast") as ledger:
        ledger.append(seeded_history(seed, CRASH_EVENTS, neurons=40, long_texts=False))
        return path, ledger.head()


def spawn(cfg: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-W", "error", str(WORKER), json.dumps(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def sigkill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc`` and check that the kill, not anything else, ended it."""
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"worker exited {proc.returncode}:\n{err}"


def stall_and_kill(cfg: dict[str, Any]) -> int:
    """Run a worker until it stalls in a batch, SIGKILL it; return the batch's first position."""
    proc = spawn(cfg)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line, f"the worker ended without stalling:\n{proc.communicate()[1]}"
        first, last = json.loads(line)["stalled"]
        sigkill(proc)
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    assert first <= cfg["stall_at"] <= last
    return int(first)


def kill_when(proc: subprocess.Popen[str], store: Path, name: str, at: int) -> None:
    """SIGKILL ``proc`` as soon as the checkpoint of ``name`` has passed position ``at``."""
    deadline = time.monotonic() + 60
    try:
        while checkpoint(store, name) < at:
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"the worker ended before position {at} ({proc.returncode}):\n{err}")
            assert time.monotonic() < deadline, f"no progress past {at} in 60 s"
            time.sleep(0.0005)
        sigkill(proc)
    finally:
        proc.kill()
        proc.communicate(timeout=30)


@pytest.mark.parametrize("name", NAMES)
def test_a_sigkill_mid_batch_converges_to_a_clean_rebuild(
    name: str, crash_ledger: tuple[str, int], tmp_path: Path
) -> None:
    path, head = crash_ledger
    with Ledger.open(path) as ledger:
        consumed = [e.position for e in ledger.read(kinds=list(KINDS[name]))]
    seed = random.randrange(2**31)
    print(f"{name}: {len(consumed)} of {head} events consumed; kill seed {seed}")
    rng = random.Random(seed)
    store = tmp_path / "store"
    cfg = {"ledger": path, "store": str(store), "name": name, "batch_size": CRASH_BATCH}

    # 1. Stopped inside a batch, once after the handler wrote its rows and once when the
    # checkpoint is written too and only the COMMIT is left: nothing of the batch is kept.
    index = len(consumed) // 6
    for where in ("handler", "commit"):
        stall = consumed[rng.randrange(index, index + len(consumed) // 6)]
        first = stall_and_kill({**cfg, "stall": where, "stall_at": stall})
        before = consumed[consumed.index(first) - 1]
        assert before <= checkpoint(store, name) < first, f"killed in the {where}"
        index = consumed.index(first) + 1

    # 2. Killed at whatever it is doing once the checkpoint has passed a later event.
    at = consumed[rng.randrange(index, len(consumed) * 3 // 4)]
    kill_when(spawn(cfg), store, name, at)
    # A projection that consumes few kinds can finish its last batches between two polls;
    # the stalled kills of step 1 are the ones guaranteed to land inside a batch.
    assert at <= checkpoint(store, name) <= head

    # 3. A fresh process finishes the catch-up; a clean rebuild in a fresh store agrees.
    done = subprocess.run(
        [sys.executable, "-W", "error", str(WORKER), json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    reference_settings = runtime_settings(path, tmp_path / "reference")
    (projection,) = [
        p for p in default_projections(reference_settings, HashEmbedder()) if p.name == name
    ]
    with (
        Ledger.open(path) as ledger,
        ProjectionEngine(ledger, reference_settings.projection_store, [projection]) as reference,
    ):
        reference.rebuild()
        expected = state(reference, name)
    assert result == {"head": head, "digest": expected.digest}
    assert table_rows(store / "projections.db", projection) == expected.rows


# -- the ledger backend ----------------------------------------------------------------------


@pytest.mark.postgres
def test_a_postgresql_ledger_gives_the_same_projections_as_sqlite(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    seed = random.randrange(2**31)
    print(f"history seed {seed}")
    rng = random.Random(seed)
    history = [*EDGE_CASES, *seeded_history(seed, 400, salt=2)]
    sizes = partitions_of(len(history), rng)
    batch_size = rng.randint(1, 50)
    states: dict[str, dict[str, State]] = {}
    for backend, target, options in (
        ("sqlite", str(tmp_path / "ledger.db"), {}),
        ("postgresql", pg_dsn, {"pg_schema": pg_schema}),
    ):
        settings = runtime_settings(target, tmp_path / backend, **options)
        with open_settings(settings) as ledger:
            assert ledger.backend_name == backend
            for chunk in split(history, sizes):
                ledger.append(chunk)
            with open_engine(ledger, settings, HashEmbedder(), batch_size=batch_size) as engine:
                assert engine.catch_up() == len(history)
                states[backend] = {name: state(engine, name) for name in NAMES}
    for name in NAMES:
        assert states["postgresql"][name] == states["sqlite"][name], name


def partitions_of(n: int, rng: random.Random) -> list[int]:
    """Positive sizes summing to ``n``, drawn from ``rng``."""
    sizes = []
    while n:
        sizes.append(rng.randint(1, min(n, 60)))
        n -= sizes[-1]
    return sizes
