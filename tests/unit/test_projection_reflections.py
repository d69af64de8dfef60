"""The reflections projection: provenance rows and trigger counters against references.

The references below recompute, straight from the history, what the projection keeps
incrementally: the counters since each agent's last reflection (every N visible memories;
the importance sum Generative Agents compares with 150) and each evidence id resolved to an
earlier observation or reflection. Histories come from tests/strategies.py, edge cases
included, appended and caught up in random batch sizes.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    HISTORY_START,
    memory_observed,
    memory_reflected,
    partitions,
    projection_histories,
    split,
)

from engram.agents.reflection import Triggers
from engram.config import resolve_settings
from engram.ledger import ConfigError, Ledger, NewEvent
from engram.ledger.catalog import MemoryObserved
from engram.projections import reflections
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.reflections import MISSING_IMPORTANCE, Evidence, Reflections

AGENTS = ("inner", "outer", "ünï", "stranger")  # "stranger" never observes nor reflects
KINDS = (
    "memory.observed",
    "memory.reflected",
    "memory.archived",
    "memory.recalled",
    "signal.sent",
)


@contextmanager
def engine_over(
    events: Sequence[NewEvent], sizes: Sequence[int] | None = None
) -> Iterator[tuple[Ledger, ProjectionEngine]]:
    """A fresh SQLite ledger holding ``events`` and an engine caught up after each append."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        Ledger.open(str(Path(tmp) / "ledger.db")) as ledger,
        ProjectionEngine(ledger, Path(tmp) / "store", [Reflections()]) as engine,
    ):
        for chunk in split(list(events), sizes or [len(events)]) if events else []:
            ledger.append(chunk)
            engine.catch_up()
        yield ledger, engine


def reference_state(events: Sequence[NewEvent], agent: str) -> tuple[int, int, int]:
    """(last reflection's position, visible memories since, their importance), recomputed."""
    mine = [
        i
        for i, e in enumerate(events, 1)
        if e.kind == "memory.reflected" and e.payload.agent == agent
    ]
    last = max(mine, default=0)
    seen = [
        e.payload
        for i, e in enumerate(events, 1)
        if i > last
        and e.kind == "memory.observed"
        and (e.payload.visibility == "public" or e.payload.agent == agent)
    ]
    importance = sum(MISSING_IMPORTANCE if p.importance is None else p.importance for p in seen)
    return last, len(seen), importance


def reference_evidence(events: Sequence[NewEvent]) -> dict[int, list[Evidence]]:
    """Each reflection's evidence resolved against the events before it, recomputed."""
    known: dict[str, tuple[int, int]] = {}
    out = {}
    for position, e in enumerate(events, 1):
        if e.kind == "memory.reflected":
            out[position] = [
                Evidence(i, id, *known.get(id, (None, None)))
                for i, id in enumerate(e.payload.evidence)
            ]
            known[str(e.id)] = (position, e.payload.depth)
        elif e.kind == "memory.observed":
            known[str(e.id)] = (position, 0)
    return out


@settings(max_examples=40)
@given(history=projection_histories(max_events=60, kinds=KINDS), data=st.data())
def test_trigger_counters_and_evidence_match_a_recomputation(
    history: list[NewEvent], data: st.DataObject
) -> None:
    sizes = data.draw(partitions(len(history)), label="appends")
    with engine_over(history, sizes) as (_, engine), engine.read() as conn:
        for agent in AGENTS:
            got = reflections.trigger_state(conn, agent)
            assert (got.last_position, got.visible, got.importance) == reference_state(
                history, agent
            ), agent
        expected = reference_evidence(history)
        assert {r.position for r in reflections.by_agent(conn)} == set(expected)
        for position, evidence in expected.items():
            assert reflections.evidence(conn, position) == evidence
        wrong = {p for p, _ in reflections.unsupported(conn)}
        for position, evidence in expected.items():
            depth = history[position - 1].payload.depth
            holds = all(e.position is not None for e in evidence) and depth == 1 + max(
                e.depth or 0 for e in evidence
            )
            assert (position not in wrong) == holds, position


@settings(max_examples=40)
@given(
    history=projection_histories(max_events=60, kinds=KINDS),
    every=st.integers(0, 12),
    importance=st.integers(0, 60),
)
def test_due_reaches_a_trigger_exactly_when_the_recomputed_counters_do(
    history: list[NewEvent], every: int, importance: int
) -> None:
    triggers = Triggers(every=every, importance=importance)
    with engine_over(history) as (_, engine), engine.read() as conn:
        for agent in AGENTS:
            _, visible, total = reference_state(history, agent)
            expected = (every > 0 and visible >= every) or (importance > 0 and total >= importance)
            assert triggers.due(reflections.trigger_state(conn, agent)) == expected


def test_importance_sum_reaches_150_and_a_reflection_resets_it() -> None:
    at = HISTORY_START
    triggers = Triggers(every=0, importance=150)
    # 29 memories of importance 5 are 145: not due; the 30th makes 150, as in Generative Agents.
    history = [memory_observed(f"note {i}", at + timedelta(minutes=i), 5) for i in range(29)]
    with engine_over(history) as (ledger, engine):
        with engine.read() as conn:
            state = reflections.trigger_state(conn, "inner")
            assert (state.last_position, state.visible, state.importance) == (0, 29, 145)
            assert not triggers.due(state)
        ledger.append(memory_observed("another agent's, public", at, 5, agent="outer"))
        private = MemoryObserved(agent="outer", text="secret", importance=10, visibility="private")
        ledger.append(NewEvent(stream="agent:outer", kind="memory.observed", payload=private))
        engine.catch_up()
        with engine.read() as conn:
            state = reflections.trigger_state(conn, "inner")
            assert (state.visible, state.importance) == (30, 150)  # the private one is unseen
            assert triggers.due(state)
            outer = reflections.trigger_state(conn, "outer")
            assert (outer.visible, outer.importance) == (31, 160)
        ids = [e.id for e in ledger.read(0, limit=3)]
        ledger.append(memory_reflected(ids, at + timedelta(hours=1)))
        ledger.append(memory_observed("after", at + timedelta(hours=2), None))
        engine.catch_up()
        with engine.read() as conn:
            state = reflections.trigger_state(conn, "inner")
            assert (state.last_position, state.visible) == (32, 1)
            assert state.importance == MISSING_IMPORTANCE  # stored without one
            assert not triggers.due(state)
            assert Triggers(every=1, importance=0).due(state)
            assert not Triggers(every=0, importance=0).due(state)  # both off: never due
            # outer's counters go on: inner's reflection is not outer's.
            assert reflections.trigger_state(conn, "outer").visible == 32


def test_the_reads_name_what_is_wrong() -> None:
    history = [memory_observed("the parser failed", HISTORY_START, 7)]
    with engine_over(history) as (ledger, engine):
        (observed,) = ledger.read(0)
        ledger.append(memory_reflected([observed.id], HISTORY_START, agent="inner"))
        engine.catch_up()
        with engine.read() as conn:
            (mine,) = reflections.by_agent(conn, "inner")
            assert reflections.by_id(conn, mine.id) == mine
            assert reflections.by_position(conn, mine.position) == mine
            assert reflections.by_position(conn, 1) is None
            assert reflections.by_id(conn, "nope") is None
            assert reflections.by_agent(conn, "outer") == []
            assert reflections.evidence(conn, mine.position) == [Evidence(0, observed.id, 1, 0)]
            assert reflections.unsupported(conn) == []
            with pytest.raises(QueryError, match="agent must be a non-empty string"):
                reflections.trigger_state(conn, "")
            with pytest.raises(QueryError, match="limit must be a positive int"):
                reflections.by_agent(conn, limit=0)
            with pytest.raises(QueryError, match="position must be a ledger position"):
                reflections.by_position(conn, 0)
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(str(Path(tmp) / "empty.db"))
        conn.execute("CREATE TABLE engram_generations (name TEXT, generation INT, state TEXT)")
        with pytest.raises(UnknownProjectionError, match="'reflections' is not in this store"):
            reflections.by_agent(conn)
        conn.close()


@pytest.mark.parametrize(
    ("every", "importance", "message"),
    [
        (-1, 150, "every must be an int >= 0"),
        (1.5, 150, "every must be an int >= 0"),
        (True, 150, "every must be an int >= 0"),
        (10, -1, "importance must be a finite number >= 0"),
        (10, float("nan"), "importance must be a finite number >= 0"),
        (10, float("inf"), "importance must be a finite number >= 0"),
        (10, "150", "importance must be a number >= 0"),
    ],
)
def test_triggers_refuse_bad_thresholds(every: object, importance: object, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        Triggers(every=every, importance=importance)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reflect_every": -1}, "reflect_every must be an int >= 0"),
        ({"reflect_every": 2.5}, "reflect_every must be an int >= 0"),
        ({"reflect_importance": -3}, "reflect_importance must be a number >= 0"),
        ({"reflect_importance": float("nan")}, "reflect_importance must be a number >= 0"),
    ],
)
def test_trigger_settings_are_checked(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings("ledger.db", config=os.devnull, **options)


def test_trigger_settings_default_to_generative_agents(tmp_path: Path) -> None:
    assert resolve_settings("l.db", config=os.devnull).reflect_importance == 150
    config = tmp_path / "engram.toml"
    config.write_text("reflect_every = 0\nreflect_importance = 90.5\n")
    settings = resolve_settings("l.db", config=str(config))
    assert (settings.reflect_every, settings.reflect_importance) == (0, 90.5)
    config.write_text('reflect_every = "ten"\n')
    with pytest.raises(ConfigError, match="reflect_every has the wrong type"):
        resolve_settings("l.db", config=str(config))
