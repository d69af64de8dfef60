"""The query's absent share: the IDF mass of its content words no memory holds (ADR 0090)."""

from __future__ import annotations

import pytest

from engram.agents.matching import Calibration, absent_share, codes, names


def test_a_name_no_memory_holds_is_absent_and_function_words_are_not_counted() -> None:
    weights = {"what": 0.2, "is": 0.1, "zoltan": 3.0, "blood": 2.0, "type": 1.0}
    present = ("what", "is", "blood", "type")
    assert absent_share(weights, present) == pytest.approx(3.0 / 6.0)
    assert absent_share(weights, (*present, "zoltan")) == 0.0
    # A function word no memory holds says how the question is asked, not what it is about.
    assert absent_share({"whom": 5.0, "blood": 2.0}, ("blood",)) == 0.0


def test_a_quoted_id_is_absent_when_one_of_its_parts_is() -> None:
    query = "error HE-855 again"
    weights = {"error": 1.0, "he": 2.0, "855": 3.0, "again": 1.0}
    quoted = codes(query)
    assert quoted == ("he-855",)
    assert absent_share(weights, ("error", "he", "again"), quoted) == pytest.approx(5.0 / 7.0)
    assert absent_share(weights, ("error", "he", "855", "again"), quoted) == 0.0


def test_a_query_of_nothing_but_function_words_is_judged_on_them() -> None:
    assert absent_share({}, ()) == 0.0
    assert absent_share({"what": 1.0, "is": 1.0}, ("what",)) == pytest.approx(0.5)


def test_the_absent_term_lowers_every_item_of_a_query_alike() -> None:
    c = Calibration(-6.0, 4.0, 3.0, 2.0, absent=-3.0)
    for share, cosine, rank in ((0.9, 0.7, 1.0), (0.2, 0.3, 0.4), (0.0, 0.1, 0.05)):
        assert c.relevance(share, cosine, rank, absent=0.5) < c.relevance(share, cosine, rank)
    low = [c.relevance(s, 0.5, r, absent=0.8) for s, r in ((0.9, 1.0), (0.5, 0.5), (0.1, 0.2))]
    high = [c.relevance(s, 0.5, r) for s, r in ((0.9, 1.0), (0.5, 0.5), (0.1, 0.2))]
    assert sorted(low, reverse=True) == low
    assert sorted(high, reverse=True) == high


def test_what_a_clitic_leaves_is_not_an_absent_word() -> None:
    # "Sato's" is tokenized "sato", "s": a store whose texts hold no "'s" has no "s".
    weights = {"when": 0.5, "is": 0.1, "hana": 3.0, "sato": 3.0, "s": 5.0, "birthday": 5.0}
    present = ("when", "is", "hana", "sato")
    assert absent_share(weights, present) == pytest.approx(5.0 / 11.0)


def test_names_are_the_capitalised_words_not_where_a_sentence_starts() -> None:
    assert names("Where does Zoltan Varga live?") == {"zoltan", "varga"}
    assert names('When did "Jon" go? Then Mary left.') == {"jon", "mary"}
    assert names("where does zoltan live") == frozenset()


def test_the_names_share_counts_only_absent_names() -> None:
    weights = {"where": 0.5, "zoltan": 4.0, "lives": 2.0, "now": 0.1, "grandma": 3.0}
    query = "Where does Zoltan live now, grandma?"
    present = ("where", "now")
    assert absent_share(weights, present) == pytest.approx(9.0 / 9.0)
    assert absent_share(weights, present, only=names(query)) == pytest.approx(4.0 / 9.0)
