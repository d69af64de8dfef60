"""Repeats found before drafting: scars that tell one mistake, grouped (ADR 0056, 0067).

A team of agents records the same mistake several times, each in its own words. Before a
lesson is drafted, :func:`group` puts each waiting scar with the mistake it repeats, by
average-linkage agglomeration over :func:`~engram.agents.meaning.repeat_score`:

- the groups start as the suggestions drafted already (their scars, whatever their status:
  a repeat of a refused lesson joins it and is not drafted again), and one group per
  waiting scar;
- the two groups whose members score highest against each other on average are merged, as
  long as that average reaches :data:`~engram.agents.meaning.REPEAT` and no pair between
  them scores below :data:`~engram.agents.meaning.COHESION`; two drafted suggestions are
  never merged (a reviewer's decisions stay apart).

Average linkage (every member counts) keeps a chain of small drifts from gluing two mistakes
together, the cohesion floor keeps one outlier pair out, and merging the best pair first
makes the result independent of the order the scars were told. The texts compared are what
happened and the lesson together, as the semantic index embeds a scar, and the lesson alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.agents.meaning import COHESION, REPEAT, Calibration, content_words, repeat_score
from engram.projections.embedding import Embedder

__all__ = ["Group", "Told", "Vectors", "embedded", "group", "scar_text", "situations"]

#: Vectors by scar id.
Vectors = dict[str, npt.NDArray[np.float32]]


class Told(NamedTuple):
    """One scar as grouping sees it: its id, position and texts."""

    id: str
    position: int
    what: str
    lesson: str


def scar_text(what: str, lesson: str) -> str:
    """Return the text a scar is compared on: what happened, then the lesson (the text the
    semantic index embeds for a scar)."""
    return f"{what}\n{lesson}"


def embedded(scars: Sequence[Told], embedder: Embedder) -> tuple[Vectors, Vectors]:
    """Return the vectors :func:`group` compares ``scars`` by: the whole scars' (as the
    semantic index embeds them) and their lessons' (a repeat is alike in both, ADR 0056)."""
    wholes = embedder.embed([scar_text(t.what, t.lesson) for t in scars])
    own = embedder.embed([t.lesson for t in scars])
    return (
        {t.id: np.asarray(v, dtype=np.float32) for t, v in zip(scars, wholes, strict=True)},
        {t.id: np.asarray(v, dtype=np.float32) for t, v in zip(scars, own, strict=True)},
    )


def situations(scars: Sequence[Told], embedder: Embedder) -> Vectors:
    """Return the vectors of what happened in each of ``scars``: the lessons alone make a
    repeat only where these are not unrelated (ADR 0185)."""
    found = embedder.embed([t.what for t in scars])
    return {t.id: np.asarray(v, dtype=np.float32) for t, v in zip(scars, found, strict=True)}


@dataclass
class Group:
    """Scars that tell one mistake; ``suggestion`` is the one drafted from them, if any."""

    suggestion: str | None
    members: list[Told] = field(default_factory=list)
    joined: list[Told] = field(default_factory=list)  # waiting scars that joined it


def group(
    drafted: Sequence[tuple[str, Told]],
    waiting: Sequence[Told],
    vectors: dict[str, npt.NDArray[np.float32]] | None = None,
    calibration: Calibration | None = None,
    threshold: float = REPEAT,
    lessons: dict[str, npt.NDArray[np.float32]] | None = None,
    cohesion: float = COHESION,
    settled: frozenset[str] = frozenset(),
    happened: Vectors | None = None,
) -> list[Group]:
    """Return the groups: the drafted suggestions' (``(suggestion id, scar)`` pairs) with the
    waiting scars that joined them, then the new groups of waiting scars, oldest first.

    ``vectors`` maps scar ids to the embeddings of the whole scars (:func:`scar_text`),
    ``lessons`` to their lessons' (with ``calibration``: see
    :func:`~engram.agents.meaning.repeat_score`); without vectors the content words alone
    decide; ``happened`` maps them to what happened in each (:func:`situations`). A waiting
    scar joins a ``settled`` suggestion (one a reviewer decided on: a rule in force, or a
    refused lesson) only where its lesson agrees with the suggestion's too, on average as a
    repeat does: joining changes the evidence a reviewer judged, and a scar of a like
    situation teaching another lesson is drafted on its own (ADR 0127, 0185).
    """
    clusters: list[Group] = []
    by_suggestion: dict[str, Group] = {}
    for suggestion, scar in drafted:
        if suggestion not in by_suggestion:
            by_suggestion[suggestion] = Group(suggestion)
            clusters.append(by_suggestion[suggestion])
        by_suggestion[suggestion].members.append(scar)
    seen = {scar.id for _, scar in drafted}
    fresh = [s for s in sorted(waiting, key=lambda s: s.position) if s.id not in seen]
    clusters.extend(Group(None, joined=[scar]) for scar in fresh)
    if not fresh:
        return clusters
    scars = [m for g in clusters for m in g.members + g.joined]
    owner = [c for c, g in enumerate(clusters) for _ in g.members + g.joined]
    pair = _scores(scars, vectors, calibration, lessons, happened)
    k = len(clusters)
    onehot = np.zeros((len(scars), k))
    onehot[np.arange(len(scars)), owner] = 1.0
    total = onehot.T @ pair @ onehot  # sum of pair scores between clusters
    strict = np.array([g.suggestion in settled for g in clusters])
    # The same sums of the lessons alone, where a rule in force is among the groups.
    agreement = _agreement(scars, lessons, calibration) if strict.any() else None
    agreed = None if agreement is None else onehot.T @ agreement @ onehot
    # Scars are listed cluster by cluster: the lowest pair between two clusters by blocks.
    starts = np.searchsorted(np.asarray(owner), np.arange(k))
    lowest = np.minimum.reduceat(np.minimum.reduceat(pair, starts, axis=0), starts, axis=1)
    np.fill_diagonal(lowest, np.inf)
    size = onehot.sum(axis=0)
    alive = np.ones(k, dtype=bool)
    fixed = np.array([g.suggestion is not None for g in clusters])
    while True:
        average = total / np.outer(size, size)
        allowed = np.outer(alive, alive) & ~np.outer(fixed, fixed) & (lowest >= cohesion)
        if agreed is not None:
            lesson = agreed / np.outer(size, size) >= threshold
            allowed &= lesson | ~(strict[:, None] | strict[None, :])
        np.fill_diagonal(allowed, False)
        average = np.where(allowed, average, -np.inf)
        a, b = np.unravel_index(int(np.argmax(average)), average.shape)
        if average[a, b] < threshold:
            break
        if fixed[b] or (not fixed[a] and b < a):
            a, b = b, a  # keep the drafted (or older) group
        clusters[a].joined.extend(clusters[b].joined)
        total[a, :] += total[b, :]
        total[:, a] += total[:, b]
        if agreed is not None:
            agreed[a, :] += agreed[b, :]
            agreed[:, a] += agreed[:, b]
        lowest[a, :] = np.minimum(lowest[a, :], lowest[b, :])
        lowest[:, a] = lowest[a, :]
        size[a] += size[b]
        alive[b] = False
    out = [g for g, live in zip(clusters, alive, strict=True) if live]
    for g in out:
        g.joined.sort(key=lambda s: s.position)
    drafted_groups = [g for g in out if g.suggestion is not None]
    new = sorted((g for g in out if g.suggestion is None), key=lambda g: g.joined[0].position)
    return drafted_groups + new


def _agreement(
    scars: Sequence[Told],
    lessons: dict[str, npt.NDArray[np.float32]] | None,
    calibration: Calibration | None,
) -> npt.NDArray[np.float64]:
    """Return how surely each two of ``scars`` teach one lesson: their lessons' calibrated
    cosine, or half their content words shared (two at least), whichever is larger."""
    words = [content_words(s.lesson) for s in scars]
    n = len(scars)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = out[j, i] = repeat_score(words[i], words[j])
    if lessons is not None and calibration is not None and n:
        rows = [lessons.get(s.id) for s in scars]
        if all(r is not None for r in rows):
            unit = np.asarray(rows, dtype=np.float64)
            unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
            spread = calibration.paraphrase - calibration.floor
            mapped = np.clip((unit @ unit.T - calibration.floor) / spread, 0.0, 1.0)
            out = np.maximum(out, mapped)
    return out


def _scores(
    scars: Sequence[Told],
    vectors: dict[str, npt.NDArray[np.float32]] | None,
    calibration: Calibration | None,
    lessons: dict[str, npt.NDArray[np.float32]] | None,
    happened: Vectors | None = None,
) -> npt.NDArray[np.float64]:
    """Return the matrix of :func:`~engram.agents.meaning.repeat_score` between ``scars``."""
    # The lesson's words: scars of one situation may teach different lessons.
    words = [content_words(s.lesson) for s in scars]
    n = len(scars)
    out = np.zeros((n, n))
    for i in range(n):
        vi = None if vectors is None else vectors.get(scars[i].id)
        li = None if lessons is None else lessons.get(scars[i].id)
        hi = None if happened is None else happened.get(scars[i].id)
        for j in range(i + 1, n):
            vj = None if vectors is None else vectors.get(scars[j].id)
            lj = None if lessons is None else lessons.get(scars[j].id)
            hj = None if happened is None else happened.get(scars[j].id)
            out[i, j] = out[j, i] = repeat_score(
                words[i], words[j], vi, vj, calibration, li, lj, hi, hj
            )
    return out
