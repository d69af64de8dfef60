"""A recall candidate, and its ``match``: how well it matches the query on an absolute scale.

``match`` (ADR 0019) is the fusion-weighted mean of each path's absolute match: for BM25 the
IDF-weighted share of the query's words the item holds, for vectors the cosine clipped to
0..1. It needs the item's text and vector, so recall works it out only for the candidates it
may keep (ADR 0044), with what the paths gathered while they ran (:class:`Matching`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from engram.projections import lexical, semantic


@dataclass
class Candidate:
    """One item a recall path found (or bloom brought), as it is fused and scored."""

    fused: float = 0.0
    via: tuple[str, ...] = ()
    bm25: float | None = None
    cosine: float | None = None
    match: float | None = None  # None until worked out (only for the items that may be kept)


@dataclass
class Matching:
    """What working out a candidate's ``match`` needs, gathered while the paths ran.

    ``weights`` are the query words' IDF (None: the lexical path did not run); ``texts`` the
    texts the lexical path read already; ``vector`` the query vector (None: the semantic path
    did not run).
    """

    conn: sqlite3.Connection
    fusion: Mapping[str, float]
    weights: dict[str, float] | None = None
    texts: dict[int, str] = field(default_factory=dict)
    vector: npt.NDArray[np.float32] | None = None


def work_out(fused: dict[int, Candidate], positions: Sequence[int], m: Matching) -> None:
    """Set the ``match`` of ``positions``: the fusion-weighted mean of the paths' absolute
    matches (IDF-weighted word share; cosine clipped to 0..1), every path that ran counted
    for every candidate, found by it or not.

    Worked out only for the candidates recall may keep, down its final order: the texts the
    lexical path did not read and the vectors the semantic path did not score are read for
    them alone.
    """
    parts: dict[str, dict[int, float]] = {}
    if m.weights is not None:
        unread = [p for p in positions if p not in m.texts]
        if unread:
            m.texts.update(lexical.texts(m.conn, unread))
        weights, texts = m.weights, m.texts
        parts["lexical"] = {
            p: lexical.share(weights, texts[p]) if p in texts else 0.0 for p in positions
        }
    if m.vector is not None:
        missing = [p for p in positions if fused[p].cosine is None]
        stored = semantic.vectors_of(m.conn, missing) if missing else {}
        for p, blob in stored.items():
            fused[p].cosine = float(np.frombuffer(blob, dtype=np.float32) @ m.vector)
        parts["semantic"] = {p: min(max(fused[p].cosine or 0.0, 0.0), 1.0) for p in positions}
    total = sum(m.fusion[path] for path in parts)
    for p in positions:
        mean = sum(m.fusion[path] * part[p] for path, part in parts.items())
        fused[p].match = mean / total if total else 0.0
