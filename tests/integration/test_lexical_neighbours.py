"""Bloom's walk: the episode neighbours read from the lexical index equal a plain walk."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
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
                    table = lexical.read._table(conn)
                    every = [
                        (int(p), a, v, t, int(o), None if x is None else int(x))
                        for p, a, v, t, o, x in conn.execute(
                            f"SELECT rowid, agent, visibility, type, observed_us, archived_us"
                            f" FROM {table} ORDER BY rowid"
                        )
                    ]
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
