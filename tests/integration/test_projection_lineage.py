"""A projection store is tied to the ledger and the history it read (ADR 0124): a ledger
replaced under it, an older backup restored, or a PostgreSQL schema made again empties the
store, which is built again from the ledger; an ordinary reopen keeps it as it is."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from engram.agents.memory import AgentMemory
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import MemoryObserved
from engram.projections.copies import Copies
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import LINEAGE, ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher


def _opened(target: str, store: Path, **options: str) -> tuple[Ledger, ProjectionEngine]:
    ledger = Ledger.open(target, durability="fast", **options)
    embedder = HashEmbedder(dimension=64)
    projections = [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder), Copies()]
    return ledger, ProjectionEngine(ledger, store, projections)


def _memory(ledger: Ledger, engine: ProjectionEngine, store: Path) -> AgentMemory:
    embedder = HashEmbedder(dimension=64)
    searcher = VectorSearcher(store, embedder.dimension, str(embedder.fingerprint))
    return AgentMemory("ana", ledger, engine, embedder=embedder, searcher=searcher)


def _texts(memory: AgentMemory, query: str) -> list[str]:
    result = memory.recall(query, 20, record=False, min_score=0.0)
    return [i.event.payload.text for i in result.items]


def test_an_ordinary_reopen_keeps_the_store(tmp_path: Path) -> None:
    target, store = str(tmp_path / "ledger.db"), tmp_path / "store"
    ledger, engine = _opened(target, store)
    memory = _memory(ledger, engine, store)
    for i in range(5):
        memory.observe(f"the heron nests by pond {i}")
    engine.catch_up()
    engine.close()
    ledger.close()
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset is None
        with engine.read() as conn:
            assert {g.checkpoint for g in engine.store.generations(conn)} == {ledger.head()}
            assert engine.store.get(conn, LINEAGE).split(" ")[0] == str(ledger.head())
    finally:
        engine.close()
        ledger.close()


def test_an_older_backup_restored_empties_the_store_and_recall_serves_the_new_events(
    tmp_path: Path,
) -> None:
    target, store = str(tmp_path / "ledger.db"), tmp_path / "store"
    ledger, engine = _opened(target, store)
    memory = _memory(ledger, engine, store)
    for i in range(4):
        memory.observe(f"the early note {i} about herons")
    engine.catch_up()
    backup, source = sqlite3.connect(tmp_path / "backup.db"), sqlite3.connect(target)
    source.backup(backup)
    source.close()
    backup.close()
    for i in range(6):
        memory.observe(f"the lost note {i} about walruses")
    engine.catch_up()
    engine.close()
    ledger.close()
    for suffix in ("-wal", "-shm"):
        Path(target + suffix).unlink(missing_ok=True)
    shutil.copy(tmp_path / "backup.db", target)
    # The restored ledger grows past the positions the store read, with other events there.
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset is not None
        assert "past this ledger's head" in engine.reset
        memory = _memory(ledger, engine, store)
        for i in range(10):
            memory.observe(f"the new note {i} about penguins")
        assert sum("penguins" in t for t in _texts(memory, "new note about penguins")) == 10
        assert not any("walruses" in t for t in _texts(memory, "lost note about walruses"))
    finally:
        engine.close()
        ledger.close()
    # Reopened once the restored ledger is past the old store's reach: the same history.
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset is None
    finally:
        engine.close()
        ledger.close()


def test_another_history_at_the_positions_read_empties_the_store(tmp_path: Path) -> None:
    # The restored ledger grows past the store's reach with an event of its own at the
    # position the store read last: not the event the store read.
    target, store = str(tmp_path / "ledger.db"), tmp_path / "store"
    ledger, engine = _opened(target, store)
    memory = _memory(ledger, engine, store)
    memory.observe("the first note about cranes")
    engine.catch_up()
    ledger.close()
    shutil.copy(target, tmp_path / "one.db")
    ledger, engine2 = _opened(target, store)
    engine.close()
    memory = _memory(ledger, engine2, store)
    memory.observe("the second note about storks")
    engine2.catch_up()
    engine2.close()
    ledger.close()
    shutil.copy(tmp_path / "one.db", target)
    ledger = Ledger.open(target, durability="fast")
    ledger.append(NewEvent.of(MemoryObserved(agent="ana", text="a second note about ibises"),
                              stream="agent:ana", actor="ana"))  # fmt: skip
    ledger.close()
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset == "the event at position 2 is not the one it read"
        memory = _memory(ledger, engine, store)
        texts = _texts(memory, "second note")
        assert "a second note about ibises" in texts
        assert not any("storks" in t for t in texts)
    finally:
        engine.close()
        ledger.close()


def test_a_ledger_replaced_by_a_new_one_empties_the_store(tmp_path: Path) -> None:
    target, store = str(tmp_path / "ledger.db"), tmp_path / "store"
    ledger, engine = _opened(target, store)
    memory = _memory(ledger, engine, store)
    for i in range(8):
        memory.observe(f"the old ledger's note {i} about pelicans")
    engine.catch_up()
    engine.close()
    ledger.close()
    # A new ledger made elsewhere and moved in over the old file (another inode).
    fresh = Ledger.open(str(tmp_path / "fresh.db"), durability="fast")
    fresh.identity(create=True)
    fresh.close()
    for suffix in ("-wal", "-shm"):
        Path(target + suffix).unlink(missing_ok=True)
    Path(tmp_path / "fresh.db").replace(target)
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset is not None
        memory = _memory(ledger, engine, store)
        for i in range(10):
            memory.observe(f"the new ledger's note {i} about otters")
    finally:
        engine.close()
        ledger.close()
    ledger, engine = _opened(target, store)
    try:
        assert engine.reset is None  # the new ledger's own store by now
        memory = _memory(ledger, engine, store)
        assert not any("pelicans" in t for t in _texts(memory, "note about pelicans"))
        assert sum("otters" in t for t in _texts(memory, "note about otters")) == 10
    finally:
        engine.close()
        ledger.close()


@pytest.mark.postgres
def test_a_postgresql_schema_made_again_empties_the_store(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    store = tmp_path / "store"
    ledger, engine = _opened(pg_dsn, store, pg_schema=pg_schema)
    memory = _memory(ledger, engine, store)
    ledger.identity(create=True)
    for i in range(6):
        memory.observe(f"the first schema's note {i} about pelicans")
    engine.catch_up()
    engine.close()
    ledger.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(pg_schema)))
    ledger = Ledger.open(pg_dsn, durability="fast", pg_schema=pg_schema)
    ledger.identity(create=True)
    ledger.close()
    ledger, engine = _opened(pg_dsn, store, pg_schema=pg_schema)
    try:
        assert engine.reset is not None
        assert "not from this one" in engine.reset
        memory = _memory(ledger, engine, store)
        for i in range(8):
            memory.observe(f"the second schema's note {i} about otters")
        assert sum("otters" in t for t in _texts(memory, "note about otters")) == 8
        assert not any("pelicans" in t for t in _texts(memory, "note about pelicans"))
    finally:
        engine.close()
        ledger.close()


def test_a_ledger_restored_under_a_running_engine_is_caught_before_the_next_batch(
    tmp_path: Path,
) -> None:
    # ADR 0124: a process that keeps its engine open (a server, the daemon) over a ledger
    # restored from a backup applied the new events on top of the old history's rows, and
    # moved its record on past the evidence: another agent's private memories were then
    # served for the old positions' hits. The record is checked again before each catch-up.
    target, store = str(tmp_path / "ledger.db"), tmp_path / "store"
    ledger, engine = _opened(target, store)
    try:
        alice = _memory(ledger, engine, store)
        bob = AgentMemory("bob", ledger, engine, embedder=alice.embedder, searcher=alice.searcher)
        alice.observe("a baseline note about zebras")
        backup = sqlite3.connect(tmp_path / "backup.db")
        with sqlite3.connect(target) as live:
            live.backup(backup)
        live.close()
        for i in range(3):
            alice.observe(f"walrus migration notes part {i}")
        assert any("walrus" in t for t in _texts(alice, "walrus migration notes"))
        with sqlite3.connect(target) as live:
            backup.backup(live)  # restored while this engine stays open
        live.close()
        backup.close()
        for i in range(4):
            bob.observe(f"bob's private bank PIN is 90{i}1", visibility="private")
        texts = _texts(alice, "walrus migration notes")  # the first read finds it out
        assert engine.reset is not None
        assert not any("PIN" in t or "walrus" in t for t in texts)
        assert sum("PIN" in t for t in _texts(bob, "bank PIN")) == 4
    finally:
        engine.close()
        ledger.close()
