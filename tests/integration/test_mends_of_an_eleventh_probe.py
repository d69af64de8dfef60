"""What the eleventh memory probe found (ADR 0185): a sale to a named buyer speaks of the
thing sold and replaces who owned it; two error codes an acronym numbers are two things; a
price beside a memory giving no sum is another attribute; a rate ("$164/month") is a
quantity, and "dropped the reef display to 24°C" announces a change; "Weds", "the 1st
flight" and ".125" are copies of "Wednesday", "the first flight" and "0.125"; "how much
notice" asks for no sum of money."""

from __future__ import annotations

import pytest
from detection_store import (
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.announcing import announced
from engram.agents.folding import folds
from engram.agents.occurrences import _unquantified
from engram.agents.statements import labels
from engram.agents.typed import MONEY, asked
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "Ashworth Aero Engineering is owned by Tom Hadley.",
            "Tom Hadley sold Ashworth Aero Engineering to Skyworks MRO Ltd in July.",
        ),
        (
            "Basalt Bouldering is owned by Trevor and Amy Lind.",
            "Trevor and Amy Lind sold Basalt Bouldering to Cascade Climbing Group in August.",
        ),
        # A value dropped with its object between announces a change.
        (
            "The reef display runs at 25°C.",
            "We've dropped the reef display to 24°C to slow the algae.",
        ),
    ],
)
def test_a_sale_to_a_named_buyer_replaces_who_owned_the_thing(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The seller's own attributes stay: the sale speaks of the thing sold.
        (
            "Dana Brooks's mobile is 07700 900111.",
            "Dana Brooks sold Pawsh Mobile Grooming to Marcus Lee.",
        ),
        ("Dana Brooks lives in Denver.", "Dana Brooks sold her old van to Marcus Lee in July."),
        (
            "Pro Tools error AAE -9173 on the B rig is a clock problem; reseat the clock cable.",
            "Pro Tools error AAE -9128 means the buffer is too small; raise it to 1024.",
        ),
        (
            "Studio C is the mix room and isn't bookable for tracking.",
            "Studio C mix sessions are $85 an hour.",
        ),
    ],
)
def test_what_a_memory_does_not_speak_of_is_not_replaced(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)


def test_a_rate_is_a_quantity_and_a_value_dropped_is_announced() -> None:
    assert _unquantified({"164/month", "10x10", "28/hr"}) == {"10x10"}
    assert announced("We've dropped the reef display to 24°C to slow the algae.")
    assert not announced("We dropped the kids at school on the way in.")


def test_an_acronym_numbers_its_code() -> None:
    assert labels("Error AAE -9173 is a clock problem.") == {"aae 9173"}
    assert labels("The temperature dropped to -5 overnight.") == frozenset()


def test_days_ordinals_and_decimals_written_otherwise_are_copies() -> None:
    assert folds(
        "Test nitrate on all displays every Weds.", "Test nitrate on all displays every Wednesday."
    )
    assert folds(
        "Fuel drains must be done before the 1st flight of the day.",
        "Fuel drains must be done before the first flight of the day.",
    )
    assert folds("Bleed is .125 inch on all sides.", "Bleed is 0.125 inch on all sides.")
    assert not folds("Bleed is .125 inch on all sides.", "Bleed is 0.25 inch on all sides.")
    assert not folds("The 1st flight is at 9.", "The 2nd flight is at 9.")


def test_how_much_of_a_named_measure_asks_no_sum() -> None:
    assert asked("How much notice is needed to cancel a lesson and get a refund?") is None
    assert asked("How much time do we have before the fee applies?") is None
    assert asked("How much rent is due?") is MONEY
    assert asked("How much did I pay for the boiler?") is MONEY
