"""What an agent must not learn of another agent's private memories through recall.

Each case was found by probing recall as a second agent: the private text itself never
reached it, but a label or a score still told of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.context import build_context
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_a_private_replacement_is_not_told_to_another_agent(memory: Memory) -> None:
    alice, bob = memory.agent("alice"), memory.agent("bob")
    public = alice.observe("The vault door code is changed every month")
    private = alice.observe(
        "The vault door code is now 48213", visibility="private", supersedes=[public]
    )
    bob.observe("bob's note about lunch")
    (item,) = [i for i in bob.recall("vault door code", record=False).items]
    assert item.event.position == public
    assert item.replaced_by is None  # not the private memory's position
    own = alice.recall("vault door code", record=False).items
    assert [(i.event.position, i.replaced_by) for i in own][:2] == [
        (private, None),
        (public, private),
    ]  # its author still sees the replacement
    frames = build_context(bob, "vault door code", budget=800, save=False)
    assert "48213" not in json.dumps(frames.frames, default=str)
    assert "replaced_by" not in json.dumps(frames.frames, default=str)  # nor its position


def test_recall_scores_do_not_tell_which_names_another_agent_s_private_memories_hold(
    memory: Memory,
) -> None:
    # A question's names no memory holds lower its items (ADR 0090): counted over every row,
    # bob could test guesses against alice's private memory by the scores he gets back.
    alice, bob = memory.agent("alice"), memory.agent("bob")
    bob.observe("The layoffs list for next week was finalised by HR")
    alice.observe("Zoltan is on the layoffs list for next week", visibility="private")

    def top(name: str) -> tuple[int, float]:
        result = bob.recall(f"Is {name} on the layoffs list?", record=False, min_score=0.0)
        return len(bob.recall(f"Is {name} on the layoffs list?", record=False).items), max(
            i.score for i in result.items
        )

    held, unheld = top("Zoltan"), top("Marek")
    assert held[0] == unheld[0]  # served at the default floor alike
    assert held[1] == pytest.approx(unheld[1], rel=0.05)
    # alice's own recall still counts her memory's names
    assert alice.recall("Is Zoltan on the layoffs list?", record=False).items
