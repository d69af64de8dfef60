"""Bloom over episode neighbours: the share rule, and the walk the lexical index makes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.agents import contiguity
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections import lexical
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import micros

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
GAP = contiguity.EPISODE_GAP_US


def test_bloom_gives_each_neighbour_a_share_falling_with_distance() -> None:
    fused = {10: 1.0, 20: 0.5}
    around = {10: [(9, 1), (11, 1), (12, 2)], 20: [(11, 1)]}
    out = contiguity.bloom(fused, around, share=0.3)
    assert out[10] == pytest.approx(1.0)
    assert out[9] == pytest.approx(0.3)
    assert out[11] == pytest.approx(0.3 + 0.15)  # cued by both seeds
    assert out[12] == pytest.approx(0.15)
    assert fused == {10: 1.0, 20: 0.5}  # the input is left alone
    assert contiguity.bloom(fused, {}) == fused


def test_seeds_are_the_strongest_candidates_newest_first_on_ties() -> None:
    assert contiguity.seeds({1: 0.2, 2: 0.9, 3: 0.2, 4: 0.5}, count=3) == [2, 4, 3]


def observed(agent: str, text: str, at: datetime, visibility: str = "public") -> NewEvent:
    payload = MemoryObserved(agent=agent, text=text, type="observation", visibility=visibility)
    return NewEvent(stream=f"agent:{agent}", kind="memory.observed", payload=payload, at=at)


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    ledger = Ledger.open(str(tmp_path / "ledger.db"), durability="fast")
    engine = ProjectionEngine(ledger, tmp_path / "store", [LexicalIndex()])
    yield ledger, engine
    engine.close()
    ledger.close()


def test_neighbours_walk_visible_items_within_the_episode(store) -> None:  # type: ignore[no-untyped-def]
    ledger, engine = store
    ledger.append(
        [
            observed("alice", "one", T0),
            observed("bob", "bob's secret", T0, visibility="private"),
            observed("alice", "two", T0 + timedelta(minutes=1)),
            observed("alice", "three", T0 + timedelta(minutes=2)),
            observed("alice", "next day", T0 + timedelta(days=1)),
        ]
    )
    ledger.append(
        NewEvent(
            stream="agent:alice",
            kind="memory.archived",
            payload=MemoryArchived(agent="alice", positions=[4]),
            at=T0 + timedelta(hours=1),
        )
    )
    engine.catch_up()
    with engine.read() as conn:
        near = lexical.neighbours(conn, [1, 3, 99], 2, agent="alice", gap_us=GAP)
        assert near == {1: [(3, 1)], 3: [(1, 1)]}  # bob's private item, the archived one and
        # the next day's are not walked to; a position the index lacks has no entry
        before = lexical.neighbours(
            conn, [3], 2, agent="alice", gap_us=GAP, as_of_us=micros(T0 + timedelta(minutes=30))
        )
        assert before == {3: [(1, 1), (4, 1)]}  # as of then, 4 was not archived yet
        assert lexical.neighbours(conn, [3], 2, agent="bob", gap_us=GAP) == {3: [(2, 1), (1, 2)]}
