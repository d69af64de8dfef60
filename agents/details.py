"""Split a long text into its lead and its details; summarise the details to a token allowance.

A frame entry's ``text`` is its lead: the whole text when it is at most :data:`LEAD_CHARS`
characters, else its first sentences within them (the first sentence cut at a word and marked
with an ellipsis when it alone is longer). The rest is its ``details``, at most
:data:`DETAIL_CHARS` characters (ADR 0082). The lead is always a prefix of the text.

When the budget is tight, :func:`summarise` keeps an extract of the details: sentences are
taken by the IDF-weighted share of the query's words they hold (ties: the earlier first)
while the extract fits the allowance, and shown in their own order with an ellipsis for each
gap. With no query word in them it is the lead sentences. Offline and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engram.agents.tokens import Estimate
from engram.projections import lexical

#: The longest lead an entry's ``text`` holds; the rest goes to ``details``.
LEAD_CHARS = 280
#: The longest ``details`` an entry holds before any budget cut (an ellipsis marks the cut).
DETAIL_CHARS = 4_000
#: An extract smaller than this (tokens) is not worth its key: the details are left out.
MIN_DETAIL_TOKENS = 12
MARK = "…"
_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
_ESTIMATE = Estimate()


def split(text: str) -> tuple[str, str]:
    """Return ``text``'s lead and its details ("" when the text is short)."""
    if len(text) <= LEAD_CHARS:
        return text, ""
    cut = 0
    for boundary in _END.finditer(text):
        if boundary.start() > LEAD_CHARS:
            break
        cut = boundary.start()
    if cut == 0:  # the first sentence alone is longer than a lead: cut it at a word
        space = text.rfind(" ", 0, LEAD_CHARS - 1)
        cut = space if space > 0 else LEAD_CHARS - 1
        lead = text[:cut].rstrip() + MARK
    else:
        lead = text[:cut].rstrip()
    return lead, clip(text[cut:].strip())


def clip(details: str) -> str:
    """Return ``details`` cut to :data:`DETAIL_CHARS` (an ellipsis marks the cut)."""
    if len(details) > DETAIL_CHARS:
        return details[: DETAIL_CHARS - 1] + MARK
    return details


def summarise(details: str, allowance: int, weights: Mapping[str, float]) -> str:
    """Return an extract of ``details`` of at most ``allowance`` tokens (by the estimate,
    which errs high), "" when not even a few words fit.

    ``weights`` are the query's words and their IDF (:func:`engram.projections.lexical.terms`).
    """
    if allowance < MIN_DETAIL_TOKENS:
        return ""
    if _ESTIMATE.count(details) <= allowance:
        return details
    sentences = [s.strip() for s in _END.split(details) if s.strip()]
    query = dict(weights)
    order = sorted(range(len(sentences)), key=lambda i: (-lexical.share(query, sentences[i]), i))
    # The estimate counts pieces between spaces, so an extract costs its sentences plus one
    # token per ellipsis: each sentence is counted once.
    costs = [_ESTIMATE.count(s) for s in sentences]
    kept: set[int] = set()
    for i in order:
        trial = kept | {i}
        if sum(costs[j] for j in trial) + _gaps(trial, len(sentences)) <= allowance:
            kept.add(i)
    if kept:
        return _extract(sentences, kept)
    # Not one whole sentence fits: the best one, cut at a word.
    words = sentences[order[0]].split()
    while words:
        words = words[: len(words) * 3 // 4]
        trial_text = " ".join(words) + " " + MARK
        if words and _ESTIMATE.count(trial_text) <= allowance:
            return trial_text
    return ""


def _gaps(kept: set[int], n: int) -> int:
    """Return how many ellipses an extract of the ``kept`` sentences of ``n`` shows."""
    last, gaps = -1, 0
    for i in sorted(kept):
        gaps += i != last + 1
        last = i
    return gaps + (last != n - 1)


def _extract(sentences: list[str], kept: set[int]) -> str:
    """Return the kept sentences in their order, an ellipsis where any were left out."""
    parts: list[str] = []
    last = -1
    for i in sorted(kept):
        if i != last + 1:
            parts.append(MARK)
        parts.append(sentences[i])
        last = i
    if last != len(sentences) - 1:
        parts.append(MARK)
    return " ".join(parts)
