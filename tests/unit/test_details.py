"""A long text's lead and details; an extract of the details that fits an allowance."""

from __future__ import annotations

from engram.agents.details import DETAIL_CHARS, LEAD_CHARS, MARK, split, summarise
from engram.agents.tokens import Estimate


def test_a_short_text_is_all_lead_and_a_long_one_splits_at_a_sentence() -> None:
    assert split("short. text.") == ("short. text.", "")
    text = "First sentence here. " * 30
    lead, details = split(text)
    assert text.startswith(lead)
    assert lead.endswith(".")
    assert len(lead) <= LEAD_CHARS
    assert details == text[len(lead) :].strip()


def test_a_first_sentence_longer_than_a_lead_is_cut_at_a_word_and_marked() -> None:
    text = "word " * 200
    lead, details = split(text)
    assert lead.endswith(MARK)
    assert len(lead) <= LEAD_CHARS
    assert text.startswith(lead[:-1])
    assert 0 < len(details) <= DETAIL_CHARS


def test_an_extract_keeps_what_the_query_asks_for_within_the_allowance() -> None:
    sentences = [f"Filler sentence number {i} says nothing new." for i in range(30)]
    sentences.insert(20, "The invoices table was locked by the index rebuild.")
    details = " ".join(sentences)
    weights = {"invoices": 3.0, "rebuild": 2.0}
    for allowance in (200, 80, 40, 20):
        extract = summarise(details, allowance, weights)
        assert Estimate().count(extract) <= allowance
        assert "invoices table was locked" in extract
        assert MARK in extract
    # Without query words it is the lead sentences; too small an allowance is nothing.
    assert summarise(details, 40, {}).startswith("Filler sentence number 0")
    assert summarise(details, 5, weights) == ""
    assert summarise("Short.", 40, weights) == "Short."
