"""Folding compares content-word sets by their sizes first (ADR 0096): it folds exactly
what the rule of ADR 0052 (:func:`engram.agents.folding._same`) folds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.folding import Folder, _content, _same

words = st.frozensets(st.sampled_from("abcdefghij"), max_size=8)


@settings(max_examples=300, deadline=None)
@given(kept=st.lists(words.filter(bool), max_size=8), mine=words)
def test_the_first_kept_set_it_folds_into_is_the_rule_s(
    kept: list[frozenset[str]], mine: frozenset[str]
) -> None:
    folder = Folder({}, None)
    folder.words = [(q, theirs, len(theirs)) for q, theirs in enumerate(kept, start=1)]
    want = next((q for q, theirs in enumerate(kept, start=1) if _same(mine, theirs)), None)
    assert folder._into(None, mine) == (want if len(mine) >= 2 else None)


def test_the_sizes_that_allow_a_fold() -> None:
    folder = Folder({}, None)
    three, four, five = frozenset("abc"), frozenset("abcd"), frozenset("abcde")
    folder.words = [(1, five, 5), (2, four, 4)]
    assert folder._into(None, three) == 2  # 3 of 5 is under three quarters; 3 of 4 is not
    assert folder._into(None, frozenset("ab")) is None  # two words fold only into equals
    assert folder._into(None, frozenset("abcdef")) == 1  # six hold the kept five: 5 >= 4.5
    assert folder._into(None, frozenset("abcdefg")) is None  # seven: 5 < 5.25


# Words whose stems are prefixes of one another and of other words, in both cases, with
# function words, fillers and a non-ASCII word: what the test of a text before its split
# must never mistake.
_WORDS = st.sampled_from(
    ["live", "lives", "living", "lived", "liver", "Cat", "cats", "catalog", "the", "note",
     "Berlin", "berl", "run", "runs", "rune", "e", "ee", "İstanbul", "café", "go", "goes",
     # and words the texts are written anew by before their split (ADR 0147): a text may
     # fold only as written anew ("10 mins" into "10 minutes").
     "mins", "minutes", "twenty", "20", "Doctor", "Dr", "5", "November", "Nov", "every",
     "each", "5pm", "ſecond"]
)  # fmt: skip
_TEXTS = st.lists(_WORDS, max_size=9).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(kept=st.lists(_TEXTS, max_size=6), later=st.lists(_TEXTS, min_size=1, max_size=6))
def test_a_later_candidate_folds_where_its_split_text_would(
    kept: list[str], later: list[str]
) -> None:
    """``finish`` splits a text only where a fold by content is possible (ADR 0103): each
    later candidate folds into what its content words, split, fold it into."""
    texts = dict(enumerate([*kept, *later], start=1))
    folder = Folder({}, None)
    folder.texts = texts
    for p in range(1, len(kept) + 1):
        folder.add(p)
    for p in range(len(kept) + 1, len(texts) + 1):
        # As the split text folds it, its ids and negations read ("5pm" is a time's value).
        assert folder._later(p) == folder._into(None, _content(texts[p]), texts[p]), texts[p]


def test_a_copy_with_one_misspelt_word_folds_and_two_values_do_not() -> None:
    # ADR 0117: "rasies" is "raises" misspelt (stemmed, "ras" and "rais": compared as
    # spelt); "2.4" and "2.5" are two values; "jonas" and "jonah" two names (one letter
    # changed in a word under six letters).
    folder = Folder({}, None)
    said = "The physio told me to do calf raises twice a day."
    folder.words = [(1, _content(said), len(_content(said)))]
    folder.spelt = {1: said}
    typo = "The physio told me to do calf rasies twice a day."
    assert folder._into(None, _content(typo), typo) == 1
    assert folder._into(None, _content(typo)) is None  # without its text, stems alone
    two = "The physoi told me to do calf rasies twice a day."
    assert folder._into(None, _content(two), two) is None  # two misspelt: not one copy
    for a, b, same in (
        ("Mr. Henderson is my landlord.", "Mr. Hnederson is my landlord.", True),
        ("Tyre pressure is 2.4 bar.", "Tyre pressure is 2.5 bar.", False),
        ("Jonas plays the cello.", "Jonah plays the cello.", False),
    ):
        assert _same(_content(a), _content(b), a, b) is same


def test_a_number_s_digit_groups_join_and_an_opaque_key_keeps_its_case() -> None:
    from engram.projections.copies import normalise

    assert normalise("Budget: 15,000 EUR") == normalise("budget 15000 eur") == "budget 15000 eur"
    assert normalise("1,000,000 rows") == normalise("1_000_000 rows") == "1000000 rows"
    assert normalise("rooms 1,2 and 12,34") == "rooms 1 2 and 12 34"  # not groups of three
    assert normalise("pi is 3,14159") == "pi is 3 14159"  # five digits: not a group
    assert normalise("version 2.100") == "version 2 100"  # a point is no group separator
    assert normalise("Order #10234 shipped 2 500 units") == "order 10234 shipped 2500 units"
    assert normalise("In 2026 500 people came") == "in 2026 500 people came"  # four digits
    assert (
        normalise("The budget is $15k.")
        == normalise("the budget is 15,000")
        != normalise("the budget is 15")
    )
    assert normalise("2.5k rows") == "2500 rows"
    # A unit written apart from its number is the number's (version 3).
    assert normalise("pick-up is at 3:15 pm") == normalise("pickup is at 3:15pm")
    assert normalise("times out after 30 s") == normalise("times out after 30s")
    assert normalise("25 GB disk, 40 %") == "25gb disk 40"
    assert normalise("2 of them") == "2 of them"  # a word, no unit
    assert normalise("at 3 am") != normalise("at 3 pm")
    # An opaque key's case tells it apart; a word's does not.
    assert normalise("Customer cus_Nf8XkQ2pLm3z") == "customer cus Nf8XkQ2pLm3z"
    assert normalise("CUSTOMER Q2 iPhone") == "customer q2 iphone"


def test_an_apostrophe_an_ordinal_and_a_bracketed_stamp_are_written_alike() -> None:
    # Version 4 of the copies digest (ADR 0123).
    from engram.projections.copies import normalise

    assert normalise("The caterer's quote is 900 euros") == normalise(
        "The caterers quote is 900 euros"
    )
    assert normalise("Rehearsal moved to the 5th of June") == normalise(
        "Rehearsal moved to the 5 of June"
    )
    assert normalise("Stage lights need 40 amps (noted 21:40)") == normalise(
        "Stage lights need 40 amps"
    )
    assert normalise("[2025-06-02 08:15] Stage lights need 40 amps") == normalise(
        "Stage lights need 40 amps"
    )
    # A time in brackets that is not a stamp is what the note says.
    assert normalise("Standup (09:30)") != normalise("Standup (10:00)")
    assert normalise("Call (at 10:30) moved") != normalise("Call moved")


def test_a_copy_with_its_numbers_written_otherwise_folds_in_any_order() -> None:
    # A number's digit groups, its thousands and a unit written onto it are the number's,
    # in the words compared as a set (ADR 0123), but an id's tail stays the id's.
    for a, b, same in (
        ("The van carries 1,800 kg when full.", "When full, the van carries 1800kg.", True),
        ("The projector runs at 24fps in hall B.", "In hall B the projector runs at 24 fps.", True),
        ("The grant is 12k euros.", "The grant is 12,000 euros.", True),
        ("The van carries 1,800 kg when full.", "The van carries 1,600 kg when full.", False),
        ("Build 3f9a1c passed.", "Build 3f9a1 c passed.", False),
    ):
        assert _same(_content(a), _content(b), a, b) is same, (a, b)


def test_a_statement_and_its_negation_are_never_copies() -> None:
    # ADR 0123: one content word added ("longer") made the opposite a copy of the statement.
    for a, b in (
        ("Omar is interested in the data role.", "Omar is no longer interested in the data role."),
        ("The bridge is open to lorries.", "The bridge isn't open to lorries."),
    ):
        assert not _same(_content(a), _content(b), a, b), (a, b)
    folder = Folder({}, None)
    said = "Omar is interested in the data role."
    folder.words = [(1, _content(said), len(_content(said)))]
    folder.spelt = {1: said}
    denied = "Omar is no longer interested in the data role."
    assert folder._into(None, _content(denied), denied) is None


def test_a_copy_of_a_folded_copy_folds_where_it_did_and_a_stamp_is_no_word() -> None:
    # ADR 0123: the second folds into the first by its words (another order); the third is
    # the second's copy by digest (the hyphen), not the first's by words ("e", "mail"), and
    # stayed apart: it folds where its copy did.
    from engram.projections.copies import Copy, digest

    texts = {
        1: "My sister's email address is on file.",
        2: "On file: my sister's email address.",
        3: "On file: my sister's e-mail address.",
    }
    rows = {p: Copy(p, digest(t), 0, "ana", "public", False) for p, t in texts.items()}

    class Texts:
        def __init__(self) -> None:
            self.texts = texts

    folder = Folder(rows, Texts())  # type: ignore[arg-type]
    for p in (1, 2, 3):
        folder.add(p)
    assert folder.kept == [1]
    assert folder.folded[1] == [2, 3]
    a, b = "The lease ends on 31 May 2026.", "The lease ends 31 May 2026 (logged 14:05)"
    assert _content(a) == _content(b)


def test_copies_with_a_number_spelt_or_a_word_joined_fold_and_other_numbers_do_not() -> None:
    # ADR 0126: "twenty minutes" and "20 minutes", "the first of every month" and "the 1st",
    # "flower pot" and "flowerpot" were served as two items each.
    from engram.agents.folding import _same

    def same(a: str, b: str) -> bool:
        return _same(_content(a), _content(b), a, b)

    assert same("The bus leaves every twenty minutes from stop C.",
                "The bus leaves every 20 minutes from stop C.")  # fmt: skip
    assert same(
        "Rent is due on the first of every month.", "Rent is due on the 1st of every month."
    )
    assert same("The shed key hangs above the flower pot by the gate.",
                "The shed key hangs above the flowerpot by the gate.")  # fmt: skip
    assert same("Twenty-five chairs are stacked in the hall.", "25 chairs are stacked in the hall.")
    assert not same("The bus leaves every twenty minutes from stop C.",
                    "The bus leaves every 30 minutes from stop C.")  # fmt: skip
    assert not same("Rent is due on the first of every month.",
                    "Rent is due on the 2nd of every month.")  # fmt: skip


def test_a_time_s_am_and_pm_keep_two_times_apart() -> None:
    # A flight landing at 6:40 am and one at 6:40 pm folded into one item ("am" is a
    # function word, so the first read as inside the second).
    def same(a: str, b: str) -> bool:
        return _same(_content(a), _content(b), a, b)

    assert not same("The Lagos flight lands at 6:40 am.", "The Lagos flight lands at 6:40 pm.")
    assert same("The standup is at 9:30 AM.", "The standup is at 9:30am.")
    assert same("Pickup at 7 p.m. sharp.", "Pickup at 7pm sharp.")


def test_a_title_and_its_abbreviation_and_every_and_each_fold() -> None:
    # ADR 0139: "Doctor Okafor" and "Dr. Okafor", "each month" and "every month" were two
    # items (the second labelled as replacing the first).
    def same(a: str, b: str) -> bool:
        return _same(_content(a), _content(b), a, b)

    assert same("Doctor Okafor signs off orders over 500 euros.",
                "Dr. Okafor signs off orders over 500 euros.")  # fmt: skip
    assert same("The boiler is serviced on the 3rd of each month.",
                "The boiler is serviced on the 3rd of every month.")  # fmt: skip
    assert not same("Doctor Okafor signs off orders over 500 euros.",
                    "Dr. Mensah signs off orders over 500 euros.")  # fmt: skip


def test_one_date_written_several_ways_folds() -> None:
    # ADR 0143: "29 Nov 2026", "29/11/2026" and "29th November 2026" were three items of one
    # deadline; another day, or a date whose day and month could swap, stays apart.
    def same(a: str, b: str) -> bool:
        return _same(_content(a), _content(b), a, b)

    deadline = "The REF submission deadline is {}."
    for other in ("29 Nov 2026", "29/11/2026", "29th November 2026", "November 29, 2026",
                  "2026-11-29"):  # fmt: skip
        assert same(deadline.format("29 November 2026"), deadline.format(other)), other
    assert same("Fellowship application submitted on 3 Mar.",
                "Fellowship application submitted on March 3rd.")  # fmt: skip
    assert not same(deadline.format("29 November 2026"), deadline.format("28 November 2026"))
    assert not same(deadline.format("3/4/2026"), deadline.format("4 March 2026"))


def test_common_abbreviations_fold_written_lowercase() -> None:
    # ADR 0143: "10 mins" and "10 minutes", "max load" and "maximum load" were two items; a
    # name ("Max") is no abbreviation.
    def same(a: str, b: str) -> bool:
        return _same(_content(a), _content(b), a, b)

    assert same("Patients must arrive 10 mins before the appointment.",
                "Patients must arrive 10 minutes before the appointment.")  # fmt: skip
    assert same("The max load of the lift is 400 kg.", "The maximum load of the lift is 400 kg.")
    assert same("Call the dept. before 5.", "Call the department before 5.")
    assert not same("Max Power runs the desk.", "maximum Power runs the desk.")
