"""Fold copies of one memory into one recalled item, and find what replaced what (ADR 0052).

Recall scores its candidates (:mod:`engram.agents.memory`), then keeps the first of each
group of copies: memories with one normalised-text digest (the copies projection), or whose
content words are equal, or the smaller set (three words or more) inside the larger with
three quarters of its words. The kept item reports every visible copy of its digest and
what it folded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from engram.agents.matching import STOPWORDS, Matching, stem
from engram.projections import copies, lexical, supersession

__all__ = ["copy_rows", "fold", "grouped", "replaced_among"]


def replaced_among(
    conn: sqlite3.Connection, positions: Sequence[int], cut: int | None, valid_us: int
) -> dict[int, int]:
    """Return ``old -> new`` for the candidates replaced by ``valid_us`` (valid time), as
    the store knew it at ``cut`` (record time; None: now)."""
    try:
        found = supersession.replacements(conn, positions, as_of_us=cut)
    except sqlite3.Error:
        return {}
    return {p: r.new for p, r in found.items() if r.valid_from_us <= valid_us}


def copy_rows(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, copies.Copy]:
    """Return the copies table's rows of ``positions``; none where the store lacks it."""
    try:
        return copies.facts(conn, positions)
    except sqlite3.Error:
        return {}


def fold(
    ranking: Sequence[int], rows: Mapping[int, copies.Copy], matching: Matching | None
) -> tuple[list[int], dict[int, list[int]]]:
    """Keep the first of each group of copies; return the kept and what each one folded.

    Two candidates are copies when their normalised texts are equal (the copies table's
    digest) or when one's content words are all among the other's (a copy with a word added
    says nothing more); ADR 0052.
    """
    kept: list[int] = []
    folded: dict[int, list[int]] = {}
    seen: dict[str, int] = {}
    words: list[tuple[int, frozenset[str]]] = []
    texts = matching.texts if matching is not None else {}
    for p in ranking:
        row = rows.get(p)
        into = seen.get(row.digest) if row else None
        mine = _content(texts.get(p, ""))
        if into is None and len(mine) >= 2:
            into = next((q for q, theirs in words if _same(mine, theirs)), None)
        if into is not None:
            folded[into].append(p)
            continue
        kept.append(p)
        folded[p] = []
        if row:
            seen[row.digest] = p
        if mine:
            words.append((p, mine))
    return kept, folded


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    """Say whether two content-word sets say the same: equal, or the smaller (of three words
    or more) inside the larger with three quarters of its words."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if small == large:
        return True
    return len(small) >= 3 and small <= large and len(small) >= 0.75 * len(large)


def _content(text: str) -> frozenset[str]:
    """Return the stems of ``text``'s content words (function and filler words set aside)."""
    return frozenset(
        stem(w) for w in lexical.tokens(text) if w not in STOPWORDS and w not in copies.FILLERS
    )


def grouped(
    conn: sqlite3.Connection,
    order: Sequence[int],
    rows: Mapping[int, copies.Copy],
    folded: Mapping[int, list[int]],
    agent: str,
    cut: int | None,
) -> dict[int, tuple[int, ...]]:
    """Return each served item's copies (itself included), oldest first."""
    digests = {rows[p].digest for p in order if p in rows}
    try:
        same = copies.copies_of(conn, sorted(digests), agent=agent, as_of_us=cut)
    except sqlite3.Error:
        same = {}
    groups = {}
    for p in order:
        found = set(same.get(rows[p].digest, ())) if p in rows else set()
        for q in folded.get(p, ()):
            found.add(q)
            if q in rows:
                found.update(same.get(rows[q].digest, ()))
        groups[p] = tuple(sorted(found | {p}))
    return groups
