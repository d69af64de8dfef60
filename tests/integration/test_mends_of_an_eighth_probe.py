"""What the eighth memory probe found (ADR 0182): a range of hours given for a time of day, a
number counting minutes or sharing a rate, an amount going up, a modifier said after a
preposition, a change told by its reporter's body; a thing said only as a time, an object
pronoun, another attribute of the speaker, a label numbering a thing and a question without
its mark replace nothing; a rate written three ways is one copy; a code holds no sum."""

from __future__ import annotations

from datetime import timedelta

import pytest
from detection_store import (
    NOW,
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents import holders, speakers
from engram.agents.announcing import announced
from engram.agents.statements import labels, modified_apart, statement
from engram.agents.typed import MONEY
from engram.agents.written import written
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A range of hours replaced by one of minutes: one kind of value.
        ("Kids' club runs Saturday 10-12.", "Kids' club is now 9:30-11:30 on Saturdays."),
        # The modifier said after a preposition in the change.
        (
            "Barrel hall keypad code is 4417.",
            "New keypad code for the barrel hall: 9052 (changed after the contractor visit).",
        ),
    ],
)
def test_a_change_written_otherwise_replaces_what_it_changes(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # The church asks, not "we": the speaker's rehearsals are not what it speaks of.
        (
            "The church asks us to stack all chairs in fives after rehearsal.",
            "From next week our rehearsals move to Thursday evenings - same time, same hall.",
        ),
        # Another attribute of the speaker ("our rehearsals" beside what "we" play).
        (
            "We're doing Sibelius 2 and the Elgar cello concerto in the spring.",
            "From next week our rehearsals move to Thursday evenings - same time, same hall.",
        ),
        # A label numbering the vessel is no holder whose name a change gives anew.
        (
            "The Glen Sannox is IMO 9794513.",
            "Glen Sannox dry docking moved to Dales Marine in Leith, same dates.",
        ),
        # Two questions asked without their marks state nothing.
        (
            "user: How can I keep my statement's voice consistent after revising it on June 12",
            "user: How can I keep in touch with Tanya during my first 3 months in Toronto",
        ),
    ],
)
def test_what_a_change_does_not_speak_of_stays_true(memory: Memory, old: str, new: str) -> None:
    assert not replaced(memory, old, new)


def test_what_detection_reads_of_numbers_times_and_modifiers() -> None:
    # A number counting a unit, and one after "per" or "till", labels nothing.
    assert labels("Inductions take 45 minutes.") == frozenset()
    assert labels("Business cards: £35 per 250, matt.") == frozenset()
    assert labels("Saturday opening: 9 till 1.") == frozenset()
    assert labels("Van 12 needs a new tyre.") == frozenset({"van 12"})
    assert announced("Day pass going up to £13.50 from 1 Sept, concessions £10.")
    assert not announced("We are going to the match on Saturday.")
    code = ("keypad", "cod")
    assert not modified_apart(
        "New keypad code for the barrel hall: 9052.", "Barrel hall keypad code is 4417.", code
    )
    assert modified_apart(
        "The office keypad code is 1234.", "Barrel hall keypad code is 4417.", code
    )


def test_who_and_what_a_statement_speaks_of() -> None:
    assert speakers.first_person("The church asks us to stack the chairs.") is None
    assert speakers.first_person("Priya hired me.") == ""
    assert speakers.possessed_unsaid(
        "Our rehearsals move to Thursdays.", "We're doing the Elgar in the spring."
    )
    assert not speakers.possessed_unsaid("My manager is now Priya.", "My manager is Tomasz.")
    assert (
        holders.held_role("Glen Sannox dry dock moved to Leith.", "The Glen Sannox is IMO 97.")
        == ()
    )
    assert holders.held_role("Jo Park took over as treasurer", "The treasurer is Sam Hill.")
    assert not statement("user: How can I balance my new job and my training")
    assert not statement("Should we move the standup")
    assert statement("We can meet at 10.")


def test_a_rate_written_three_ways_is_one_copy(memory: Memory) -> None:
    assert written("paid $28/hour") == written("paid $28 an hour") == written("paid $28 per hour")
    ana = memory.agent("ana")
    copies = [
        "Harvest casuals are paid $28 an hour, cash on Fridays.",
        "Harvest casuals are paid $28/hour, cash on Fridays",
        "harvest casuals are paid $28 per hour - cash on fridays.",
    ]
    held = [ana.observe(text, at=NOW - timedelta(days=20 - i)) for i, text in enumerate(copies)]
    items = ana.recall("How much are harvest casuals paid?", 10, record=False, min_score=0.0).items
    served = [r for r in items if r.event.position in held]
    assert len(served) == 1, [r.event.payload.text for r in served]
    assert served[0].copies == 3


def test_a_code_holds_no_sum_of_money() -> None:
    assert not MONEY.held("Gift voucher GV7K9M2P redeemed for a birthday party.")
    assert MONEY.held("Birthday parties are £15 per kid.")
    assert MONEY.held("It costs 20p.")
