"""After a forget, nothing the projections hold or serve contains the subject's earlier text.

Random histories of observations (public and private), scars, reflections and recalls by
three agents, each personal text carrying a word no other event uses, with
``subject.forgotten`` events among them, are appended to a sealed ledger (ADR 0039) in
random chunks, the projections catching up after each. Then, for every forget of subject S at
position F, no row of any projection table, no lexical or semantic search result, and no
digest-covered state holds a word of S's events before F; every other event's word is
still found (the check can fail); and a rebuild from scratch gives the same digests.
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.ledger import KeyStore, Ledger, NewEvent, Sealer
from engram.ledger.catalog import (
    MemoryObserved,
    MemoryRecalled,
    MemoryReflected,
    ScarRecorded,
    SubjectForgotten,
)
from engram.projections import lexical
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.reflections import Reflections
from engram.projections.scars import ScarsTable
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.suggestions import SuggestionQueue

AGENTS = ("ana", "bo", "cy")
NAMES = ("lexical", "semantic", "scars", "reflections", "suggestions")
_T = datetime(2026, 5, 1, tzinfo=UTC)
_EVIDENCE = "00000000-0000-7000-8000-000000000001"

steps = st.lists(
    st.tuples(
        st.sampled_from(["observe", "observe", "private", "scar", "reflect", "recall", "forget"]),
        st.sampled_from(AGENTS),
    ),
    min_size=1,
    max_size=30,
)


def word(i: int) -> str:
    return f"zq{i}x"  # one token per event, in no other event, never stemmed together


def build(plan: list[tuple[str, str]]) -> tuple[list[NewEvent], dict[int, tuple[str, str]]]:
    """Return the events and, by position, (subject, word) of each personal text."""
    events: list[NewEvent] = []
    words: dict[int, tuple[str, str]] = {}
    for i, (step, agent) in enumerate(plan):
        w, position = word(i), i + 1
        payload: Any
        if step in ("observe", "private"):
            visibility = "private" if step == "private" else "public"
            payload = MemoryObserved(agent=agent, text=f"note {w}", visibility=visibility)
        elif step == "scar":
            payload = ScarRecorded(
                agent=agent, kind="failure", what=f"broke {w}", lesson=f"fix {w}", importance=5
            )
        elif step == "reflect":
            payload = MemoryReflected(
                agent=agent, text=f"belief {w}", evidence=[_EVIDENCE], depth=1
            )
        elif step == "recall":
            payload = MemoryRecalled(agent=agent, query=f"ask {w}", items=[], as_of=_T)
        else:
            payload = SubjectForgotten(subject=agent)
        if step != "forget":
            words[position] = (agent, w)
        events.append(NewEvent.of(payload, stream=f"agent:{agent}", actor=agent))
    return events, words


def table_text(engine: ProjectionEngine) -> str:
    with engine.read() as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return "\n".join(
            repr(row) for table in tables for row in conn.execute(f'SELECT * FROM "{table}"')
        )


def engine_for(ledger: Ledger, store: Path, embedder: HashEmbedder) -> ProjectionEngine:
    projections = [
        LexicalIndex(),
        SemanticIndex(embedder),
        ScarsTable(),
        Reflections(),
        SuggestionQueue(),
    ]
    return ProjectionEngine(ledger, store, projections)


@settings(max_examples=25)
@given(plan=steps, data=st.data())
def test_nothing_a_projection_holds_or_serves_keeps_a_forgotten_text(
    plan: list[tuple[str, str]], data: st.DataObject
) -> None:
    events, words = build(plan)
    forgets = [(i + 1, agent) for i, (step, agent) in enumerate(plan) if step == "forget"]
    gone = {
        w
        for position, (agent, w) in words.items()
        if any(agent == s and position < f for f, s in forgets)
    }
    recalls = {word(i) for i, (step, _) in enumerate(plan) if step == "recall"}
    kept = {w for _, w in words.values()} - gone - recalls  # no projection keeps a query
    embedder = HashEmbedder(dimension=32)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Ledger.open(
            str(root / "ledger.db"), durability="fast", sealer=Sealer(KeyStore(root / "keys.db"))
        ) as ledger:
            engine = engine_for(ledger, root / "store", embedder)
            try:
                start = 0
                while start < len(events):
                    size = data.draw(st.integers(1, 8), label="chunk")
                    for e in events[start : start + size]:  # one append per event: forget
                        if e.kind == "subject.forgotten":  # destroys the key first
                            ledger.forget(e.payload.subject)
                        else:
                            ledger.append(e)
                    engine.catch_up()
                    start += size
                state = table_text(engine)
                for w in gone:
                    assert w not in state, w
                for w in kept:
                    assert w in state, w  # the check sees what it looks for
                searcher = VectorSearcher(root / "store", 32, str(embedder.fingerprint))
                with engine.read() as conn:
                    searcher.sync(conn)
                    for agent in AGENTS:
                        for w in gone:
                            hits = lexical.search(conn, w, 5, agent=agent)
                            assert not [h for h in hits if w in h.text], (agent, w)
                        served = searcher.search(embedder.embed(["note"])[0], 100, agent=agent)
                        texts = lexical.texts(conn, [h.position for h in served])
                        assert not any(w in t for t in texts.values() for w in gone)
                incremental = {name: engine.digest(name) for name in NAMES}
                read = repr([e.payload for e in ledger.read()])
                assert not any(w in read for w in gone)
                assert all(w in read for w in kept | (recalls - gone))
            finally:
                engine.close()
            fresh = engine_for(ledger, root / "fresh", embedder)
            try:
                fresh.catch_up()
                assert {name: fresh.digest(name) for name in NAMES} == incremental
                assert not any(w in table_text(fresh) for w in gone)
            finally:
                fresh.close()
        ledger_bytes = (root / "ledger.db").read_bytes()
        assert not any(w.encode() in ledger_bytes for w in gone | kept)  # all sealed
        conn = sqlite3.connect(root / "keys.db")
        try:
            rows = conn.execute("SELECT subject FROM subject_keys WHERE key IS NOT NULL")
            live = {subject for (subject,) in rows}
        finally:
            conn.close()
    last_forget = {subject: position for position, subject in forgets}
    last_write: dict[str, int] = {}
    for position, (agent, _) in words.items():
        last_write[agent] = max(position, last_write.get(agent, 0))
    dead = {s for s, f in last_forget.items() if last_write.get(s, 0) < f}
    assert not live & dead  # a subject forgotten last holds no key
