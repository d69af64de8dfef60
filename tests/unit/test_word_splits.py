"""Recall splits a candidate's text into words once (ADR 0101): the faster ASCII split gives
the regex's words, and the one pass gives what the separate passes gave before."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents import matching
from engram.agents.matching import Stems, stem, stems_of
from engram.projections import lexical

_WORD = re.compile(r"\w+", re.UNICODE)
ascii_text = st.text(st.characters(max_codepoint=127), max_size=120)
# Letters whose lowercase differs in length or kind, and marks that are no word characters.
tricky = st.text(
    st.one_of(
        st.characters(max_codepoint=127),
        st.sampled_from("İıßẞǅǄΣςÅåÉé\u0307\u0301ﬁ½²٣_-"),
        st.characters(),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(ascii_text, tricky))
def test_lowered_words_are_the_regex_s_over_the_lowered_text(text: str) -> None:
    assert lexical.lowered_words(text) == _WORD.findall(text.lower())


@settings(max_examples=300, deadline=None)
@given(text=ascii_text)
def test_an_ascii_text_lowered_whole_splits_as_tokens_do(text: str) -> None:
    assert lexical.lowered_words(text) == lexical.tokens(text)


def test_a_text_whose_lowercase_changes_splits_each_way() -> None:
    text = "İstanbul's ǅungla"  # "İ" lowercases to "i" and a combining dot, no word character
    assert lexical.tokens(text) != lexical.lowered_words(text)
    assert stems_of(text) == _separately(text)


def _separately(text: str) -> Stems:
    """The passes as they were before one served them all."""
    words = lexical.tokens(text)
    distinct = set(words)
    return Stems(
        frozenset(stem(w) for w in distinct),
        frozenset(stem(w) for w in distinct - matching._ASIDE),
        len(words),
        frozenset(_WORD.findall(text.lower())),
    )


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(ascii_text, tricky))
def test_one_pass_gives_what_the_separate_passes_gave(text: str) -> None:
    assert stems_of.__wrapped__(text) == _separately(text)


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(ascii_text, tricky),
    weights=st.dictionaries(
        st.sampled_from(["the", "cat", "sat", "ist", "i", "straße", "x1", "_"]),
        st.floats(1e-6, 20.0),
        max_size=6,
    ),
)
def test_the_share_from_the_pass_is_the_share(text: str, weights: dict[str, float]) -> None:
    total = sum(weights.values())
    found = lexical.share_of(weights, stems_of(text).lowered, total) if total else 0.0
    assert repr(found) == repr(lexical.share(weights, text))


def test_the_stem_memo_starts_again_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    memo = matching._StemMemo()
    monkeypatch.setattr(matching, "_STEMMED_WORDS", 3)
    for word in ("lives", "lived", "living", "cats"):
        assert memo[word] == stem(word)
    assert list(memo) == ["cats"]  # the fourth word found it full: it held that one alone
