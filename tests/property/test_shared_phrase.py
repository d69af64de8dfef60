"""Detection's shared phrase (ADR 0106) is the longest common run of content words, found in
time proportional to the product of the texts' lengths: checked against the plain search."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.statements import content_stems as _content_stems
from engram.agents.statements import dropped as _dropped
from engram.agents.statements import shared_phrase as _shared_phrase

WORDS = st.sampled_from(["store", "session", "the", "is", "gateway", "api", "moved", "to", "7"])
TEXTS = st.lists(WORDS, max_size=14).map(" ".join)


def _plain(text: str, other: str) -> tuple[str, ...]:
    mine, theirs = _content_stems(text), _content_stems(other)
    best: tuple[str, ...] = ()
    for i in range(len(mine)):
        for j in range(len(theirs)):
            n = 0
            while (
                i + n < len(mine)
                and j + n < len(theirs)
                and mine[i + n]
                and (mine[i + n] == theirs[j + n])
            ):
                n += 1
            if n >= 2 and n > len(best):
                best = tuple(mine[i : i + n])
    return best


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_the_shared_phrase_is_the_longest_common_run(text: str, other: str) -> None:
    found = _shared_phrase(text, other)
    assert len(found) == len(_plain(text, other))
    if found and len(text.split()) > len(found):  # nothing left: the text is kept whole
        assert len(_dropped(text, found).split()) == len(text.split()) - len(found)


def test_a_long_text_is_compared_quickly() -> None:
    text = " ".join(("alpha", "beta", "gamma", "delta", "omega")[i % 5] for i in range(2000))
    assert _shared_phrase(text, text[: len(text) // 2]) != ()
