"""The nightly dream: scars that keep repeating become one rule suggestion for a person.

As of a window's end, the *candidates* are the scars the learning queue still waits on
(learnable, public, not archived, named by no suggestion: :func:`suggestions.waiting`),
recorded at or before the window's end, that have a vector in the semantic index. Two
scars are *similar* when both hold:

- the cosine of their stored vectors (the semantic index's, embedded from what happened and
  the lesson) is at least ``cosine`` (default 0.85), and
- the Jaccard overlap of their lessons' word sets (the lexical index's tokens) is at least
  ``overlap`` (default 0.5).

The vector alone groups scars about the same situation with different lessons; the words
alone group lessons that share phrasing but not meaning. Clustering is *leader* clustering
in ledger order (ADR 0038): each candidate, oldest first, joins the first cluster whose
leader (its oldest scar) it is similar to, else leads a new one. Every member is similar to
its leader (no chains of drift), and a later scar never moves an earlier one, so a cluster
only grows over time. A cluster of at least ``min_size`` (3) scars becomes one
``suggestion.proposed`` (destination ``rules``, drafter ``dream``, citing every scar of the
cluster, the leader's lesson scrubbed of personal data as the rule's text) in the lessons
queue, where a person reviews it: the dream never applies, merges or archives anything.

Its scars are then named by a suggestion, so the learning queue, and the next dream, pass
them by: a cluster is proposed once. The suggestion's id derives from the window and the
cluster's scars, so a re-run of the window appends nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.agents.learning import MAX_RULE
from engram.agents.privacy import scrub_text
from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent
from engram.ledger.catalog import SuggestionProposed
from engram.projections import scars as scar_table
from engram.projections import suggestions
from engram.projections.lexical import tokens
from engram.projections.rules import one_line
from engram.projections.salience import micros
from engram.projections.semantic import SemanticIndex, vectors_of
from engram.projections.store import ProjectionStore

NAME = "dream"
DRAFTER = "dream"


@dataclass(frozen=True)
class DreamSettings:
    """When two scars repeat each other, how many make a rule, and how often the dream runs."""

    cosine: float = 0.85
    overlap: float = 0.5
    min_size: int = 3
    every: timedelta = timedelta(days=1)

    def __post_init__(self) -> None:
        for name in ("cosine", "overlap"):
            value = getattr(self, name)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not 0.0 < value <= 1.0
            ):
                raise JobConfigError(f"dream {name} must be a number in (0, 1], got {value!r}")
        size = self.min_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 2:
            raise JobConfigError(f"dream min_size must be an int >= 2, got {size!r}")
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"dream every must be at least one second, got {self.every!r}")


class Candidate(NamedTuple):
    """A scar the dream may cluster: its position, event id, lesson and vector."""

    position: int
    id: str
    lesson: str
    vector: Sequence[float] | npt.NDArray[np.float32]


def lesson_words(lesson: str) -> frozenset[str]:
    """Return the set of a lesson's words as the lexical index splits them."""
    return frozenset(tokens(lesson))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Return |a & b| / |a | b| (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def cluster(
    candidates: Sequence[Candidate], cosine: float, overlap: float
) -> list[list[Candidate]]:
    """Return the leader clusters of ``candidates`` (taken in position order), every size.

    A candidate joins the first cluster (in order of creation) whose leader it is similar
    to: cosine of the vectors >= ``cosine`` and Jaccard of the lesson words >= ``overlap``.
    """
    ordered = sorted(candidates, key=lambda c: c.position)
    if not ordered:
        return []
    matrix = np.asarray([c.vector for c in ordered], dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    unit = matrix / norms[:, None]
    words = [lesson_words(c.lesson) for c in ordered]
    leaders: list[int] = []
    members: list[list[int]] = []
    for i in range(len(ordered)):
        home = -1
        if leaders:
            sims = unit[leaders] @ unit[i]
            for slot in np.flatnonzero(sims >= cosine - 1e-9):
                if jaccard(words[leaders[slot]], words[i]) >= overlap:
                    home = int(slot)
                    break
        if home < 0:
            leaders.append(i)
            members.append([i])
        else:
            members[home].append(i)
    return [[ordered[i] for i in group] for group in members]


def rule_text(lesson: str) -> str:
    """Return a lesson as a rule: one line, personal data scrubbed, at most MAX_RULE chars."""
    text = one_line(scrub_text(lesson))
    return text if len(text) <= MAX_RULE else text[: MAX_RULE - 1].rstrip() + "…"


def candidates(ctx: JobContext) -> list[Candidate]:
    """Return the scars waiting to be learned, recorded by the window's end, with a vector."""
    conn = ctx.store
    needed = (suggestions.NAME, scar_table.ScarsTable.name, SemanticIndex.name)
    if any(ProjectionStore.live_generation(conn, name) is None for name in needed):
        return []
    waiting = suggestions.waiting(conn)
    rows = scar_table.by_positions(conn, [w.position for w in waiting])
    horizon = micros(ctx.window.as_of)
    kept = [
        s
        for s in rows.values()
        if s.visibility == "public" and s.archived_us is None and s.recorded_us <= horizon
    ]
    vectors = vectors_of(conn, [s.position for s in kept])
    return [
        Candidate(s.position, s.id, s.lesson, np.frombuffer(vectors[s.position], dtype=np.float32))
        for s in sorted(kept, key=lambda s: s.position)
        if s.position in vectors
    ]


class DreamJob:
    """The nightly dream: propose one rule per cluster of repeated scars."""

    name = NAME
    #: Reads no salience or graph table: the live snapshot, no replay as of the end.
    reads_as_of = False

    def __init__(self, settings: DreamSettings | None = None) -> None:
        self.settings = settings or DreamSettings()
        self.every = self.settings.every

    def plan(self, ctx: JobContext) -> Plan:
        """Return one ``suggestion.proposed`` per cluster of at least ``min_size`` scars."""
        s, window = self.settings, ctx.window
        found = candidates(ctx)
        groups = [g for g in cluster(found, s.cosine, s.overlap) if len(g) >= s.min_size]
        plan = Plan(counts={"candidates": len(found), "clusters": len(groups)})
        for group in groups:
            ids = [c.id for c in group]
            text = rule_text(group[0].lesson)
            event_id = window.event_id("suggestion.proposed|" + ",".join(sorted(ids)))
            plan.events.append(
                NewEvent.of(
                    SuggestionProposed(scars=ids, destination="rules", text=text, drafter=DRAFTER),
                    stream=f"suggestion:{event_id}",
                    actor=f"job:{NAME}",
                    id=event_id,
                    at=window.end,
                )
            )
            plan.lines.append(
                {
                    "kind": "suggestion.proposed",
                    "item": f"{len(ids)} scars @ " + ",".join(str(c.position) for c in group),
                    "detail": text,
                }
            )
        plan.counts["scars"] = sum(len(g) for g in groups)
        return plan
