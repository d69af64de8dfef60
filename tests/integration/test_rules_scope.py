"""Recall with scope="rules": the applied rules, matched by their words, as of a time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import engram
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_applied_rules_are_recalled_by_their_words_and_only_after_they_apply(
    memory: Memory,
) -> None:
    position = memory.scars("ops").record(
        "failure", "the migration locked the users table", "run migrations with a lock timeout"
    )
    (scar,) = memory.ledger.get([position])
    lessons = memory.lessons()
    proposed = lessons.propose([scar.id], "rules", "Run every migration with a lock timeout.")
    other = lessons.propose([scar.id], "rules", "Page the on-call before a schema change.")
    before = datetime.now(UTC)
    applied = lessons.apply(proposed, "ana")
    lessons.refuse(other, "ana")
    agent = memory.agent("planner")
    result = agent.recall("migration lock timeout", 3, scope="rules")
    assert [r.event.position for r in result.items] == [applied]
    assert result.items[0].event.payload.text == "Run every migration with a lock timeout."
    assert 0 < result.items[0].match <= 1
    assert result.recorded_at is not None
    everything = agent.recall("migration lock timeout", 5, scope="all", record=False)
    assert applied in [r.event.position for r in everything.items]
    assert agent.recall("migration lock timeout", 3, scope="rules", as_of=before).items == []
    assert agent.recall("schema change on-call", 3, scope="rules", record=False).items == []
