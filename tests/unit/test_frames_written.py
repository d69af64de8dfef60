"""What an agent saves: quotes by position kept apart from what it wrote (ADR 0046)."""

from __future__ import annotations

import msgspec

from engram.agents.frames import saved_frames, split_written


def test_quotes_keep_their_position_only_and_the_rest_is_notes() -> None:
    frames = {
        "episodic": [
            {"pos": 4, "type": "observation", "agent": "a", "at": "t", "text": "the ledger's"},
            {"pos": 5, "note": "mine, with a position"},
            {"step": "mine"},
        ],
        "scratchpad": "mine",
        "problem": {"query": "q", "task": "t", "extra": "mine"},
    }
    quoted, notes = split_written(frames)
    assert quoted == {"episodic": [{"pos": 4}]}
    written = msgspec.json.decode(notes)
    assert written == {
        "episodic": [{"pos": 5, "note": "mine, with a position"}, {"step": "mine"}],
        "scratchpad": "mine",
        "problem": {"extra": "mine"},
    }
    assert "the ledger's" not in notes
    assert saved_frames(quoted, notes) == {
        "episodic": [{"pos": 4}, {"pos": 5, "note": "mine, with a position"}, {"step": "mine"}],
        "scratchpad": "mine",
        "problem": {"extra": "mine"},
    }


def test_forgotten_notes_read_as_they_are() -> None:
    assert split_written({"episodic": [{"pos": 1, "text": "x"}]}) == (
        {"episodic": [{"pos": 1}]},
        "",
    )
    assert saved_frames({"episodic": [{"pos": 1}]}, "[forgotten]") == {
        "episodic": [{"pos": 1}],
        "notes": "[forgotten]",
    }
