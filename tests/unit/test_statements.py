"""What a memory states, as detection reads it (ADR 0109): counts are not labels, codes are
values and not things, a state's quoted values, and the kinds a value is replaced within."""

from __future__ import annotations

from engram.agents import holders, occurrences, shapes, speakers, statements
from engram.agents.matching import stem


def test_a_number_after_a_verb_or_a_plural_is_a_count_not_a_label() -> None:
    assert statements.labels("The report builder allows 250 requests per minute.") == frozenset()
    assert statements.labels("The pool holds 3 replicas.") == frozenset()
    # A singular noun and its number label an occurrence, -ss and -us included.
    assert statements.labels("We fixed the parser in round 26.") == {f"{stem('round')} 26"}
    assert statements.labels("The status 500 came back at pass 2.") == {
        f"{stem('status')} 500",
        f"{stem('pass')} 2",
    }


def test_a_quoted_code_labels_nothing() -> None:
    # "release 2.5.0" quotes a code: the "2" is not an occurrence numbered 2.
    assert statements.labels("The report builder is on release 2.5.0.") == frozenset()


def test_a_code_is_a_value_never_another_thing() -> None:
    # "eu west" and "ap south" are the codes' words, not two things' names.
    assert not holders.other_things(
        "We moved the audit log shipper over to eu-west-1.",
        "The audit log shipper lives in the ap-south-1 region.",
    )
    assert holders.other_things(
        "The rate limit on the billing exporter is 100 a minute.",
        "The rate limit on the report builder is 200 a minute.",
    )


def test_a_state_s_values_are_the_codes_after_its_copula() -> None:
    assert statements.state_values("The gateway is on release 3.1.0.", now=True) == {"3.1.0"}
    assert statements.state_values("The job now runs at 01:00 UTC.", now=True) == {"01:00"}
    assert statements.state_values("Build 3.1.0 is green.", now=True) == frozenset()
    # The past tense says a value, not what holds now.
    assert statements.state_values("It was upgraded to 2.4.1.", now=True) == frozenset()
    assert statements.state_values("It was upgraded to 2.4.1.") == {"2.4.1"}


def test_a_value_is_replaced_within_its_kind() -> None:
    ids, values = {"2.5.0"}, frozenset({"2.5.0"})
    old = "The gateway was upgraded to version 2.4.1-rc1."
    assert occurrences.same_occurrences(ids, frozenset(), old, False, values)
    later = "The gateway job now runs at 05:15 UTC."  # a time, stated as a state's value
    assert statements.state_values(later) == {"05:15"}
    assert not occurrences.same_occurrences(ids, frozenset(), later, False, values)
    assert not occurrences.same_occurrences({"05:15"}, frozenset(), "It is in eu-west-1.", True)
    # Without a change announced, codes beside the values must be the same.
    assert not occurrences.same_occurrences(
        {"he-85", "2.5.0"}, frozenset(), "HE-90 is on release 2.4.1.", False, values
    )


def test_two_things_named_by_the_same_words_with_their_own_modifiers_stay_apart() -> None:
    def apart(text: str, other: str, heads: bool = True) -> bool:
        words = statements.shared_phrase(text, other)
        return statements.modified_apart(text, other, words, heads=heads)

    nightly = "The nightly backup job is scheduled for 02:00 UTC."
    assert apart(nightly, "The weekly backup job is scheduled for 03:00 UTC.")
    assert apart("Nightly backup job runs at 02:00.", "Weekly backup job runs at 03:00.")
    # A verb before the words is no modifier; one side's modifier alone is no other thing.
    assert not apart("We moved the backup job to 04:00.", "The backup job runs at 02:00.")
    assert not apart(nightly, "The backup job now runs at 04:00 UTC.")
    # The words modifying another noun, right before a copula: a head of its own.
    canary = "The payments gateway canary is on release 3.2.0."
    assert apart(canary, "The payments gateway is on release 3.1.0.")
    assert not apart(canary, "The payments gateway is on release 3.1.0.", heads=False)
    # A name's words: the staging API and the production API.
    api = (stem("api"),)
    assert statements.modified_apart(
        "The staging API is on release 1.4.2.", "The production API is on release 1.3.9.", api
    )


def test_a_short_first_person_sentence_speaks_of_its_speaker() -> None:
    # ADR 0116: the speaker's label says whose "my" it is; a name before the pronoun, a
    # second sentence or a long sentence and it is not the speaker's one fact.
    assert speakers.first_person("I live in Lisbon.") == ""
    assert speakers.first_person("User: btw my new email is sam@reyes.dev") == "user"
    assert speakers.first_person("I switched dentists - my dentist is now Dr. Lindqvist.") == ""
    assert speakers.first_person("Mei Chen told me about the offsite.") is None
    assert speakers.first_person("The gateway is on release 2.5.0.") is None
    assert speakers.first_person("Jon: Thanks! I won't quit on my dreams.") is None
    assert speakers.first_person("I " + "really " * 20 + "like tea.") is None
    assert speakers.impersonal("User: I'm sure my email is new") == "sure email is new"


def test_a_possessive_first_person_gives_what_it_names() -> None:
    # ADR 0116: "my manager is ..." speaks of the speaker; "my car needs ..." of the car.
    assert speakers.first_person("User: my manager is Priya") == "user"
    assert speakers.first_person("Switched our internet provider to Sonic.") == ""
    assert speakers.first_person("My car needs new rear tyres soon.") is None
    assert speakers.first_person("My car had its timing belt replaced.") is None


def test_a_long_number_given_anew_is_an_id_not_a_value() -> None:
    # ADR 0123 (value_anew) with ADR 0122: a number of eight digits or more names a thing.
    assert shapes.value_anew("The open playtest has 500 slots.", "The open playtest has 200 slots.")
    assert not shapes.value_anew(
        "Pepper's microchip is 985112004317265.", "Pepper's microchip is 985112004317256."
    )


def test_a_class_s_homework_is_named_by_its_kind_and_a_new_thing_bought_is_no_change() -> None:
    # ADR 0126: in a store of weekly notes, "The Year 1 history homework ..." replaced "The
    # Year 1 art homework ...", and "Set aside $280 this month for the new laptop" replaced
    # the month's other savings ("new" read as a change).
    from engram.agents.candidacy import announces

    art = "The Year 1 art homework this week is a poster due Tuesday"
    history = "The Year 1 history homework this week is a short essay due Thursday"
    assert (statements.kind(art, "year"), statements.kind(history, "year")) == ("art", "history")
    assert statements.kinds_apart(history, art, "year")
    assert not announces("Set aside $280 this month for the new laptop")
    assert announces("My new email is ana@example.org")
    assert announces("The standup has a new time: 10:00")
    assert shapes.told_event("Set aside $280 this month for the new laptop")


def test_two_things_of_a_kind_named_by_their_modifiers_are_apart_under_a_many_valued_verb() -> None:
    # ADR 0132: the differing words modify one noun after "the": another flat, another store;
    # not under a copula, a relation held with one thing at a time, an indefinite article, or
    # a number given anew.
    flat = "Pike Plumbing handles repairs at the {} flat."
    assert shapes.instances_apart(flat.format("Canal Wharf"), flat.format("Heron Close"))
    assert shapes.instances_apart("Acme supplies our York store.", "Acme supplies our Leeds store.")
    assert not shapes.instances_apart(
        "Alice lives in the Tannery Court flat.", "Alice lives in the Mill Lane flat."
    )
    assert not shapes.instances_apart("Sam is on the Orion team.", "Sam is on the Atlas team.")
    assert not shapes.instances_apart("Farah drives a red Fiat.", "Farah drives a blue Fiat.")
    assert not shapes.instances_apart("The pool has 500 slots.", "The pool has 200 slots.")
    assert not shapes.instances_apart("Acme supplies the York store.", "Acme supplies York.")
    # The relations held one at a time are read as words, not stems (ADR 0143): "Site" is
    # no "sits", so two couples visited are two things.
    visit = "Site visit at Leeds Corn Exchange with the {} couple on 4 April."
    assert shapes.instances_apart(visit.format("Hughes"), visit.format("Kowalczyk"))
    assert not shapes.instances_apart(
        "Farah sat at the Birch Lane desk.", "Farah sat at the Elm Row desk."
    )


def test_a_name_quoted_after_a_noun_names_a_thing_and_after_a_copula_is_a_value() -> None:
    # ADR 0139.
    from engram.agents.quoted import names_apart, quoted_names

    assert quoted_names("The Japanese maple 'Bloodgood' costs 45 pounds.") == {"bloodgood"}
    assert quoted_names("The project \u201cBlue Harbour\u201d ships in May.") == {"blue harbour"}
    assert quoted_names("The wifi password is 'Harbour2023'.") == frozenset()
    assert quoted_names("We renamed the share to 'Lantern'.") == frozenset()
    assert names_apart("The maple 'Osakazuki' costs 60.", "The maple 'Bloodgood' costs 45.")
    assert not names_apart("The maple 'Bloodgood' costs 52.", "The maple 'Bloodgood' costs 45.")
    assert shapes.additive("The alarm was tested again on 7 April.")


def test_an_event_is_read_at_its_verb_after_a_subject_of_any_nouns() -> None:
    # ADR 0143: the verb follows the subject; a passive past is an event unless a value it
    # sets follows; a copula or a perfect tells a state; a participle after "the" describes.
    from engram.agents.candidacy import announces

    assert shapes.told_event("The Royal Society panel rejected the proposal from Dr Roberts.")
    assert shapes.told_event("Gemma Rhodes from Pinewood Studios attended the webinar.")
    assert shapes.told_event("'The Overstory' was returned damaged to Bertrams.")
    assert not shapes.told_event("The Glasgow site has enrolled 31 participants.")
    assert not shapes.told_event("The limit was set to 500.")
    assert not shapes.told_event("The rejected proposal is back with the panel.")
    assert not shapes.told_event("Truck FL-22 was transferred to the Riverside depot.")
    assert announces("Quillfeather's renewal date was pushed back to 31 July.")
    assert announces("Parts Direct raised the price of brake pads to 79 per set.")
    assert not announces("Monitor Rory Campbell visited the Exeter site and raised 12 findings.")
    assert not announces("Mrs Lowe requested a double period for 8A French.")
    assert announces("Emil Jansen got a new number: +351 21 555 0199.")
    assert shapes.recorded_occurrence("Tasting session with Velvet Linen on 4 April.")
    assert not shapes.recorded_occurrence("The tasting session is on 4 April.")
    assert shapes.many_valued("Sam is allergic to nuts.", "Sam is allergic to eggs.")
