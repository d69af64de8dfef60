"""Detection reads more ways of saying a change, and more ways of saying none (ADR 0126):
amounts that moved, values from a time on, a change word last, a key given anew; a value
held beside another ("also"), a plan's own start, and files named by relative paths."""

from __future__ import annotations

import pytest
from detection_store import (
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The flu vaccine stock is 140 doses.", "The flu vaccine stock is down to 35 doses."),
        ("A standard consultation costs 65 euros.", "A standard consultation went up to 72 euros."),
        ("The CI runner pool has 12 machines.", "We scaled the CI runner pool up to 20 machines."),
        ("The clinic closes at 6pm on Fridays.",
         "From this month the clinic closes at 4pm on Fridays."),
        ("The build agents run Python 3.9.", "The build agents are on Python 3.12 now."),
        ("The waiting room Wi-Fi password is Harbour2023.",
         "The waiting room Wi-Fi password was changed to Lantern-88."),
    ],
)  # fmt: skip
def test_a_change_said_in_other_words_replaces_the_old_value(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Mrs Adeyemi is allergic to penicillin.", "Mrs Adeyemi is also allergic to latex."),
        ("Dr. Patel works on Mondays and Wednesdays.",
         "Dr. Patel plans to add Friday sessions starting in June."),
        ("The file tests/dispatch/routing/planner.py.bak has a TODO about timezone handling.",
         "The file src/dispatch/manifest/planner.py has a TODO about timezone handling."),
        # A capitalised name and number before the copula names its own thing (class, bay).
        ("The Year 6 trip is to the science museum.", "The Year 4 trip is to the zoo."),
        ("The Bay 2 forklift is due for a service in May.",
         "The Bay 5 forklift is due for a service in July."),
        # Two homeworks of one class, each named by its own kind; two months' savings, one
        # of them for "the new laptop" (a thing named, not a value given anew).
        ("The Year 1 art homework this week is a poster due Tuesday.",
         "The Year 1 history homework this week is a short essay due Thursday."),
        ("Set aside $200 this month for a weekend away.",
         "Set aside $280 this month for the new laptop."),
        # A first-person word that reports or asks speaks of what it reports.
        ("Maya: I think Jonas is coming to the book club next week",
         "Maya: honestly my favourite book now is Piranesi"),
        ("Leo: sounds fun, tell me how the book club goes",
         "Leo: I started Spanish lessons with a tutor called Pilar"),
    ],
)  # fmt: skip
def test_a_value_beside_another_a_plan_or_another_file_replaces_nothing(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)
