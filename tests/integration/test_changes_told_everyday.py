"""Changes told in everyday words (ADR 0167): a thing or a person working again replaces
what told it out of action, however little else the two say alike; an amount put up or
down, a fixture rearranged, a change of plan announce a change; a word the store writes
capitalised inside a sentence is a name wherever it opens one; a hyphenated compound is the
same words written apart. And what stays apart: a rate fixed at a value, a thing cleaned
(no repair), an amount that is a maximum."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from detection_store import EMBEDDERS, FILLER, detecting, replaced

from engram.agents.announcing import announced, back_in_action
from engram.runtime import Memory

#: A supplier the notes name inside their sentences, in a dozen memories: a frequent word,
#: no rare one, but written as a name.
SUPPLIER = [
    f"The {thing} from Greenfields arrived {when}."
    for thing in ("veg box", "herb crate", "salad order", "fruit delivery")
    for when in ("late", "on time", "early")
]


@pytest.fixture(name="memory", params=EMBEDDERS)
def filled_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    with detecting(request.param, tmp_path, [*FILLER, *SUPPLIER]) as opened:
        yield opened


@pytest.mark.parametrize(
    "text",
    [
        "We've put the cat dental price up to £245.",
        "The AGM voted to put adult membership up to £135.",
        "We're up to 78 playing members after the junior open day.",
        "The Ashby fixture has been rearranged for 21 June.",
        "G-NSEA returned to service on 18 February, two days early.",
        "The heavy roller has been repaired and is back in use.",
        "The ice machine was fixed this morning, it needed a new pump.",
        "Change of plan: the summer holiday will be in Sicily, not Crete.",
        "Tariq Hassan is fit again and back on the roster from 3 March.",
        "The Saturday 23 May matinee is cancelled, the venue double booked.",
        "Group away day cancelled, the funding was pulled.",
    ],
)
def test_everyday_changes_are_announced(text: str) -> None:
    assert announced(text)


@pytest.mark.parametrize(
    "text",
    [
        "The mortgage rate was fixed at 4.2% for five years.",
        "Put the boxes up to the attic.",
        "The function room holds up to 40 people.",
        "The ice machine was cleaned this morning.",
    ],
)
def test_what_is_no_change_stays_unannounced(text: str) -> None:
    assert not announced(text)


def test_a_return_to_work_meets_only_what_was_out_of_action() -> None:
    fixed = "The ice machine was fixed this morning, it needed a new pump."
    assert back_in_action(fixed, "The ice machine is broken; an engineer is booked.")
    assert back_in_action(
        "Tariq Hassan is fit again and back on the roster from 3 March.",
        "Senior cabin crew member Tariq Hassan is on sick leave.",
    )
    assert back_in_action(
        "Bladder scanner back in service.",
        "The bladder scanner is broken and waiting for medical physics.",
    )
    assert not back_in_action(fixed, "The ice machine makes 20 kg of ice a day.")
    assert not back_in_action("The ice machine is broken.", "The ice machine was fixed.")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Working again, however little else the two say alike.
        (
            "The ice machine is broken; an engineer is booked for Thursday.",
            "The ice machine was fixed this morning, it needed a new pump.",
        ),
        (
            "The heavy roller is broken again.",
            "The heavy roller has been repaired and is back in use.",
        ),
        # An amount put up.
        (
            "Adult membership is £120 for the season.",
            "The AGM voted to put adult membership up to £135.",
        ),
        # A name the store writes inside its sentences, opening one; a compound written apart.
        (
            "Minimum order for free delivery from Greenfields is £150.",
            "Greenfields' free-delivery minimum has gone up to £200.",
        ),
    ],
)  # fmt: skip
def test_everyday_changes_replace_what_they_change(memory: Memory, old: str, new: str) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Back in action replaces only what told it out of action.
        ("The ice machine makes 20 kg of ice a day.", "The ice machine was fixed this morning."),
        # A frequent name opening a sentence of another attribute.
        (
            "Minimum order for free delivery from Greenfields is £150.",
            "Greenfields' van is a white Transit.",
        ),
    ],
)
def test_what_changes_nothing_replaces_nothing(memory: Memory, old: str, new: str) -> None:
    assert not replaced(memory, old, new)


def test_a_code_both_quote_names_what_two_unnamed_memories_speak_of(memory: Memory) -> None:
    # ADR 0170: no subject, no shared run of content words; the flight's code is shared.
    assert replaced(
        memory,
        "Flight NS412 departs Aberdeen at 06:50 on weekdays.",
        "From 30 March NS412 departs at 07:15.",
    )
    assert not replaced(
        memory,
        "Flight NS412 departs Aberdeen at 06:50 on weekdays.",
        "From 30 March NS418 departs at 07:15.",
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # ADR 0172: the same numbers told in other words, no change announced.
        (
            "18 rooms for the Hughes-Bamford wedding, arriving Fri 12 June.",
            "The Hughes-Bamford wedding party checks in 12 June with 18 rooms.",
        ),
        (
            "Costume fitting for Jess Tran: 12 April, 11am.",
            "Jess Tran needs a wig fitting on 12 April at 11am.",
        ),
    ],
)  # fmt: skip
def test_the_same_numbers_retold_replace_nothing(memory: Memory, old: str, new: str) -> None:
    assert not replaced(memory, old, new)


def test_one_value_said_anew_with_the_same_numbers_still_replaces(memory: Memory) -> None:
    old, new = "The 10k race is run by Sarah Kent.", "The 10k race is run by Mo Farrow."
    assert replaced(memory, old, new)
