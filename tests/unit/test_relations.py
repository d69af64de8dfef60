"""The relations detection reads a named value of (ADR 0154): a relation's word, a
preposition right after it, and a named thing that is no day or month."""

from __future__ import annotations

import pytest

from engram.agents.relations import same_relation


@pytest.mark.parametrize(
    ("text", "old"),
    [
        ("Noor relocated to Porto last week.", "Noor lives in Berlin."),
        ("Noor moved back to Lyon.", "Noor has an apartment in Oslo and lives there."),
        ("Noor took a job at Northwind Bank.", "Noor works for the Hooli Cloud team."),
        ("Noor left for a position at Acme.", "Noor is employed by Initech."),
    ],
)
def test_one_relation_with_a_named_thing_each(text: str, old: str) -> None:
    assert same_relation(text, old)


@pytest.mark.parametrize(
    ("text", "old"),
    [
        ("Noor moved the review to Thursday.", "Noor lives in Berlin."),  # a day
        ("Noor moved to Lisbon.", "Noor works for Initech."),  # two relations
        ("Noor works with Priya now.", "Noor works for Initech."),  # a colleague, not a place
        ("Noor moved house again.", "Noor lives in Berlin."),  # no named thing
        ("Noor lives in Berlin.", "Noor lives in a flat by the river."),  # none in the old one
        ("Noor moved all the spare chairs to Room Four.", "Noor lives in Berlin."),  # too far
    ],
)
def test_no_relation_with_a_named_thing_in_both(text: str, old: str) -> None:
    assert not same_relation(text, old)
