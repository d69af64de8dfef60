"""Changes said plainly that detection missed, and attributes it joined that were two
(ADR 0157): a time of day on either clock is one time; a common word opening its sentence
names an unnamed thing, and is no name where another memory writes it in lower case; "now"
inside what changed; a verb of state giving a value; what follows a copula in both is a
changed value; a word named by its code; labels and codes both quote are no attribute both
give; a day on one side only is another attribute."""

from __future__ import annotations

import pytest
from detection_store import (
    DAY,
    NOW,
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.folding import folds
from engram.projections.copies import digest, times_one_way
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("twelve", "twenty_four"),
    [
        ("Choir practice starts at 6:15pm.", "Choir practice starts at 18:15."),
        ("The ferry leaves at 7.30 p.m. on Sundays.", "The ferry leaves at 19:30 on Sundays."),
        ("Doors open at 9am.", "Doors open at 09:00."),
        ("The last bus is at 12:10 AM.", "The last bus is at 0:10."),
    ],
)
def test_a_time_of_day_on_either_clock_is_one_time(twelve: str, twenty_four: str) -> None:
    assert times_one_way(twelve) == times_one_way(twenty_four)
    assert digest(twelve) == digest(twenty_four)
    assert folds(twelve, twenty_four)
    # Another time is another value; a decimal, a ratio or a clock's seconds are no time.
    assert not folds("Doors open at 9am.", "Doors open at 10:00.")
    for kept in ("The ratio is 3:2.", "It weighs 7.30 kg.", "The lap took 1:30:00."):
        assert times_one_way(kept) == kept


def test_an_ordinal_before_a_day_in_digits_or_in_words_is_one_day() -> None:
    assert folds("Bins go out on the first Tuesday.", "Bins go out on the 1st Tuesday.")
    assert folds("Rent is due on the third of May.", "Rent is due on the 3rd of May.")
    assert not folds("Bins go out on the first Tuesday.", "Bins go out on the 2nd Tuesday.")
    assert not folds("At first the lift was slow.", "At 1 the lift was slow.")


def test_a_copy_on_the_other_clock_replaces_nothing(memory: Memory) -> None:
    assert not replaced(
        memory, "Choir practice starts at 6:15pm.", "Choir practice starts at 18:15."
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # "now" inside the phrase both memories name the thing by.
        ("The bakery opens at 7am on Saturdays.", "The bakery now opens at 8am on Saturdays."),
        ("The ferry carries 300 passengers.", "The ferry now carries 340 passengers."),
        # A copula in a clause of its own says nothing of the value.
        (
            "The arena seats 5,000 fans.",
            "After the east stand was rebuilt the arena now seats 6,200 fans.",
        ),
        # A verb of state gives the value, as a copula would ("tasting" is no tasting held).
        ("The tasting flight costs 18 euros.", "The tasting flight costs 22 euros."),
        # What follows the copula is the value a change gives, not a thing of its own.
        (
            "The vegetarian special is a leek risotto.",
            "The vegetarian special is now a lentil dal.",
        ),
    ],
)
def test_a_change_said_plainly_replaces(memory: Memory, old: str, new: str) -> None:
    assert replaced(memory, old, new)


def test_a_word_opening_many_notes_names_a_thing_by_its_code_or_none(memory: Memory) -> None:
    # Opening a dozen notes, "Allotment" and "Platform" are no rare words: the first names
    # an unnamed thing (found by the words both notes share), the second a thing by its code.
    ana = memory.agent("ana")
    for i in range(12):
        ana.observe(f"Allotment plot {i + 1} grows beans.", at=NOW - 200 * DAY + i * DAY)
        ana.observe(f"Platform {i + 1} has a clock.", at=NOW - 200 * DAY + i * DAY)
    assert replaced(
        memory, "Allotment rent is 40 pounds a year.", "Allotment rent went up to 48 pounds a year."
    )
    assert replaced(memory, "Platform 9B has 6 benches.", "Platform 9B now has 8 benches.")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The label names who is spoken of; diet and allergy are two attributes.
        ("Mrs Okafor in bed 4 is on a soft diet.", "Mrs Okafor in bed 4 is allergic to latex."),
        # The code names the platform; benches and lamps are two attributes.
        ("Platform 9B has 6 benches.", "The night lighting on Platform 9B has 4 lamps."),
        # A possessive's "s" is no word both name the thing by.
        (
            "The museum is run by the council's heritage team.",
            "The council's budget rose by 2 percent this year.",
        ),
        # Two jobs named by their own modifiers stay two, "now" or not.
        ("The nightly export job runs at 01:00.", "The weekly export job now runs at 03:00."),
        # Another platform's code is another platform.
        ("Platform 9B has 6 benches.", "Platform 4A now has 8 benches."),
        # Where a thing is, and when it happens: two attributes.
        (
            "Parish council meetings are held in the church hall.",
            "Parish council meets on the second Monday of each month.",
        ),
        # A word opening a note ("Bread") that the other writes in lower case is no name.
        (
            "The spare bread flour sacks were moved to the dry store.",
            "Bread is baked fresh at the back oven before opening.",
        ),
    ],
)
def test_a_label_a_code_or_a_modifier_both_name_joins_nothing(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)
