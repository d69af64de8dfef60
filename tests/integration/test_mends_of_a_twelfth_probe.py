"""What the twelfth and thirteenth memory probes found (ADR 0187): a first-person change of
a thing named without a determiner ("We moved tastings to ...") speaks of that thing only; a
relative is another person than whose relative they are; two compounds of one head are two
things; a time of day given anew is one value; "it's 555-0199" names no attribute; and
copies written with day ranges, short dates, whole sums, rates per unit, "acct no" and
"re-" fold."""

from __future__ import annotations

import pytest
from detection_store import (
    DAY,
    NOW,
    detecting_memory,  # noqa: F401 (the memory fixture)
    replaced,
)

from engram.agents.folding import folds
from engram.agents.relations import relative_unsaid
from engram.agents.statements import modified_apart
from engram.runtime import Memory


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "We take a 25% deposit to secure the date; the balance is due 6 weeks before.",
            "We moved tastings to the tasting room at Brympton House.",
        ),
        (
            "We moved tastings to the tasting room at Brympton House.",
            "We switched linen to Celebration Linens in Taunton.",
        ),
        (
            "We have 12 spare Chromebooks for loans.",
            "We sold the old Smart boards to Techtrade, a refurbisher, for £600.",
        ),
        ("Kofi's mother lives in Kumasi, Ghana.", "Kofi and the family relocated to Roundhay."),
        (
            "Quickprint quote for programmes: £185 for 300.",
            "Quickprint quote for programmes: £185.00 for 300",
        ),
        # Who joins something takes no one's role; another thing owned is another thing.
        ("Priya leads the mobile team.", "Tom Baker joined the mobile team."),
        ("Raj owns the billing service.", "Hana owns the checkout service."),
        ("Hollybrook Vets opens at 8am.", "The partners sold Hollybrook Vets to IVC Evidensia."),
    ],
)
def test_what_a_memory_does_not_speak_of_is_not_replaced(
    memory: Memory, old: str, new: str
) -> None:
    assert not replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Tasha's phone number is 555-0101", "Tasha changed her number, it's 555-0199 now"),
        ("The helpdesk is staffed until 4:30pm.", "The helpdesk is staffed until 4pm."),
        ("Kofi's mother lives in Kumasi, Ghana.", "Kofi's mother moved to Accra in May."),
        ("We moved tastings to the tasting room.", "We moved tastings to Brympton House."),
        # A role handed over, its old holder named again or left by a clause of its own, and
        # a thing held as a role is (owned, led).
        (
            "The practice manager is Sandra Oakes.",
            "Kieran Doyle replaced Sandra Oakes as practice manager in March.",
        ),
        (
            "The volunteer coordinator is Priya Shah.",
            "Sam Okafor is our new volunteer coordinator; Priya stepped down.",
        ),
        ("Raj owns the billing service.", "Hana took over the billing service from Raj."),
        # A sale replaces who owned the thing sold, whoever is said to sell it.
        (
            "Hollybrook Vets is independently owned by Dr Soltani and Dr Whitlow.",
            "The partners sold Hollybrook Vets to IVC Evidensia; the sale completed on 1 April.",
        ),
    ],
)
def test_a_change_of_what_a_memory_speaks_of_replaces_it(
    memory: Memory, old: str, new: str
) -> None:
    assert replaced(memory, old, new)


def test_a_relative_is_another_person() -> None:
    assert relative_unsaid("Kofi's elderly mother lives in Kumasi.", "Kofi moved to Leeds.")
    assert not relative_unsaid("Kofi's mother lives in Kumasi.", "Kofi's mother moved.")
    # "my sister Ana" is Ana herself.
    assert not relative_unsaid("My sister Ana lives in Bristol.", "Ana moved to Leeds.")


def test_two_compounds_of_one_head_are_two_things() -> None:
    guest = "The guest wifi network is Gullhaven."
    staff = "The staff wifi network is called Ashcombe."
    assert modified_apart(guest, staff, ("wifi", "network"))
    assert not modified_apart("The new staff wifi network is X.", staff, ("wifi", "network"))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Connor is on paternity leave 10-24 March.",
            "Connor is on paternity leave from 10 to 24 March",
        ),
        ("Connor on paternity leave 10\u201324 Mar", "Connor paternity leave: 10th-24th March"),
        (
            "Top Table Hire deliver for the Smiths on 13 June at 2pm.",
            "Top Table Hire deliver for the Smiths 13/06 at 14:00",
        ),
        ("Rosie is on holiday 1-8 September.", "Rosie on hols 1-8 Sept"),
        ("Quickprint quote: £185 for 300.", "Quickprint quote: £185.00 for 300"),
        ("Shimano brake pads B01S cost £6.50 a pair.", "Shimano brake pads B01S cost £6.50/pair"),
        ("Covetrus account number 558-20417", "Covetrus acct no 558-20417"),
        ("Laptops to be returned for re-imaging", "Laptops to be returned for reimaging"),
    ],
)
def test_copies_written_otherwise_fold(a: str, b: str) -> None:
    assert folds(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # "24/7" is no date, two sums are two, and two day spans are two.
        ("Support is 24/7 for gold members", "Support is 24 July for gold members"),
        ("Quote: £185 for 300", "Quote: £185.50 for 300"),
        ("Rosie is on holiday 1-8 September", "Rosie is on holiday 1-9 September"),
    ],
)
def test_values_written_apart_do_not_fold(a: str, b: str) -> None:
    assert not folds(a, b)


#: Memories of one person, none of the attribute a change below gives anew.
KOFI = [
    "Kofi's daughter Ama is 9 and plays the violin.", "Kofi is a freelance wedding photographer.",
    "Kofi shoots on a Canon R6.", "Kofi's accountant is Helen Marsh.",
    "Kofi's self-assessment tax return is due on 31 January.", "Kofi is lactose intolerant.",
    "Kofi's mother lives in Kumasi, Ghana.", "Kofi calls his mother every Sunday afternoon.",
    "Kofi supports Leeds United and has a season ticket in the East Stand.",
    "Kofi and Efua's wedding anniversary is 8 May.", "Kofi edits everything in Lightroom.",
    "Kofi's studio is a rented unit in Kirkstall.", "Kofi's van is a white Vauxhall Vivaro.",
    "Kofi's brother Yaw lives in Toronto.", "Kofi's parkrun PB is 23:41.",
    "Kofi does parkrun at Temple Newsam on Saturday mornings.", "Kofi can't stand coriander.",
    "Kofi wants to visit Japan next spring.", "Kofi's camera gear is insured with Aaduki.",
    "Kofi charges £1,800 for a full-day wedding package.", "Kofi's shoe size is 10.",
    "Kofi backs up his photos to the Synology NAS every Friday.", "Kofi wears size 10 shoes.",
    "Kofi's mentor is the photographer Rachel Adu.", "Kofi's busiest months are June to September.",
    "Kofi is thinking about buying a drone for venue shots.", "Kofi's second shooter is Dan Hirst.",
    "Kofi's mobile number is 07700 900123.", "Kofi's broadband provider is Virgin Media.",
    "Kofi's second camera body is a Canon 6D.", "Kofi's shoe size is UK 10.",
    "Kofi and his family live on Otley Road in Headingley.",
    "Kofi's Adobe Photography plan costs £9.98 a month.",
    "Kofi prefers clients to email rather than call.",
]  # fmt: skip


def test_a_change_of_a_person_many_memories_name_is_found_by_what_it_says(
    memory: Memory,
) -> None:
    ana = memory.agent("ana")
    for i, text in enumerate(KOFI):
        ana.observe(text, at=NOW - 200 * DAY + i * DAY)
    # "Kofi" opens every memory of him and is written inside none: a name all the same, never
    # a word capitalised by its sentence (it took the mobile number for an unnamed thing's).
    assert replaced(
        memory, "Kofi's studio rent is £400 a month.", "Kofi's studio rent went up to £450 a month."
    )
    # The change of one thing of his leaves another thing of his (ADR 0187).
    assert not replaced(
        memory, "Kofi wants to redesign his website before autumn.",
        "Kofi switched his broadband to Zen Internet.",
    )  # fmt: skip
    mobile = next(e.position for e in memory.ledger.read(0) if "900123" in str(e.payload))
    new = ana.observe("Kofi has a new number: 07700 900456.", at=NOW - 5 * DAY)
    assert any(
        e.payload.position == new and mobile in e.payload.replaces
        for e in memory.ledger.read(0, kinds=["memory.superseded"])
    )
