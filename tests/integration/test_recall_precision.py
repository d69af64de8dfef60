"""What a third probe written apart found in detection, folding and quoted ids (ADR 0119).

Each case failed before its fix: a copy with typos or a differently cased key taken for an
update, two attributes of one subject taken for one under hash vectors, a sentence's opening
verb taken for its subject, a compound modifier read as none, a memory served in two items,
a near-miss error code or path outranking the one a question quotes. Real SQLite stores, the
hash embedder.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import engram
from engram.agents import statements
from engram.agents.folding import retold
from engram.agents.memory import AgentMemory
from engram.agents.quoted import identifier, quoted_ids
from engram.projections import supersession
from engram.runtime import Memory

NOW = datetime.now(UTC).replace(microsecond=0)
DAY = timedelta(days=1)
FILLER = [
    f"{name} {verb}."
    for name in ("Bilal Haddad", "Chen Wei", "Dmitri Volkov", "Eva Lindqvist")
    for verb in ("keeps a vegetable garden", "collects old maps", "reads science fiction")
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def _filled(memory: Memory) -> AgentMemory:
    """Return ana's memory with :data:`FILLER` observed first, a day apart."""
    ana = memory.agent("ana")
    for i, text in enumerate(FILLER):
        ana.observe(text, at=NOW - 90 * DAY + i * DAY)
    return ana


def _capped(ana: AgentMemory, question: str, position: int) -> None:
    """Say that ``question`` is answered by nothing under the default floor, and with
    ``min_score=0`` by the memory at ``position`` first, capped at NO_VALUE (ADR 0120)."""
    from engram.agents.typed import NO_VALUE

    assert ana.recall(question, 5, record=False).items == []
    every = ana.recall(question, 5, record=False, min_score=0)
    assert every.items[0].event.position == position
    assert every.items[0].relevance <= NO_VALUE


def _replaced(memory: Memory, old: str, new: str) -> bool:
    """Observe ``old`` then, a month later, ``new``; say whether detection replaced it."""
    ana = _filled(memory)
    first = ana.observe(old, at=NOW - 40 * DAY)
    ana.observe(new, at=NOW - 10 * DAY)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        return any(first in s.replaces for s in supersession.in_force(conn, limit=100))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # Typos are no change of value.
        (
            "The kafka cluster has 12 brokers accross three AZs",
            "The Kafka cluster has 12 brokers across three AZs.",
        ),
        (
            "Customer Helga Jansen prefers to be contacted by phone, not emial.",
            "Customer Helga Jansen prefers to be contacted by phnoe, not email.",
        ),
        # A key written in both cases is another key when its case differs.
        (
            "Stripe customer cus_Nf8XkQ2pLm3z belongs to Brightline Analytics.",
            "Stripe customer cus_nf8XkQ2pLm3z switched to the annual plan.",
        ),
        # Two attributes of one subject that share no word, nor a change, nor a value's kind.
        (
            "Tomasz Nowak manages the platform team and sits in the Warsaw office.",
            "Tomasz Nowak's daughter plays the violin.",
        ),
        ("Globex Corp has 250 employees.", "Globex Corp's headquarters are in Chicago."),
        # "The old" is no change word; an identifier before a change must be the old one's.
        (
            "The flag enableNewCheckoutFlow is on for 10% of users.",
            "The flag enableNewCheckoutFlows is a leftover from the old experiment.",
        ),
        (
            "The flag enableNewCheckoutFlow is on for 10% of users.",
            "The flag enableLegacyCart was switched off for every user.",
        ),
        # One number written two ways is one value; one word, "e-mail" or "email".
        ("The Q2 marketing budget is $15,000.", "The Q2 marketing budget is $15k."),
        ("Contact Mei Chen by e-mail only.", "Contact Mei Chen by email only."),
        # Two named things said of in one template: each names one the other does not, and
        # they differ beyond the names (ADR 0122). They replaced each other by the thousand in
        # a store of notes written from templates.
        ("Parcel from John Lewis arriving Saturday.", "Parcel from Decathlon arriving Friday."),
        (
            "Booked Rhea a physio appointment for 12 April at 1:30pm.",
            "Booked Chloe a hairdresser appointment for 17 March at 1:30pm.",
        ),
        (
            "Churn risk flagged for VanArsdel: low usage since January.",
            "Churn risk flagged for Alpine Ski House: unhappy with pricing.",
        ),
        # A subject named with a title or a kind is named whole: two neighbours, two
        # projects (the title or the kind alone was taken for the subject).
        (
            "Mr Kapoor keeps our spare key under the doormat.",
            "Mr Okonkwo keeps our spare key under the doormat.",
        ),
        ("Project Harbor is deployed on bare metal.", "Project Quarry is deployed on bare metal."),
        # A name opening a clause is whom the clause speaks of.
        (
            "Note to self: Farid prefers texts over calls.",
            "Note to self: Chloe prefers texts over calls.",
        ),
        # An occurrence numbered before the change word is what the memory speaks of.
        (
            "Ticket #88412: customer cannot reset password from the mobile app.",
            "Ticket #88413: customer cannot change email from the mobile app.",
        ),
        # A hyphenated lowercase name is a service's, like an identifier, before a change
        # word too.
        ("image-resizer uses Postgres for storage.", "webhook-relay uses Postgres for storage."),
        (
            "Runbook for notification-worker: drain the node before restarting.",
            "Runbook for image-resizer: scale down the workers before migrating.",
        ),
    ],
)
def test_what_is_no_update_replaces_nothing(memory: Memory, old: str, new: str) -> None:
    assert not _replaced(memory, old, new)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # "Moved" opening the sentence was taken for its subject's name.
        (
            "The log shipper runs in the ap-south-1 region.",
            "Moved the log shipper over to eu-west-1.",
        ),
        # A setting's key is the identifier, its value what changes.
        (
            "LOG_RETENTION_DAYS=14 in the production env file.",
            "LOG_RETENTION_DAYS=30 in the production env file.",
        ),
        # Under hash vectors a name shared beyond the subject says they speak of one
        # attribute; "become" announces a change as "became" does.
        (
            "Priya Nair is a product manager at Stripe.",
            "Priya Nair is a director of engineering at Stripe.",
        ),
        (
            "Sofia Rossi works as an architect.",
            "Sofia Rossi gave up architecture to become a pastry chef.",
        ),
        ("Beatrice Hale plays the harp.", "Beatrice Hale gave up the harp for the saxophone."),
        # A name given in place of a name, and nothing else, is a value changed; so is one
        # said otherwise of a thing both name.
        ("Beatrice Hale lives in Lisbon.", "Beatrice Hale lives in Porto."),
        (
            "The Atlas search service is owned by Omar Said.",
            "Ownership of the Atlas search service passed to Lucia Ferro.",
        ),
        # An address's parts are the address's, no hyphenated name.
        (
            "Send Umbrella Health's invoices to finance@umbrellahealth.com.",
            "Umbrella Health asked us to send invoices to ap@umbrella-health.io from now on.",
        ),
        (
            "Mrs Abernathy keeps our spare key under the flower pot.",
            "Mrs Abernathy keeps our spare key under the garden gnome.",
        ),
        # An email for an email: the kind of value says which attribute changed, where the
        # words around it do not ("'s email is", "now uses").
        (
            "Sofia Rossi's email is sofia.r@gmail.com.",
            "Sofia Rossi now uses sofia.rossi@proton.me.",
        ),
    ],
)
def test_a_change_is_taken_where_its_evidence_is_said(memory: Memory, old: str, new: str) -> None:
    # (Also: "gave up ... for", a change phrase.)
    assert _replaced(memory, old, new)


def test_a_compound_modifier_keeps_two_things_apart() -> None:
    words = ("api",)
    assert statements.modified_apart(
        "The partner webhook API sends at most 50 events per second.",
        "The public API rate limit is 60 requests per minute.",
        words,
        heads=False,
    )
    assert not statements.modified_apart(
        "The public API rate limit is now 100 requests per minute.",
        "The public API rate limit is 60 requests per minute.",
        words,
        heads=False,
    )


def test_retold_is_the_same_text_but_for_misspellings() -> None:
    assert retold("contacted by phone, not emial", "contacted by phnoe, not email")
    assert not retold("contacted by phone", "contacted by email")
    # A code one character apart is another code, not a misspelling.
    assert not retold("The agent logs E_CONN_RESKT.", "The agent logs E_CONN_RESQT.")


def test_a_copy_is_served_in_one_item_and_never_replaced_by_itself(memory: Memory) -> None:
    ana = _filled(memory)
    texts = [
        "The Q2 marketing budget is $15,000.",
        "The Q2 marketing budget is $15000.",
        "The Q2 marketing budget is 15 000 dollars.",
        "The Q2 marketing budget is $15k.",
    ]
    positions = [ana.observe(t, at=NOW - (20 - i) * DAY) for i, t in enumerate(texts)]
    result = ana.recall("What is the Q2 marketing budget?", 10, record=False, min_score=0)
    stood_for = [p for r in result.items for p in r.copy_positions]
    assert len(stood_for) == len(set(stood_for))  # no memory in two items
    assert {*positions[:2], positions[3]} <= set(stood_for)
    for r in result.items:
        assert r.replaced_by not in r.copy_positions


def test_an_identifier_without_digits_is_quoted_and_singles_out_its_holder(
    memory: Memory,
) -> None:
    assert quoted_ids("what causes E_CONN_RESET in the sync agent?") == ("e_conn_reset",)
    assert quoted_ids("cus_Nf8XkQ2pLm3z") == ("cus_Nf8XkQ2pLm3z",)
    for prose in ("e.g.", "and/or", "follow-up", "U.S.", "Caroline"):
        assert not identifier(prose), prose
    for written in ("flow_log_retention_days", "hydrateCartSummary", "/etc/nginx/api.conf"):
        assert identifier(written), written
    ana = _filled(memory)
    holder = ana.observe(
        "The sync agent logs E_CONN_RESET when the corporate proxy drops idle connections.",
        at=NOW - 30 * DAY,
    )
    for i, near in enumerate(("E_CONN_RESETS", "E_CONN_RESKT", "E_CONN_REFUSED")):
        ana.observe(f"The sync agent logs {near} when the proxy blocks the host.", at=NOW - i * DAY)
    result = ana.recall("what causes E_CONN_RESET in the sync agent?", 5, record=False)
    assert result.items[0].event.position == holder
    assert result.items[0].relevance >= 0.5


def test_a_code_goes_on_through_a_joining_mark_and_a_key_keeps_its_case() -> None:
    from engram.agents.matching import holds, verbatim

    assert not verbatim("/etc/nginx/api.conf", "/etc/nginx/api.conf.bak enables gzip")
    assert verbatim("/etc/nginx/api.conf", "see /etc/nginx/api.conf. it sets gzip")
    assert not verbatim("e_conn_reset", "logs e_conn_reset_2 on a timeout")
    text = "Stripe customer cus_nf8XkQ2pLm3z switched"
    assert not holds("cus_Nf8XkQ2pLm3z", text, text.casefold())
    assert holds("cus_nf8XkQ2pLm3z", text, text.casefold())
    assert holds("inc0012345", "Ticket INC0012345 closed", "ticket inc0012345 closed")


def test_the_holder_of_a_quoted_key_or_path_comes_first(memory: Memory) -> None:
    ana = _filled(memory)
    key = ana.observe("Stripe customer cus_Nf8XkQ2pLm3z belongs to Brightline.", at=NOW - 9 * DAY)
    ana.observe("Stripe customer cus_nf8XkQ2pLm3z switched to the annual plan.", at=NOW - DAY)
    path = ana.observe("/etc/nginx/api.conf sets client_max_body_size to 25m.", at=NOW - 8 * DAY)
    ana.observe("/etc/nginx/api.conf.bak enables gzip for JSON responses.", at=NOW - DAY)
    for query, holder in (
        ("cus_Nf8XkQ2pLm3z", key),
        ("what does /etc/nginx/api.conf configure?", path),
    ):
        result = ana.recall(query, 5, record=False)
        assert result.items[0].event.position == holder, query


def test_the_holder_comes_first_where_the_question_s_other_words_are_a_near_id_s(
    memory: Memory,
) -> None:
    # The distractor held the question's other words ("Pepper's", "web app") and a near id,
    # and came first; a long number was no id at all (ADR 0122).
    assert quoted_ids("Is 985112004317256 Pepper's microchip?") == ("985112004317256",)
    assert quoted_ids("The budget is 15,000,000 and the year 2024") == ()
    ana = _filled(memory)
    chip = ana.observe("Biscuit's microchip number is 985112004317256.", at=NOW - 9 * DAY)
    near = ana.observe("Pepper's microchip number is 985112004317265.", at=NOW - 8 * DAY)
    ticket = ana.observe(
        "Ticket #88412: customer cannot reset password from the mobile app.", at=NOW - 7 * DAY
    )
    ana.observe("Ticket #88421: customer cannot reset password from the web app.", at=NOW - DAY)
    for query, holder in (
        ("Is 985112004317256 Pepper's microchip?", chip),
        ("customer can't reset the password from the web app: is that ticket #88412?", ticket),
    ):
        items = ana.recall(query, 5, record=False).items
        assert items[0].event.position == holder, query
    items = ana.recall("Is 985112004317256 Pepper's microchip?", 5, record=False).items
    assert near in [r.event.position for r in items]  # second, still served


def test_texts_quoting_other_ids_are_no_copies(memory: Memory) -> None:
    # Word for word one inside the other, but of two files: not one memory told twice.
    ana = _filled(memory)
    one = ana.observe(r"C:\ProgramData\Acme\dgent\config.yaml stores the updater channel.")
    two = ana.observe(r"C:\ProgramData\Acme\updater\config.yaml stores the updater channel.")
    result = ana.recall("Which config.yaml stores the updater channel?", 5, record=False)
    groups = {r.event.position: r.copy_positions for r in result.items}
    assert groups.get(one) == (one,)
    assert groups.get(two) == (two,)


def test_a_question_for_a_phone_number_is_answered_only_by_one_that_holds_a_number(
    memory: Memory,
) -> None:
    # ADR 0120: "What is Priya's phone number?" of a memory that holds Priya's city only.
    from engram.agents.typed import asked

    assert asked("What is Priya Raman's phone number?") is not None
    assert asked("Did she change her phone?") is None
    assert asked("Where is the IP team?") is None
    ana = _filled(memory)
    city = ana.observe("Priya Raman lives in Pune and works for the logistics team.")
    _capped(ana, "What is Priya Raman's phone number?", city)
    phone = ana.observe("Priya Raman's phone number is +91 98450 12345.")
    found = ana.recall("What is Priya Raman's phone number?", 5, record=False)
    assert [r.event.position for r in found.items][:1] == [phone]
    ip = ana.recall("What is the IP address of db-prod-07?", 5, record=False)
    assert ip.items == []


def test_a_question_of_one_numbered_thing_is_not_answered_by_another(memory: Memory) -> None:
    # ADR 0159: "Does Van 12 have a tail lift?" of a store that knows only Van 7's.
    from engram.agents.typed import Numbered, asked

    assert asked("Does Van 12 have a tail lift?") == Numbered("numbered thing", "van", "12")
    for plain in ("What did Caroline do in May 2023?", "How many beds does the ward have?"):
        assert asked(plain) is None  # a month, a count: nothing numbered
    ana = _filled(memory)
    seven = ana.observe("Van 7 has a tail lift fitted for the pallet runs.")
    _capped(ana, "Does Van 12 have a tail lift?", seven)
    found = ana.recall("Does Van 7 have a tail lift?", 5, record=False)
    assert [r.event.position for r in found.items][:1] == [seven]
    # A memory numbering no van is left as it is.
    lifts = ana.observe("Every van in the depot has a tail lift.")
    served = ana.recall("Does Van 12 have a tail lift?", 5, record=False)
    assert [r.event.position for r in served.items][:1] == [lifts]


@pytest.mark.parametrize(
    ("question", "sibling", "own"),
    [
        # ADR 0161: a thing lettered, a number before a name, a title, a name given to a kind.
        (
            "What did yields in Block A average last year?",
            "Yields in Block C averaged 6 tonnes per hectare last year.",
            "Yields in Block A averaged 5 tonnes per hectare last year.",
        ),
        (
            "When is completion on 16 Larch Avenue?",
            "Completion on 14 larch avenue is at 16:30 on Friday.",
            "Completion on 16 Larch Avenue is at noon on Monday.",
        ),
        (
            "Does Mr Patel need a double appointment?",
            "Mrs Patel needs a double appointment for her crown prep.",
            "Mr Patel needs a double appointment for his implant.",
        ),
        (
            "What is the estate value of the Whitcombe probate?",
            "The Denholm probate has an estate value of roughly 640,000 pounds.",
            "The Whitcombe probate has an estate value of about 210,000 pounds.",
        ),
    ],
)
def test_a_question_of_one_labelled_thing_is_not_answered_by_a_sibling(
    memory: Memory, question: str, sibling: str, own: str
) -> None:

    ana = _filled(memory)
    other = ana.observe(sibling)
    _capped(ana, question, other)
    mine = ana.observe(own)
    found = ana.recall(question, 5, record=False)
    assert [r.event.position for r in found.items][:1] == [mine]


def test_a_question_of_one_attribute_is_not_answered_by_another(memory: Memory) -> None:
    # ADR 0164: "When is Oscar Brennan's birthday?" was answered at 0.52 (hash) by "Oscar
    # Brennan's car is a black Ford Ranger.": the name was all the two shared.
    from engram.agents.typed import Attributed, asked

    assert asked("When is Oscar Brennan's birthday?") == Attributed("attribute", ("birthday",))
    assert asked("What's the plan?") is None  # a contraction, no possessive
    ana = _filled(memory)
    car = ana.observe("Oscar Brennan's car is a black Ford Ranger.")
    question = "When is Oscar Brennan's birthday?"
    _capped(ana, question, car)
    both = ana.observe("Oscar Brennan's van is white and his birthday is on 3 May.")
    found = ana.recall(question, 5, record=False)
    assert [r.event.position for r in found.items][:1] == [both]


def test_an_attribute_of_one_owner_is_not_answered_by_another_owner_s(memory: Memory) -> None:
    # ADR 0169: "What is Dr Hale's mobile number?" was answered at 0.49 (hash) by "Mrs
    # Okafor's mobile number is 07700 900312.": the attribute was all the two shared.
    from engram.agents.typed import Owned, owned

    assert owned("What is Dr Hale's mobile number?") == Owned(
        frozenset({"hale"}), ("mobil", "number")
    )
    assert owned("What is the account's carrier?") is None  # no name owns it
    ana = _filled(memory)
    theirs = ana.observe("Mrs Okafor's mobile number is 07700 900312.")
    question = "What is Dr Hale's mobile number?"
    _capped(ana, question, theirs)
    mine = ana.observe("Dr Hale's mobile number is 07700 900455.")
    found = ana.recall(question, 5, record=False)
    assert [r.event.position for r in found.items][:1] == [mine]
    # A memory naming the asked owner anywhere may answer: it is not capped.
    from engram.agents.typed import NO_VALUE

    both = ana.observe("Mrs Okafor's mobile number is 07700 900312, the one Dr Hale uses on call.")
    every = ana.recall(question, 5, record=False, min_score=0)
    (item,) = [r for r in every.items if r.event.position == both]
    assert item.relevance > NO_VALUE


def test_what_labels_a_thing_in_a_question() -> None:
    from engram.agents.typed import Numbered, asked

    assert asked("What rootstock is Block A on?") == Numbered("numbered thing", "block", "a")
    assert asked("When is completion on 16 Larch Avenue?") == Numbered(
        "numbered thing", "larch", "16", "before"
    )
    assert asked("Is Mrs. Patel in today?") == Numbered("numbered thing", "patel", "mrs", "title")
    assert asked("Who handles the Hartley divorce?") == Numbered(
        "numbered thing", "divorce", "hartley", "named"
    )
    # Not labels: a pronoun, an initial, a question word.
    for plain in ("Yesterday I went where?", "What J.K. Rowling quote does Tim like?"):
        assert asked(plain) is None, plain
    # A day is no label but the part of the week asked of (ADR 0177).
    from engram.agents.typed import Week

    assert asked("What happened on the Sunday before?") == Week(frozenset({"sunday"}))


def test_a_question_for_a_price_is_answered_only_by_a_memory_holding_a_sum(
    memory: Memory,
) -> None:
    # ADR 0131: "What is the parking fee at the Reno warehouse?" was answered at 0.52 by
    # "Reno warehouse cutoff is now 2pm", another fact of the same place.
    from engram.agents.typed import MONEY, Both, asked, same_kind

    # A sum asked of one named thing: a sum, and of that warehouse (ADR 0173).
    reno = asked("What is the parking fee at the Reno warehouse?")
    assert isinstance(reno, Both)
    assert reno.kind is MONEY
    assert reno.label.number == "reno"
    assert asked("How much did we pay for the forklift repair?") is MONEY
    assert asked("How much time does onboarding take?") is None
    assert not same_kind("Set aside $370 for car repairs", "Set aside $160 for a weekend away")
    ana = _filled(memory)
    cutoff = ana.observe("Reno warehouse cutoff for same-day orders is 2pm.")
    question = "What is the parking fee at the Reno warehouse?"
    _capped(ana, question, cutoff)
    fee = ana.observe("Parking at the Reno warehouse costs $12 a day.")
    assert [r.event.position for r in ana.recall(question, 5, record=False).items][:1] == [fee]
    # ADR 0139: an amount in other currency words is a sum too.
    from engram.agents.typed import MONEY

    assert all(MONEY.held(t) for t in ("12 quid a day", "350 kroner each", "40 zloty", "5 bucks"))
    assert not MONEY.held("12 crates a day")


def test_a_question_naming_money_but_asking_for_something_else_is_answered(
    memory: Memory,
) -> None:
    # ADR 0134: "When does Hannah Berg pay rent?" was taken for a question asking for a sum,
    # so its answer, which holds a day and no amount, was held at 0.025 and nothing served.
    from engram.agents.typed import MONEY, Both, asked

    for question in ("What does the course cost?", "What is Hannah Berg's monthly rent?",
                     "What fee does the clinic charge?", "What are the fees?"):  # fmt: skip
        found = asked(question)
        # An owner's attribute asked with it: a sum, and of that attribute (ADR 0176).
        assert (found.kind if isinstance(found, Both) else found) is MONEY, question
    for question in (
        "How are court fees paid?",
        "Is the late fee waived for the Kowalskis?",
        "Which department owns the cost centre?",
        "What is the rent day?",
    ):
        assert asked(question) is None, question
    ana = _filled(memory)
    rent = ana.observe("Hannah Berg pays rent on the 1st of each month.")
    order = ana.observe("Tenants at Oakfield Court pay their rent by standing order.")
    for question, answer in (("When does Hannah Berg pay rent?", rent),
                             ("How do tenants at Oakfield Court pay rent?", order)):  # fmt: skip
        served = ana.recall(question, 5, record=False).items
        assert [r.event.position for r in served][:1] == [answer], question


def test_values_of_one_kind_tell_which_attribute_two_texts_give() -> None:
    from engram.agents.candidacy import announces
    from engram.agents.typed import same_kind

    assert same_kind(
        "Nikos Pappas's phone number is +44 20 7946 0011.",
        "You can reach Nikos Pappas on +351 21 555 0199.",
    )
    assert not same_kind("Ana lives in Porto.", "Ana's phone is +351 21 555 0199.")
    assert not same_kind("Call +351 21 555 0199.", "Or call +351 21 555 0199 later.")  # one value
    # A phone number's digits may be a date's: only the exact kinds lower the bar.
    assert same_kind("Joined on 2024-05-01.", "Leaves on 2025-01-31.")
    assert not same_kind("Joined on 2024-05-01.", "Leaves on 2025-01-31.", exact=True)
    assert same_kind("mail a@b.io", "mail c@d.io", exact=True)
    assert announces("Beatrice gave up the harp for the saxophone.")
    assert announces("Emil sold the old car and bought a Fiat.")
    assert announces("These days Ximena prefers amber.")
    assert not announces("The flag is a leftover from the old experiment.")


def test_a_replaced_memory_holding_the_quoted_id_stays_first(memory: Memory) -> None:
    # ADR 0136: "What returned 0xA9B4DDBE?" served the memory that replaced its holder (it
    # took the holder's relevance) first; the holder asked about is served first, labelled.
    ana = _filled(memory)
    held = ana.observe("The nightly import on kiln-3 failed with 0xA9B4DDBE.", at=NOW - 9 * DAY)
    newer = ana.observe("The nightly import on kiln-3 now fails with 0x143A5F61.", at=NOW - 2 * DAY)
    served = ana.recall("What failed with 0xA9B4DDBE?", 5, record=False).items
    assert [r.event.position for r in served][:1] == [held]
    assert served[0].replaced_by == newer
    current = ana.recall("What does the nightly import on kiln-3 fail with?", 5, record=False)
    order = [r.event.position for r in current.items]
    assert order.index(newer) < order.index(held)


def test_a_sum_a_site_or_a_line_asked_in_other_words_is_asked_for(memory: Memory) -> None:
    # ADR 0148: "How much is the allowance?", "What is the club's website?" and "... direct
    # phone line?" ask for a value of a kind as plainly as the phrasings of ADR 0120/0131.
    from engram.agents.typed import MONEY, asked

    for question, kind in (
        ("How much is the night-shift allowance?", "sum of money"),
        ("How much are season tickets this year?", "sum of money"),
        ("What is the rowing club's website?", "web address"),
        ("What's the website for the spring fair?", "web address"),
        ("What is Omar Haddad's direct phone line?", "phone number"),
        ("What is the extension number of the stores?", "phone number"),
    ):
        found = asked(question)
        assert found is not None, question
        assert found.name == kind, question
    for question in ("How much time is left on the lease?", "Which website did we redesign?",
                     "What is the phone line policy?", "Who hosts the website?"):  # fmt: skip
        assert asked(question) is None, question
    assert asked("How much is the stipend?") is MONEY
    ana = _filled(memory)
    ana.observe("The night-shift allowance is paid with the monthly salary.")
    question = "How much is the night-shift allowance?"
    assert ana.recall(question, 5, record=False).items == []
    amount = ana.observe("The night-shift allowance is £40 a shift.")
    assert [r.event.position for r in ana.recall(question, 5, record=False).items][:1] == [amount]
