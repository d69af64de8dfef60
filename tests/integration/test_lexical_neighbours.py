"""Bloom's walk: the episode neighbours read from the lexical index equal a plain walk."""

from __future__ import annotations

import random
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import micros

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENTS = ("ana", "bob")
TYPES = ("observation", "plan", "thought")

rows = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(("public", "private")),
        st.sampled_from(TYPES),
        st.integers(0, 90),  # minutes after the row before
        st.booleans(),  # archived later
    ),
    min_size=1,
    max_size=40,
)


def _every_row(conn: sqlite3.Connection) -> list[tuple[int, str, str, str, int, int | None]]:
    """Return every row the index holds, in position order, as :func:`_walk` reads them."""
    table = lexical.read._table(conn)
    return [
        (int(p), a, v, t, int(o), None if x is None else int(x))
        for p, a, v, t, o, x in conn.execute(
            f"SELECT rowid, agent, visibility, type, observed_us, archived_us"
            f" FROM {table} ORDER BY rowid"
        )
    ]


def _walk(
    every: list[tuple[int, str, str, str, int, int | None]],
    position: int,
    radius: int,
    agent: str,
    gap_us: int,
    types: tuple[str, ...] | None,
    as_of_us: int | None,
) -> list[tuple[int, int]] | None:
    """The reference: every row read, filtered and walked in Python."""
    by_position = {row[0]: row for row in every}
    if position not in by_position:
        return None
    own = by_position[position][4]

    def shown(row: tuple[int, str, str, str, int, int | None]) -> bool:
        _, author, visibility, kind, observed, archived = row
        if visibility != "public" and author != agent:
            return False
        if types and kind not in types:
            return False
        if as_of_us is None:
            return archived is None
        return observed <= as_of_us and (archived is None or archived > as_of_us)

    near: list[tuple[int, int]] = []
    for side in (
        [r for r in reversed(every) if r[0] < position and shown(r)],
        [r for r in every if r[0] > position and shown(r)],
    ):
        for distance, row in enumerate(side[:radius], start=1):
            if abs(row[4] - own) > gap_us:
                break
            near.append((row[0], distance))
    return near


@settings(max_examples=30, deadline=None)
@given(
    rows=rows,
    radius=st.integers(0, 3),
    gap_minutes=st.sampled_from((5, 30, 120)),
    agent=st.sampled_from(AGENTS),
    types=st.sampled_from((None, ("observation",), ("plan", "thought"))),
    as_of_minutes=st.sampled_from((None, 0, 600, 10_000)),
)
def test_neighbours_equal_a_plain_walk_over_every_row(
    rows: list[tuple[str, str, str, int, bool]],
    radius: int,
    gap_minutes: int,
    agent: str,
    types: tuple[str, ...] | None,
    as_of_minutes: int | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        at = T0
        events = []
        for author, visibility, kind, minutes, _ in rows:
            at += timedelta(minutes=minutes)
            payload = MemoryObserved(
                agent=author,
                text=f"{author} {kind}",
                type=kind,  # type: ignore[arg-type]
                visibility=visibility,
            )  # type: ignore[arg-type]
            events.append(
                NewEvent(stream=f"agent:{author}", kind="memory.observed", payload=payload, at=at)
            )
        with Ledger.open(str(directory / "ledger.db"), default_registry()) as ledger:
            positions = ledger.append(events)
            for author in AGENTS:
                mine = [
                    p for p, row in zip(positions, rows, strict=True) if row[0] == author and row[4]
                ]
                if mine:
                    archival = MemoryArchived(agent=author, positions=mine, reason=None)
                    at += timedelta(minutes=30)
                    ledger.append(
                        NewEvent(
                            stream=f"agent:{author}",
                            kind="memory.archived",
                            payload=archival,
                            at=at,
                        )
                    )
            with ProjectionEngine(ledger, str(directory / "store"), [LexicalIndex()]) as engine:
                engine.catch_up()
                as_of_us = (
                    None if as_of_minutes is None else micros(T0 + timedelta(minutes=as_of_minutes))
                )
                gap_us = gap_minutes * 60_000_000
                with engine.read() as conn:
                    every = _every_row(conn)
                    asked = [*positions, 0, positions[-1] + 100]  # two the index does not hold
                    got = lexical.neighbours(
                        conn,
                        asked,
                        radius,
                        agent=agent,
                        gap_us=gap_us,
                        types=types,
                        as_of_us=as_of_us,
                    )
    for position in asked:
        want = _walk(every, position, radius, agent, gap_us, types, as_of_us)
        assert got.get(position) == want, position


def test_many_positions_read_in_chunks_equal_a_plain_walk(tmp_path: Path) -> None:
    """More positions than one statement reads (ADR 0096), runs of rows the agent may not
    see longer than the window, and a radius larger than the window's spare row."""
    rng = random.Random(96)
    events = []
    at = T0
    for i in range(700):
        author = AGENTS[0] if rng.random() < 0.4 else AGENTS[1]
        visibility = "private" if rng.random() < 0.5 else "public"
        kind = TYPES[i % 3]
        at += timedelta(minutes=rng.choice((1, 2, 40)))
        payload = MemoryObserved(
            agent=author,
            text=f"{author} {kind} {i}",
            type=kind,  # type: ignore[arg-type]
            visibility=visibility,  # type: ignore[arg-type]
        )
        stream = f"agent:{author}"
        events.append(NewEvent(stream=stream, kind="memory.observed", payload=payload, at=at))
    with Ledger.open(str(tmp_path / "ledger.db"), default_registry()) as ledger:
        positions = ledger.append(events)
        with ProjectionEngine(ledger, str(tmp_path / "store"), [LexicalIndex()]) as engine:
            engine.catch_up()
            with engine.read() as conn:
                every = _every_row(conn)
                for radius in (1, 2, 4):
                    got = lexical.neighbours(
                        conn, positions, radius, agent=AGENTS[0], gap_us=3_600_000_000
                    )
                    for position in positions:
                        want = _walk(every, position, radius, AGENTS[0], 3_600_000_000, None, None)
                        assert got.get(position) == want, (radius, position)


def test_a_negative_radius_is_refused(tmp_path: Path) -> None:
    with (
        Ledger.open(str(tmp_path / "ledger.db"), default_registry()) as ledger,
        ProjectionEngine(ledger, str(tmp_path / "store"), [LexicalIndex()]) as engine,
        engine.read() as conn,
        pytest.raises(QueryError, match="radius"),
    ):
        lexical.neighbours(conn, [1], -1, agent="ana", gap_us=1)
