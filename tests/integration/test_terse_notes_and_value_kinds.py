"""Notes written as a label and its value, and values of two kinds (ADR 0158): "Alarm code
5521" says what "The alarm code is 3307" said, anew; a noun naming the kind of value ("code",
"number") names nothing else; a phone number given anew of an unnamed thing replaces the
old; a count or a time beside a place or a name is another attribute; a possessive's "s"
parts no phrase."""

from __future__ import annotations

import pytest
from detection_store import (
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.matching import phrase_words, stem
from engram.agents.notes import as_stated
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("note", "stated"),
    [
        ("Alarm code 5521", "The alarm code is 5521."),
        ("Boiler service line: 0161 496 0777.", "The boiler service line is 0161 496 0777."),
        ("Guest wifi password: tern4421", "The guest wifi password is tern4421."),
        ("VPN host: 10.8.0.1", "The VPN host is 10.8.0.1."),
        ("Project code PX-40211", "The project code is PX-40211."),
    ],
)
def test_a_label_and_its_value_read_as_the_sentence_they_stand_for(note: str, stated: str) -> None:
    assert as_stated(note) == stated


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: I went hiking 2 days ago",  # a speaker's line
        "Dr Shah: back at 2pm",  # a speaker with a title
        "Room 214",  # a name by its number
        "We met at 10: a good talk",  # a sentence
        "The alarm code is 3307.",  # a sentence already
        "Agenda: budget, rota and the summer fair",  # a list of words, no value
    ],
)
def test_anything_else_is_read_as_written(text: str) -> None:
    assert as_stated(text) == text


def test_a_heading_is_read_past_not_as_a_label() -> None:
    # A heading names no attribute: read past (ADR 0178), never "The note is ...".
    assert as_stated("Note: ring the plumber") == "ring the plumber"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The alarm code is 3307.", "Alarm code 5521"),
        # The kind of value named on one side only.
        ("The loading bay code is 1148.", "Loading bay: 7720."),
        # A phone number of one thing given anew.
        ("The boiler service number is 0161 496 0123.", "Boiler service: 0161 496 0777."),
        # A possessive's "s" parts nothing.
        ("The caretaker's van is a white Transit.", "The caretaker's van is now a grey Vivaro."),
    ],
)
def test_a_value_given_anew_in_a_terse_note_or_a_possessive_replaces(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # When lunch is served beside where: two attributes.
        ("Lunch is served in the Orchard Room.", "Lunch is served from 12 to 2."),
        ("Tom Reyes is a trained first aider.", "The office has 4 trained first aiders."),
    ],
)
def test_a_count_or_a_time_beside_a_place_or_a_name_replaces_nothing(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)


def test_a_plural_of_ing_stems_as_its_singular() -> None:
    assert stem("dressings") == stem("dressing")
    assert stem("meetings") == stem("meeting") == stem("meet")
    assert stem("things") == stem("thing")


def test_a_word_and_its_particle_joined_by_a_hyphen_are_one_word(memory: Memory) -> None:
    assert phrase_words("Check-in now opens at 3pm") == ["checkin", "opens", "at", "3pm"]
    assert phrase_words("the on-call rota") == ["the", "oncall", "rota"]
    # Two words joined by a hyphen stay two: an identifier's (ADR 0122).
    assert phrase_words("the #payments-alerts channel") == ["the", "payments", "alerts", "channel"]
    assert replaced(memory, "Late check-in closes at 11pm.", "Late check-in now closes at 1am.")
