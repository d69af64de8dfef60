"""What a recall serves: one item (:class:`Recalled`) and the result (:class:`RecallResult`).

Their own module, so that memory recall (``engram.agents.memory``) and recall over the other
scopes (``engram.agents.scopes``) share them without importing each other.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from engram.ledger import Event

__all__ = ["RecallResult", "Recalled"]


class Recalled(NamedTuple):
    """One recalled memory: the event behind it, its score and the score's components.

    ``score`` (what orders the result) and ``relevance`` (the calibrated probability that it
    answers the query) are absolute, in 0..1 (ADR 0051); ``recency`` is ``1 / (1 + age /
    half-life)`` and ``importance`` the rating over 10. ``copies`` and ``copy_positions`` say
    which memories it stands for; ``replaced_by`` what replaced it (ADR 0052); ``refused``, for a
    scar, that a reviewer refused its lesson: it is served as what happened only (its text by
    :func:`engram.agents.scopes.item_text`), never as guidance, and its ``event``'s lesson is
    blanked (the ledger keeps it). ``fused`` is the raw
    reciprocal-rank sum; ``bm25`` (FTS5's BM25, higher is better) and ``cosine`` (the query
    vector's cosine similarity) are the paths' raw scores, None where a path did not find
    the item (``cosine`` is filled in from the stored vector when only BM25 found it);
    ``match`` (0..1) says how well the item matches the query whatever the other results: the
    mean of each path's absolute match weighted as the fusion weighs the paths — for BM25
    the IDF-weighted share of the query's words the item holds, for vectors the cosine
    clipped to 0..1 — or, from the keyword fallback, the share of the query's words it holds.
    """

    event: Event
    score: float
    relevance: float
    recency: float
    importance: float
    via: tuple[str, ...]  # which paths found it: "lexical", "semantic", "fallback"
    fused: float = 0.0
    bm25: float | None = None
    cosine: float | None = None
    match: float = 0.0
    copies: int = 1  # how many memories this item stands for (itself and its copies)
    copy_positions: tuple[int, ...] = ()  # their positions, oldest first
    replaced_by: int | None = None  # the memory that replaced this one (ADR 0052)
    refused: bool = False  # a scar whose lesson a reviewer refused: what happened only


class RecallResult(NamedTuple):
    """What a recall served, and how."""

    query: str
    as_of: datetime
    items: list[Recalled]
    fallback: str | None  # why a degraded path was used, if one was
    recorded_at: int | None  # the memory.recalled event's position (None: not recorded)
