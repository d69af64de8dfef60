"""A change told in ways detection missed, and copies that hid one (ADR 0155): a time the
value holds from opens the sentence; a one-word subject both sentences open with; a change
never folds with what it changed; a copy of a replaced memory is as stale as it."""

from __future__ import annotations

import pytest
from detection_store import (
    DAY,
    NOW,
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.folding import folds
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The parking fee is 4 pounds a day.", "From 1 May the parking fee is 5 pounds a day."),
        ("The kiln is out of action.", "The kiln is back in operation."),
        ("The hearing is on 9 October.", "The hearing was pushed back to 23 October."),
    ],
)
def test_a_change_told_from_a_day_or_of_a_one_word_subject_replaces(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


def test_a_span_of_days_or_another_opening_noun_replaces_nothing(memory: Memory) -> None:
    pool = "The pool is open to members."
    assert not replaced(memory, pool, "From 1 May to 9 May the pool is shut.")
    assert not replaced(memory, "The kiln is out of action.", "The glaze is back in stock.")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # "courier" beside "couriers" is no misspelling standing for the names.
        ("Our parcel courier is Parcelforce", "We changed parcel couriers to Yodel"),
        # The same words, and the second tells a change.
        ("Lift 2 in the east wing is out of service", "Lift 2 in the east wing is back in service"),
    ],
)
def test_a_change_never_folds_with_what_it_changed(a: str, b: str) -> None:
    assert not folds(a, b)
    assert folds("The kiln is back in operation", "The kiln is back in operation!")


def test_a_copy_of_a_replaced_memory_is_served_replaced(memory: Memory) -> None:
    ana = memory.agent("ana")
    old = ana.observe("The quartermaster is Lena Brandt.", at=NOW - 30 * DAY)
    copy = ana.observe("The quartermaster is Lena Brandt (noted at 10:40).", at=NOW - 29 * DAY)
    new = ana.observe("The quartermaster is Oskar Lind.", at=NOW - 5 * DAY)
    if not _says(memory, new, old):  # detection may have said it already
        ana.supersede(new, [old])
    items = ana.recall("Who is the quartermaster?", 5, record=False, min_score=0.0).items
    assert items[0].event.position == new
    stale = [r for r in items if {old, copy} & {r.event.position, *r.copy_positions}]
    assert stale  # the old value is findable ...
    assert all(r.replaced_by == new for r in stale)  # ... and never served as current


def _says(memory: Memory, new: int, old: int) -> bool:
    return any(
        e.payload.position == new and old in e.payload.replaces
        for e in memory.ledger.read(0, kinds=["memory.superseded"])
    )
