"""Archiving memories end to end: the event, every index, the index file, the CLI."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from test_recall import T0, WORDS, Memory, break_lexical_index

from engram.agents.errors import MemoryOwnerError, UnknownMemoryError
from engram.agents.memory import AgentMemory
from engram.cli import main
from engram.ledger import NewEvent, PayloadError
from engram.ledger.catalog import MemoryArchived, SignalSent
from engram.projections import salience
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import IndexFileWarning, SemanticIndex, VectorSearcher
from engram.projections.store import ProjectionStore, physical

NAMES = ("salience", "lexical", "semantic")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    m = Memory(tmp_path)
    yield m
    m.close()


def searcher(memory: Memory, exact_limit: int = 20_000) -> VectorSearcher:
    return VectorSearcher(
        memory.root / "store", 8, str(memory.embedder.fingerprint), exact_limit=exact_limit
    )


def synced(memory: Memory, exact_limit: int = 20_000) -> VectorSearcher:
    s = searcher(memory, exact_limit)
    sync(memory, s)
    return s


def sync(memory: Memory, s: VectorSearcher) -> None:
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        s.sync(conn)


def served(memory: Memory, s: VectorSearcher, text: str, k: int = 100) -> list[int]:
    query = memory.embedder.embed([text])[0]
    return [hit.position for hit in s.search(query, k, agent="alice")]


def notes(alice: AgentMemory, n: int) -> list[int]:
    return [
        alice.observe(f"note {i} about the {WORDS[i % len(WORDS)]}", at=T0 + timedelta(minutes=i))
        for i in range(n)
    ]


# -- every recall path ------------------------------------------------------------------------


def test_an_archived_memory_leaves_the_lexical_and_semantic_paths(memory: Memory) -> None:
    alice = memory.agent("alice")
    outage = alice.observe("The database outage lasted two hours", at=T0)
    other = alice.observe("Plan the database rollback", at=T0)
    for path in ("lexical", "semantic"):  # the searcher is synced before the archive too
        found = alice.recall("database outage", 5, paths=(path,), record=False)
        assert {r.event.position for r in found.items} == {outage, other}

    position = alice.archive([outage], reason="resolved")

    event = next(memory.ledger.read(position - 1, limit=1))
    assert (event.kind, event.stream, event.actor) == ("memory.archived", "agent:alice", "alice")
    assert event.payload == MemoryArchived(agent="alice", positions=[outage], reason="resolved")
    for paths in (("lexical",), ("semantic",), ("lexical", "semantic")):
        found = alice.recall("database outage", 5, paths=paths, record=False)
        assert found.fallback is None
        assert [r.event.position for r in found.items] == [other], paths
    with memory.engine.read() as conn:
        live = salience.top(conn, T0, 10, items=["memory"])
        assert [item.position for item in live] == [other]
        assert salience.salience_of(conn, "memory", event.id, T0) is None


def test_an_archived_memory_leaves_the_keyword_fallback(memory: Memory) -> None:
    alice = memory.agent("alice", vectors=False)
    outage = alice.observe("The database outage lasted two hours", at=T0)
    other = alice.observe("Another outage, of the coffee machine", at=T0)
    alice.archive([outage])
    break_lexical_index(memory)
    result = alice.recall("outage", 5, record=False)
    assert result.fallback is not None
    assert [r.event.position for r in result.items] == [other]


def test_recall_no_longer_bumps_an_archived_memory(memory: Memory) -> None:
    alice = memory.agent("alice")
    outage = alice.observe("database outage", at=T0)
    alice.archive([outage])
    memory.ledger.append(
        NewEvent(
            stream="agent:alice",
            kind="memory.recalled",
            payload={
                "agent": "alice",
                "query": "q",
                "items": [{"position": outage, "score": 1}],
                "as_of": T0.isoformat(),
            },
        )
    )
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        row = conn.execute("SELECT recall_count, archived FROM salience").fetchone()
    assert row == (0, 1)


# -- the FAISS searcher -------------------------------------------------------------------------


def test_an_exact_index_removes_archived_vectors(memory: Memory) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 12)
    s = synced(memory)
    alice.archive(positions[:3])
    sync(memory, s)
    assert (s.size, s.tombstones) == (9, 0)
    assert sorted(served(memory, s, "note about the database")) == positions[3:]


def test_an_hnsw_index_tombstones_archived_vectors_then_rebuilds(memory: Memory) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 20)
    s = synced(memory, exact_limit=8)  # 20 vectors: HNSW
    assert (s.size, s.tombstones) == (20, 0)

    alice.archive(positions[:2])
    sync(memory, s)
    assert (s.size, s.tombstones) == (18, 2)
    # Asking for every live vector still finds them all past the tombstones.
    assert sorted(served(memory, s, "note 0 about the database", k=18)) == positions[2:]
    assert sorted(served(memory, s, "note 1 about the outage", k=50)) == positions[2:]

    alice.archive(positions[2:4])  # 4 of 20: not yet above a fifth
    sync(memory, s)
    assert (s.size, s.tombstones) == (16, 4)
    alice.archive([positions[4]])  # 5 of 20: rebuilt from the table
    sync(memory, s)
    assert (s.size, s.tombstones) == (15, 0)
    assert sorted(served(memory, s, "note about the plan")) == positions[5:]

    # Recall through the same searcher agrees.
    agent = AgentMemory("alice", memory.ledger, memory.engine, embedder=memory.embedder, searcher=s)
    found = agent.recall(
        "note 4 about the deploy", 30, paths=("semantic",), record=False, min_score=0
    )
    assert {r.event.position for r in found.items} == set(positions[5:])


def test_archiving_below_the_exact_limit_rebuilds_an_hnsw_index_as_exact(memory: Memory) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 10)
    s = synced(memory, exact_limit=8)
    alice.archive(positions[:5])
    sync(memory, s)
    assert (s.size, s.tombstones) == (5, 0)
    alice.archive([positions[5]])  # exact now: removed at once
    sync(memory, s)
    assert (s.size, s.tombstones) == (4, 0)
    assert sorted(served(memory, s, "note")) == positions[6:]


# -- the index file ---------------------------------------------------------------------------


@pytest.mark.parametrize("exact_limit", [8, 20_000], ids=["hnsw", "exact"])
def test_a_file_saved_after_archival_reloads_without_warning(
    memory: Memory, exact_limit: int
) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 20)
    s = synced(memory, exact_limit)
    alice.archive(positions[:3])
    sync(memory, s)
    s.save()
    fresh = synced(memory, exact_limit)  # warnings are errors
    hnsw = exact_limit == 8
    assert (fresh.size, fresh.tombstones) == (s.size, s.tombstones) == (17, 3 if hnsw else 0)
    assert sorted(served(memory, fresh, "note about the coffee")) == positions[3:]


@pytest.mark.parametrize("exact_limit", [8, 20_000], ids=["hnsw", "exact"])
def test_a_file_saved_before_a_later_archival_is_caught_up(
    memory: Memory, exact_limit: int
) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 20)
    s = synced(memory, exact_limit)
    alice.archive([positions[0]])
    sync(memory, s)
    s.save()
    alice.archive(positions[1:3])
    later = alice.observe("note 20 about the lunch", at=T0)
    fresh = synced(memory, exact_limit)  # warnings are errors
    hnsw = exact_limit == 8
    assert (fresh.size, fresh.tombstones) == (18, 3 if hnsw else 0)
    assert sorted(served(memory, fresh, "note about the lunch")) == [*positions[3:], later]
    fresh.save()
    again = synced(memory, exact_limit)
    assert (again.size, again.tombstones) == (fresh.size, fresh.tombstones)


def test_an_index_file_older_than_its_metadata_is_rebuilt_with_a_warning(
    memory: Memory,
) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 10)
    s = synced(memory)
    s.save()
    [index_path] = (memory.root / "store").glob("semantic.g*.faiss")
    old_index = index_path.read_bytes()
    # One removed, one added: the vector count is the same, the vectors are not.
    alice.archive([positions[0]])
    later = alice.observe("note 10 about the rollback", at=T0)
    sync(memory, s)
    s.save()
    index_path.write_bytes(old_index)  # as if the process died between the two renames
    fresh = searcher(memory)
    with pytest.warns(IndexFileWarning, match="lacks 1"), memory.engine.read() as conn:
        fresh.sync(conn)
    assert sorted(served(memory, fresh, "note")) == [*positions[1:], later]


@pytest.mark.parametrize(
    ("field", "value"), [("tombstones", 1), ("removed_through", 10_000), ("count", 3)]
)
def test_index_metadata_that_disagrees_with_the_tables_is_rebuilt_with_a_warning(
    memory: Memory, field: str, value: int
) -> None:
    alice = memory.agent("alice")
    positions = notes(alice, 20)
    s = synced(memory, exact_limit=8)
    alice.archive([positions[0]])
    sync(memory, s)
    s.save()
    [meta_path] = (memory.root / "store").glob("semantic.g*.json")
    meta = json.loads(meta_path.read_text())
    meta[field] = meta[field] + value
    meta_path.write_text(json.dumps(meta))
    fresh = searcher(memory, exact_limit=8)
    with pytest.warns(IndexFileWarning, match="holds"), memory.engine.read() as conn:
        fresh.sync(conn)
    assert (fresh.size, fresh.tombstones) == (19, 0)
    assert sorted(served(memory, fresh, "note")) == positions[1:]


# -- replay -----------------------------------------------------------------------------------


def test_rebuild_equals_incremental_with_archivals_and_stray_ones(memory: Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    positions: list[int] = []
    for i in range(24):
        who = alice if i % 3 else bob
        positions.append(who.observe(f"entry {i} {WORDS[i % len(WORDS)]}", at=T0))
        if i % 5 == 4:  # alice archives her latest, now and then after a catch-up
            if i % 2:
                memory.engine.catch_up()
            alice.archive([positions[-1] if i % 3 else positions[-2]])
    signal = memory.ledger.append(
        NewEvent(stream="room", kind="signal.sent", payload=SignalSent(to="*", topic="t"))
    )[0]
    head = memory.ledger.head()
    # Appended around the API: already archived, not a memory, not yet observed. Then an
    # observation and its archive, which a rebuild applies in one batch.
    stray = MemoryArchived(agent="alice", positions=[positions[4], signal, head + 4])
    memory.ledger.append(NewEvent(stream="agent:alice", kind="memory.archived", payload=stray))
    fresh = alice.observe("entry archived at once", at=T0)
    alice.archive([fresh])
    future = alice.observe("entry not archived by the stray event", at=T0)
    assert future == head + 4

    memory.engine.catch_up()
    incremental = {n: memory.engine.digest(n) for n in NAMES}
    memory.engine.rebuild(list(NAMES))
    assert {n: memory.engine.digest(n) for n in NAMES} == incremental
    one_by_one = ProjectionEngine(
        memory.ledger,
        memory.root / "other-store",
        [SalienceIndex(), LexicalIndex(), SemanticIndex(memory.embedder)],
        batch_size=1,
    )
    with one_by_one:
        one_by_one.catch_up()
        assert {n: one_by_one.digest(n) for n in NAMES} == incremental
        assert all(s.error is None for s in one_by_one.status())

    with memory.engine.read() as conn:
        archived = {r[0] for r in conn.execute("SELECT position FROM salience WHERE archived = 1")}
        removed = {r[0] for r in conn.execute("SELECT position FROM semantic_removed")}
        table = physical(ProjectionStore.live_generation(conn, "lexical") or 0, "lexical")
        live = f"SELECT rowid FROM {table} WHERE archived_us IS NULL"
        lexical = {r[0] for r in conn.execute(live)}
        vectors = {r[0] for r in conn.execute("SELECT position FROM semantic_vectors")}
    assert archived == removed
    assert future not in archived
    assert fresh in archived
    assert lexical == vectors == set(positions) - archived | {future}


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("positions", "reason", "error", "match"),
    [
        ([], None, QueryError, "non-empty"),
        ("1", None, QueryError, "non-empty sequence"),
        (["1"], None, QueryError, "ledger positions"),
        ([True], None, QueryError, "ledger positions"),
        ([0], None, QueryError, "ledger positions"),
        ([2**63], None, QueryError, "ledger positions"),
        (["mine", "mine"], None, QueryError, "must not repeat"),
        (["mine"], 5, QueryError, "reason"),
        (["signal"], None, UnknownMemoryError, r"holds a signal\.sent event, not a memory"),
        ([999], None, UnknownMemoryError, "position 999 holds no event"),
        (["mine", "bobs"], None, MemoryOwnerError, "archives only its own"),
        (["archived"], None, UnknownMemoryError, "archived already"),
    ],
    ids=[
        "empty",
        "str",
        "str-item",
        "bool",
        "zero",
        "too-large",
        "repeated",
        "bad-reason",
        "not-a-memory",
        "beyond-head",
        "another-agents",
        "already-archived",
    ],
)
def test_bad_archive_requests_are_refused_and_write_nothing(
    memory: Memory,
    positions: object,
    reason: object,
    error: type[Exception],
    match: str,
) -> None:
    alice = memory.agent("alice")
    known = {
        "mine": alice.observe("mine", at=T0),
        "bobs": memory.agent("bob").observe("bob's", at=T0),
        "archived": alice.observe("gone", at=T0),
        "signal": memory.ledger.append(
            NewEvent(stream="room", kind="signal.sent", payload=SignalSent(to="*", topic="t"))
        )[0],
    }
    alice.archive([known["archived"]])
    head = memory.ledger.head()
    if isinstance(positions, list):
        positions = [known.get(p, p) if isinstance(p, str) and p in known else p for p in positions]
    with pytest.raises(error, match=match):
        alice.archive(positions, reason=reason)  # type: ignore[arg-type]
    assert memory.ledger.head() == head


def test_the_payload_refuses_repeated_or_missing_positions(memory: Memory) -> None:
    for payload in (
        {"agent": "alice", "positions": [1, 1]},
        {"agent": "alice", "positions": []},
        {"agent": "alice", "positions": [0]},
    ):
        with pytest.raises(PayloadError, match="positions"):
            memory.ledger.append(NewEvent(stream="s", kind="memory.archived", payload=payload))
    assert memory.ledger.head() == 0


# -- the command line -------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_the_archive_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "cli.db")
    code, out, _ = run(capsys, "--ledger", db, "observe", "alice", "the database outage")
    assert code == 0
    outage = int(out.split()[3])
    code, out, _ = run(capsys, "--ledger", db, "observe", "alice", "the database rollback")
    rollback = int(out.split()[3])

    code, out, err = run(
        capsys, "--ledger", db, "archive", "--agent", "alice", str(outage), "--reason", "resolved"
    )
    assert (code, err) == (0, "")
    assert out == f"archived at position {rollback + 1} (memories {outage})\n"
    code, out, _ = run(
        capsys, "--ledger", db, "recall", "alice", "database", "--no-record", "--format", "json"
    )
    assert [item["position"] for item in json.loads(out)] == [rollback]

    code, out, err = run(capsys, "--ledger", db, "archive", "--agent", "alice", "999")
    assert (code, out) == (1, "")
    assert "engram archive: error: position 999 holds no event, not a memory" in err
    code, out, err = run(capsys, "--ledger", db, "archive", "--agent", "bob", str(rollback))
    assert (code, out) == (1, "")
    assert "archives only its own" in err
    code, out, err = run(capsys, "--ledger", db, "archive", "--agent", "alice", str(outage))
    assert code == 1
    assert "archived already" in err
