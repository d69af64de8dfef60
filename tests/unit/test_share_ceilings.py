"""Recall bounds each candidate's content share from its text before splitting it
(:func:`engram.agents.matching.share_ceilings`, ADR 0103): never under the share worked out."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.matching import Candidate, Matching, share_ceilings, work_out

# Stems that are prefixes of other words, inflections, function words, a quoted id and its
# parts, upper case and non-ASCII words: what a test of the text before its split could miss.
_WORDS = [
    "live", "lives", "living", "Lived", "liver", "cat", "Cats", "catalog", "the", "what",
    "berlin", "BERL", "run", "runs", "rune", "he", "855", "he-855", "HE-855", "ge-855",
    "İstanbul", "café", "go", "goes", "x",
]  # fmt: skip
_QUERY_WORDS = ["live", "cat", "the", "what", "berlin", "run", "he", "855", "go", "istanbul"]


@settings(max_examples=400, deadline=None)
@given(
    weights=st.dictionaries(
        st.sampled_from(_QUERY_WORDS), st.floats(1e-6, 12.0), min_size=0, max_size=6
    ),
    quoted=st.sampled_from([(), ("he-855",)]),
    texts=st.lists(st.lists(st.sampled_from(_WORDS), max_size=10).map(" ".join), max_size=8),
)
def test_the_share_ceiling_is_never_under_the_share(
    weights: dict[str, float], quoted: tuple[str, ...], texts: list[str]
) -> None:
    m = Matching(sqlite3.connect(":memory:"), {}, codes=quoted, share_weights=weights)
    m.texts = dict(enumerate([*texts, ""], start=1))  # an empty text too
    positions = list(m.texts)
    most = share_ceilings(positions, m)
    fused = {p: Candidate() for p in positions}
    work_out(fused, positions, m)
    assert most is not None
    for p in positions:
        assert fused[p].share <= most[p], (weights, quoted, m.texts.get(p))


def test_a_text_holding_none_of_the_query_s_words_can_share_nothing() -> None:
    m = Matching(sqlite3.connect(":memory:"), {}, share_weights={"berlin": 3.0, "cat": 1.0})
    m.texts = {1: "The garden party is on Friday", 2: "Cats in BERLIN", 3: "Café İstanbul"}
    assert share_ceilings([1, 2, 3], m) == {1: 0.0, 2: 1.0, 3: 1.0}
    assert share_ceilings([1], Matching(m.conn, {})) is None  # no share is worked out
