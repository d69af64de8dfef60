"""What the ninth memory probe found (ADR 0184): a first-person change replaces only the
memory of the thing it changes; a compound written apart is a copy, a misspelling beside it
too; an allowance is not asked as a sum of money; "turned ... down to" announces a change."""

from __future__ import annotations

import pytest
from detection_store import (
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.announcing import announced
from engram.agents.folding import folds
from engram.agents.speakers import changed_object, possessed_unsaid
from engram.agents.typed import MONEY, asked
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "I've put the manual lesson price up to £42 an hour from 1 March.",
            "We've changed the cancellation policy: 48 hours' notice or the lesson is charged.",
        ),
        (
            "We text every pupil a reminder the evening before their lesson.",
            "We moved the fuel cards over to Shell Fleet - the Allstar cards are cancelled.",
        ),
        ("Our PMR system is ProScript Connect.", "We no longer stock Viagra Connect."),
        (
            "We've migrated paging from PagerDuty to incident.io.",
            "We switched the status page over to Instatus in March.",
        ),
        # A copy: a compound written apart and a word misspelt.
        (
            "Croissant dough is laminated the evening before and rested over night.",
            "Croissant dough is laminated the evning before and rested overnight.",
        ),
    ],
)
def test_a_first_person_change_or_a_copy_replaces_nothing_else(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "The delivery van is parked in bay 3 behind the unit.",
            "We moved the van to bay 7 - bay 3 belongs to the landlord now.",
        ),
        ("Cold store is set to 4°C.", "We've turned the cold store down to 3°C."),
        ("Our standup is at 9:30 in the kitchen.", "We moved the standup to 10am."),
    ],
)
def test_a_first_person_change_replaces_the_thing_it_changes(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


def test_what_a_first_person_change_speaks_of() -> None:
    van = "The delivery van is parked in bay 3."
    assert changed_object("We moved the van to bay 7.", van) == ("van",)
    assert changed_object("We moved the minibus to bay 9.", van) == ()
    assert possessed_unsaid("We moved the fuel cards to Shell.", "We text every pupil.")
    assert not possessed_unsaid("We moved the standup to 10am.", "Our standup is at 9:30.")
    assert possessed_unsaid("We stock Viagra Connect no more.", "Our PMR system is Connect.")
    assert announced("We've turned the heating down to 18C.")


def test_compounds_written_apart_fold() -> None:
    one = "Croissant dough is laminated the evening before and rested overnight."
    apart = "Croissant dough is laminated the evening before and rested over night."
    assert folds(one, apart)
    assert folds(apart, one)
    assert not folds(
        "The night shift starts at ten sharp.", "The overnight shift starts at ten sharp."
    )


def test_an_allowance_or_a_budget_is_not_asked_as_a_sum() -> None:
    assert asked("What's the staff drink allowance?") is None
    assert asked("What is our error budget?") is None
    assert asked("What is the deposit for the hall?") is MONEY
    assert asked("How much is the night-shift allowance?") is MONEY  # "how much" asks it
