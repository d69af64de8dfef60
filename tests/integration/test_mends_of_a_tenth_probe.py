"""What the tenth memory probe found (ADR 0185): an hour written apart from its "am" is a
time; a date, a count after a verb and a value given "new" label nothing; a share and a sum
told without a change are two attributes, and so are counts of two things; a thing named
before its change word is what changed; a phone asked by one of its names is answered under
another; "WD-40" is "WD40"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from detection_store import (
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

import engram
from engram.agents.folding import folds
from engram.agents.memory import DEFAULT_MIN_SCORE
from engram.agents.occurrences import TIME_OF_DAY, spaced_times
from engram.agents.statements import labels
from engram.agents.typed import asked, measures_apart, owner
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Weekday service starts at 11 am.", "Weekday service now starts at 10:30 am."),
        (
            "A full groom for a large dog (over 60 lb) is $110.",
            "Starting June 1, large-dog full grooms go up to $125.",
        ),
    ],
)
def test_a_change_of_a_time_or_from_a_date_replaces_the_old_value(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Furnace is our 5.8% oatmeal stout.", "A pint of Furnace stout is £5.10."),
        (
            "Hiring the club's wax melter is £3 per weekend.",
            "Extractor hire is now £8 per weekend.",
        ),
        ("We have 3 bright tanks.", "We added two FVs in August, so we've got 8 fermenters now."),
    ],
)
def test_another_attribute_or_another_thing_is_not_replaced(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)


def test_what_labels_a_thing_and_what_is_a_time() -> None:
    assert labels("Showroom alarm has been reset, new code 8034.") == frozenset()
    assert labels("We added two FVs, so we've got 8 fermenters now.") == frozenset()
    assert labels("June 1, large-dog full grooms") == frozenset()
    assert labels("We moved the van to bay 7.") == {"bay 7"}  # a label still
    assert labels("Mr Davies in bed 12 is stable.") == {"bed 12"}
    assert spaced_times("Opens at 11 am, closes at 7 p.m.") == {"11am", "7pm"}
    assert spaced_times("Opens at 10:30 am.") == set()  # "10:30" is quoted already
    assert spaced_times("We sold 11 amps.") == set()
    assert TIME_OF_DAY.fullmatch("9.30am")
    assert not TIME_OF_DAY.fullmatch("2.5.0")


def test_a_share_and_a_sum_are_two_measures() -> None:
    assert measures_apart("Furnace is 5.8% ABV.", "A pint of Furnace is £5.10.")
    assert not measures_apart("The deposit is 25%.", "The deposit is 30%.")
    assert not measures_apart("A pint is £5.10.", "A pint is $6.")
    assert not measures_apart("Commission is 10% or £5.", "A pint is £5.10.")


def test_a_phone_asked_by_one_name_is_answered_under_another() -> None:
    cell = asked("What is Maria Delgado's cell number?")
    phone = asked("What is Maria Delgado's phone number?")
    landline = asked("What is the workshop's landline number?")
    assert cell is not None
    assert phone is not None
    assert landline is not None
    assert cell.held("Maria Delgado's cell is (720) 555-0143.")
    assert phone.held("Maria Delgado's mobile is 07700 900587.")
    assert not landline.held("Tom's mobile is 07951 230884.")  # a landline is another line
    assert not cell.held("Maria Delgado's car is a grey Golf.")  # no number at all
    assert owner("What's Siobhan Keane's mobile number?") == {"siobhan", "keane"}


def test_a_cell_number_question_is_served_above_the_floor(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        staff = memory.agent("staff")
        at = datetime(2026, 1, 2, tzinfo=UTC)
        for text in (
            "Maria Delgado's cell is (720) 555-0143.",
            "Tom's new mobile number is 07951 230884.",
            "The workshop alarm code is 2290.",
        ):
            staff.observe(text, at=at)
        found = staff.recall("What is Maria Delgado's cell number?", k=3, record=False)
    assert found.items, "the answer was floored out"
    assert found.items[0].event.payload.text.startswith("Maria Delgado's cell")
    assert found.items[0].score >= DEFAULT_MIN_SCORE


def test_a_code_written_with_a_hyphen_or_without_is_one_copy() -> None:
    assert folds("Never use WD40 on tuning pins!", "never use wd-40 on the tuning pins")
    assert not folds("Use WD-40 on hinges.", "Use WD-41 on hinges.")
