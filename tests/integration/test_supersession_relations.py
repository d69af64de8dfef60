"""Where a subject lives or works, changed in other words than gave it (ADR 0154): the
relation's words say which attribute the named thing is the value of, under hash vectors as
under MiniLM; a time or another relation is no such value."""

from __future__ import annotations

import pytest
from detection_store import (
    DAY,
    NOW,
    detecting_memory,  # noqa: F401 (the memory fixture)
)

from engram.runtime import Memory


def _replaced(memory: Memory, old: list[str], new: str) -> list[str]:
    """Observe ``old`` ten days apart, then ``new``; return the old texts it replaced."""
    ana = memory.agent("ana")
    positions = {ana.observe(t, at=NOW - (60 - 10 * i) * DAY): t for i, t in enumerate(old)}
    second = ana.observe(new, at=NOW - 5 * DAY)
    return [
        positions[p]
        for e in memory.ledger.read(0, kinds=["memory.superseded"])
        if e.payload.position == second
        for p in e.payload.replaces
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Priya Natarajan lives in Leeds.", "Priya Natarajan relocated to Bristol in the spring."),
        ("Tomasz Wrobel has a home in Gdansk.", "Tomasz Wrobel moved back to Krakow."),
        ("Ines Duarte works for Lumen Analytics.",
         "Ines Duarte has started a new position at Harbour Freight."),
    ],
)  # fmt: skip
def test_a_relation_changed_in_other_words_replaces_what_gave_it(
    memory: Memory, old: str, new: str
) -> None:
    others = ["Priya Natarajan plays chess on Sundays.", "Ines Duarte drinks her coffee black."]
    assert _replaced(memory, [*others, old], new) == [old]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A time is no place: the review moved, not Priya.
        ("Priya Natarajan lives in Leeds.", "Priya Natarajan moved the review to Thursday."),
        # Where one lives is not where one works.
        ("Ines Duarte works for Lumen Analytics.", "Ines Duarte moved to Lisbon."),
    ],
)
def test_a_time_or_another_relation_replaces_nothing(memory: Memory, old: str, new: str) -> None:
    assert _replaced(memory, [old], new) == []
