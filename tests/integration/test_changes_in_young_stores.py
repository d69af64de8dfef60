"""Changes told in a young store, and in words detection did not read (ADR 0160): a store
of a few memories cannot tell a name from a topic by its rarity, so an opening word is read
as written; a subject opening both memories before a verb, a one-word role handed over, a
value from a day on ending its clause, a time of day however written, a label that drops
the old memory's modifier; and what stays apart: a role's words beside a thing's own name,
an amount's word before a number, a compound of prose."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from detection_store import EMBEDDERS, detecting, replaced

from engram.agents import holders, shapes
from engram.agents.announcing import announces
from engram.agents.candidacy import identifiers, same_format
from engram.agents.holders import opening_head
from engram.agents.statements import RARE, YOUNG, labels
from engram.runtime import Memory


@pytest.fixture(name="young", params=EMBEDDERS)
def young_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """A memory holding nothing before the two memories a test observes."""
    with detecting(request.param, tmp_path, []) as opened:
        yield opened


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A name opening both memories of a store of two.
        ("Alice lives in Paris.", "Alice moved to Berlin."),
        ("Kasia gets 3 pounds a week pocket money.", "Kasia's pocket money went up to 4 pounds."),
        # A common word opening both, before a verb.
        ("Grandma lives in Leeds.", "Grandma moved to York in May."),
        ("Previews begin on 3 March.", "Previews have been pushed back to 10 March."),
        ("The rent is 900 pounds a month.", "The rent went up to 950 pounds a month."),
        # A role of one word handed over.
        ("The treasurer is Sam Hill.", "Jo Parker took over as treasurer."),
        # A value from a day on, ending its clause.
        ("The cellar door opens at 11am.", "The cellar door opens at 10am from May."),
        # A label dropping the old memory's modifier.
        ("The office alarm code is 5820.", "Alarm code: 4471"),
        # A compound of a short part is one word ("Wi-Fi", "wifi"; ADR 0162).
        ("The Wi-Fi password is bruno2019.", "New wifi password: kestrel42"),
    ],
)
def test_a_change_in_a_young_store_replaces_what_it_changed(
    young: Memory, old: str, new: str
) -> None:
    assert replaced(young, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # "Since" names no one; "chefs" is no role whose holder the old memory gives.
        ("Head chef at Salt & Ember is Marco Bellini.", "Since Ravi left there are 5 chefs."),
        # A noun before another noun opens a compound: two things.
        ("Tennis lessons cost 10 pounds.", "Tennis club moved to Fridays."),
    ],
)
def test_what_only_reads_like_a_change_replaces_nothing(young: Memory, old: str, new: str) -> None:
    assert not replaced(young, old, new)


def test_a_time_of_day_however_written_gives_one_format() -> None:
    assert same_format(
        "From next week dinner service starts at 5:30pm.", "Dinner service starts at 6pm."
    )
    assert same_format("The bar closes at 23:00.", "The bar closes at 11pm.")


def test_young_is_where_a_word_two_memories_hold_can_first_be_rare() -> None:
    def idf(n: int, rows: int) -> float:
        return math.log((rows - n + 0.5) / (n + 0.5))

    assert idf(2, YOUNG) >= RARE > idf(2, YOUNG - 1)


@pytest.mark.parametrize(
    ("text", "announced"),
    [
        ("The cellar door opens at 10am from May.", True),
        ("Private check-up fee rises to 62 pounds from 1 April.", True),
        ("Harvest start pushed to 29 September.", True),
        ("Mr Gallagher retired at Easter.", True),
        ("Her crown fit was rebooked to 25 March.", True),
        ("The invoice from March is unpaid.", False),  # a day the thing is from
        ("Sheep graze from November to March.", False),  # a span
    ],
)
def test_a_change_said_in_these_words_is_announced(text: str, announced: bool) -> None:
    assert announces(text) is announced


def test_an_opening_subject_needs_a_verb_after_it() -> None:
    assert opening_head("Grandma moved to York.", "Grandma lives in Leeds.") == ("grandma",)
    assert opening_head("Previews have been pushed back.", "Previews begin on 3 March.") == (
        "preview",
    )
    assert opening_head("Tennis club moved to Fridays.", "Tennis lessons cost 10 pounds.") == ()


def test_an_amount_word_before_a_number_labels_nothing() -> None:
    assert labels("Since Ravi left there are only 5 chefs.") == frozenset()
    assert labels("Daily patient numbers are up to around 48.") == frozenset()
    assert labels("Ward 7 has around 20 beds.") == frozenset({"ward 7"})


def test_a_compound_of_prose_is_no_identifier() -> None:
    found = identifiers("The check-up and out-of-hours line, on-call; image-resizer and cart-api.")
    assert found == frozenset({"image-resizer", "cart-api"})


def test_a_one_word_role_is_held_only_where_the_old_memory_gives_just_its_holder() -> None:
    # "Okafor" is the hearing's own name, no holder given anew.
    assert (
        holders.held_role(
            "Okafor hearing postponed to 9 June.",
            "Counsel for the Okafor hearing is Rebecca Stone of Kings Chambers.",
        )
        == ()
    )
    assert holders.held_role("Jo Parker took over as treasurer.", "The treasurer is Sam Hill.") == (
        "treasurer",
    )
    assert (
        holders.held_role("Since Ravi left there are 5 chefs.", "Head chef is Marco Bellini.") == ()
    )


def test_a_change_of_an_attribute_named_after_a_possessive_leaves_another(young: Memory) -> None:
    # ADR 0162: "Kasia's dentist appointment was moved" says nothing of Kasia's school year.
    assert not replaced(
        young,
        "Kasia is in Year 2 at St Bride's Primary.",
        "Kasia's dentist appointment was moved to 17 March, same time.",
    )
    assert shapes.attribute_unsaid(
        "Kasia's dentist appointment was moved to 17 March.", "Kasia is in Year 2."
    )
    assert not shapes.attribute_unsaid(
        "Kasia's dentist appointment was moved to 17 March.",
        "Kasia's dentist appointment is on 3 March at 10am.",
    )


def test_the_value_a_change_gives_follows_only_a_short_subject() -> None:
    # ADR 0162: what follows the change word is the value only where the words before it
    # are the thing both name; a turn whose change word comes late names more before it.
    from engram.agents.candidacy import _Said

    def given(text: str, phrase: tuple[str, ...]) -> int | None:
        return _Said(text, True, frozenset()).given_after(phrase)

    vegan = "Vegan main changed to a harissa aubergine."
    assert given(vegan, ("vegan", "main")) == vegan.index("changed")
    late = "Nate: Yeah actually - I'm currently playing in the video game tournament."
    assert given(late, ("video", "game")) is None
