"""The nightly dream: scars that keep repeating become one rule suggestion for a person.

As of a window's end, the *candidates* are the failures the learning queue still waits on
(learnable, public, not archived, named by no suggestion: :func:`suggestions.waiting`; a
repeated victory is the skills job's, :mod:`engram.jobs.skills`),
recorded at or before the window's end, that have a vector in the semantic index. They are
grouped by meaning as the learning step groups them (:func:`engram.agents.repeats.group`,
ADR 0056): a scar joins the group it is most like on average when the calibrated score of
the index's embedder (:mod:`engram.agents.meaning`) reaches ``threshold``: the cosine of
their stored vectors mapped between that embedder's "unrelated" and "paraphrase" levels,
with the lessons agreeing too (their own vectors when the job is given the embedder, else
a shared content word), or the lessons' words where they agree more. Paraphrases of one
mistake, told by different agents in their own words, meet; a fixed raw cosine (0.85 under
MiniLM, where paraphrases sit well below it) would never see them.

A group of at least ``min_size`` (3) scars becomes one ``suggestion.proposed``
(destination ``rules``, drafter ``dream``, citing every scar of the group, the lesson of
its centre scrubbed of personal data as the text) in the lessons queue, where a person
reviews it: the dream never applies, merges or archives anything, and it is a dry run
unless asked to append (``engram dream --apply``); every pass reports what it found.

Its scars are then named by a suggestion, so the learning queue, and the next dream, pass
them by: a group is proposed once. The suggestion's id derives from the window and the
group's scars, so a re-run of the window appends nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.agents import repeats
from engram.agents.learning import MAX_RULE
from engram.agents.meaning import REPEAT, Calibration, calibration_of, content_words, overlap
from engram.agents.privacy import scrub_text
from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent
from engram.ledger.catalog import SuggestionProposed
from engram.projections import scars as scar_table
from engram.projections import suggestions
from engram.projections.embedding import Embedder
from engram.projections.rules import one_line
from engram.projections.salience import micros
from engram.projections.semantic import SemanticIndex, embedder_of, vectors_of
from engram.projections.store import ProjectionStore

NAME = "dream"
DRAFTER = "dream"


@dataclass(frozen=True)
class DreamSettings:
    """When two scars repeat each other, how many make a rule, and how often the dream runs.

    ``threshold`` is on the calibrated scale of :mod:`engram.agents.meaning` (0..1, the same
    for every embedder); the raw ``cosine`` and ``overlap`` of earlier versions are refused
    with a message that says so.
    """

    threshold: float = REPEAT
    min_size: int = 3
    every: timedelta = timedelta(days=1)
    cosine: float | None = None
    overlap: float | None = None

    def __post_init__(self) -> None:
        for name in ("cosine", "overlap"):
            if getattr(self, name) is not None:
                raise JobConfigError(
                    f"dream {name} is replaced by threshold, a calibrated score in (0, 1] "
                    "that means the same for every embedder (ADR 0056)"
                )
        value = self.threshold
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 < value <= 1.0:
            raise JobConfigError(f"dream threshold must be a number in (0, 1], got {value!r}")
        size = self.min_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 2:
            raise JobConfigError(f"dream min_size must be an int >= 2, got {size!r}")
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"dream every must be at least one second, got {self.every!r}")


class Candidate(NamedTuple):
    """A scar the dream may cluster: its position, event id, texts and vector."""

    position: int
    id: str
    lesson: str
    vector: Sequence[float] | npt.NDArray[np.float32]
    what: str = ""


def cluster(
    candidates: Sequence[Candidate],
    calibration: Calibration | None,
    threshold: float = REPEAT,
    embedder: Embedder | None = None,
) -> list[list[Candidate]]:
    """Return the groups of ``candidates`` (:func:`engram.agents.repeats.group`), every size,
    each in position order; with ``embedder``, their lessons' vectors count too."""
    by_id = {c.id: c for c in candidates}
    told = [repeats.Told(c.id, c.position, c.what, c.lesson) for c in candidates]
    vectors = {c.id: np.asarray(c.vector, dtype=np.float32) for c in candidates}
    lessons = happened = None
    if embedder is not None and candidates:
        embedded = embedder.embed([c.lesson for c in candidates])
        lessons = {
            c.id: np.asarray(v, dtype=np.float32) for c, v in zip(candidates, embedded, strict=True)
        }
        happened = repeats.situations(told, embedder)
    groups = repeats.group(
        [], told, vectors, calibration, threshold, lessons=lessons, happened=happened
    )
    return [[by_id[t.id] for t in sorted(g.joined, key=lambda t: t.position)] for g in groups]


def centre(group: Sequence[Candidate]) -> Candidate:
    """Return the scar whose lesson shares the most content words with the others'."""
    words = [content_words(c.lesson) for c in group]
    return group[
        max(
            range(len(group)),
            key=lambda i: (sum(overlap(words[i], w) for j, w in enumerate(words) if j != i), -i),
        )
    ]


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
    # A victory repeated is a pattern to keep, the skills job's to propose; a rule says what
    # not to do again, drawn from failures alone (a victory's lesson among them drafted a
    # rule from a success).
    waiting = [w for w in suggestions.waiting(conn) if w.kind == "failure"]
    rows = scar_table.by_positions(conn, [w.position for w in waiting])
    horizon = micros(ctx.window.as_of)
    kept = [
        s
        for s in rows.values()
        if s.visibility == "public" and s.archived_us is None and s.recorded_us <= horizon
    ]
    vectors = vectors_of(conn, [s.position for s in kept])
    return [
        Candidate(
            s.position,
            s.id,
            s.lesson,
            np.frombuffer(vectors[s.position], dtype=np.float32),
            s.what,
        )
        for s in sorted(kept, key=lambda s: s.position)
        if s.position in vectors
    ]


def calibration(ctx: JobContext) -> Calibration | None:
    """Return the calibration of the embedder that filled the semantic index."""
    found = embedder_of(ctx.store)
    return None if found is None else calibration_of(*found)


class DreamJob:
    """The nightly dream: propose one rule per cluster of repeated scars."""

    name = NAME
    #: Reads no salience or graph table: the live snapshot, no replay as of the end.
    reads_as_of = False

    def __init__(
        self, settings: DreamSettings | None = None, *, embedder: Embedder | None = None
    ) -> None:
        self.settings = settings or DreamSettings()
        self.every = self.settings.every
        #: The semantic index's embedder, to compare lessons by meaning (None: by their words).
        self.embedder = embedder

    def plan(self, ctx: JobContext) -> Plan:
        """Return one ``suggestion.proposed`` per cluster of at least ``min_size`` scars."""
        s, window = self.settings, ctx.window
        found = candidates(ctx)
        grouped = cluster(found, calibration(ctx), s.threshold, self.embedder)
        groups = [g for g in grouped if len(g) >= s.min_size]
        plan = Plan(counts={"candidates": len(found), "clusters": len(groups)})
        for group in groups:
            ids = [c.id for c in group]
            text = rule_text(centre(group).lesson)
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
