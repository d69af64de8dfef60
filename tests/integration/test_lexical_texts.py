"""The lexical index's texts, read from its content table (ADR 0096), are the texts the
FTS5 table serves: every row, archived ones included, and none for positions it lacks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_texts_equal_the_fts5_table_s_own(tmp_path: Path) -> None:
    accents = ("", "ünïcode ", "Zoë's café ")
    texts = [f"memory {i}: {accents[i % 3]}words {i * 31 % 17}" for i in range(1200)]
    events = [
        NewEvent(
            stream="agent:ana",
            kind="memory.observed",
            payload=MemoryObserved(agent="ana", text=text),
            at=T0 + timedelta(minutes=i),
        )
        for i, text in enumerate(texts)
    ]
    with Ledger.open(str(tmp_path / "ledger.db"), default_registry()) as ledger:
        positions = ledger.append(events)
        archival = MemoryArchived(agent="ana", positions=positions[::5], reason=None)
        ledger.append(NewEvent(stream="agent:ana", kind="memory.archived", payload=archival))
        with ProjectionEngine(ledger, str(tmp_path / "store"), [LexicalIndex()]) as engine:
            engine.catch_up()
            with engine.read() as conn:
                table = lexical.read._table(conn)
                served = dict(conn.execute(f"SELECT rowid, text FROM {table}"))
                asked = [*positions, 0, positions[-1] + 10]  # two the index does not hold
                got = lexical.texts(conn, asked)
    assert len(served) == len(texts)
    assert got == served
    assert [got[p] for p in positions] == texts
