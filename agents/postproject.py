"""Post-project lessons: a closed project's scars, reflections and outcome, drafted as one lesson.

When a project closes (``project.closed``), :func:`bundle` gathers what it left (ADR 0080):

- its **scars**: those tagged with the project's name, or naming it as their task
  (``sources.task``), live, public, recorded by the closure;
- its **reflections**: the public ones of the agents who recorded those scars, made between
  the first scar and the closure (the newest :data:`MAX_REFLECTIONS`);
- its **outcome**, and the hours estimated and taken, from the closure itself;
- which of its scars' lessons a reviewer **refused**: what happened still counts among the
  project's errors, but a refused lesson is never drafted again as the doctrine candidate or
  the tool, nor handed to a model as a lesson (ADR 0145).

A project with fewer than :data:`MIN_SCARS` scars is *too small*: nothing is drafted (a
lesson drawn from one or two incidents is the learning step's, scar by scar).

:func:`draft` writes the five-part lesson — estimate vs actual, the top recurring errors,
the patterns to standardise, one doctrine candidate, one tool to create — through a
:class:`~engram.agents.completion.Completer` routed as the ``learn`` use
(:func:`routed_lesson_drafter`): offline by default, an extraction: failures grouped as the
learning step groups repeats (:func:`engram.agents.repeats.group`, by meaning with the
store's embedder, else by their words; the biggest group first) give the errors, each said
once with how often it recurred, the doctrine candidate (the lesson of the biggest group a
reviewer did not refuse) and the tool (a check for it); victories grouped the same way, the
biggest and most important first, give the patterns. A model that fails or answers out of
shape falls back to the extraction, so a closure always gets its lesson.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

import msgspec

from engram.agents import repeats
from engram.agents.completion import (
    Completer,
    CompletionError,
    OfflineAnswer,
    OfflineCompleter,
    completer_for,
    load_completion_routing,
)
from engram.agents.errors import SuggestionInputError
from engram.agents.meaning import calibration_for
from engram.agents.privacy import scrub_text
from engram.ledger import NO_STREAM, ConcurrencyError, Event, Ledger, NewEvent
from engram.ledger.catalog import ProjectClosed
from engram.projections import reflections as reflection_rows
from engram.projections import scars as scar_rows
from engram.projections import suggestions
from engram.projections.embedding import Embedder
from engram.projections.salience import micros

__all__ = [
    "MIN_SCARS",
    "Bundle",
    "LessonDraft",
    "bundle",
    "close_project",
    "draft",
    "draft_offline",
    "lesson_text",
    "routed_lesson_drafter",
]

#: A project with fewer scars than this is too small for a post-project lesson.
MIN_SCARS = 3
#: The most reflections a bundle carries (the newest).
MAX_REFLECTIONS = 5
#: How many items the lists of a lesson hold at most.
TOP = 3
SYSTEM = (
    "You write the post-project lesson of a software project for the team's doctrine. "
    "From the JSON bundle (its scars: failures and victories with their lessons; its "
    "reflections; its outcome and hours), answer JSON with: estimate_vs_actual (one "
    "sentence), recurring_errors (at most 3 short lines, the most frequent first), "
    "standardise (at most 3 patterns that worked), doctrine (one rule worth keeping), "
    "tool (one tool or check to create). Use only what the bundle says. A scar marked "
    "lesson_refused had its lesson refused by a reviewer: what happened counts, but never "
    "propose that lesson again."
)

Line = Annotated[str, msgspec.Meta(min_length=1, max_length=400)]


class LessonDraft(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The five parts of a post-project lesson."""

    estimate_vs_actual: Line
    recurring_errors: Annotated[list[Line], msgspec.Meta(max_length=TOP)]
    standardise: Annotated[list[Line], msgspec.Meta(max_length=TOP)]
    doctrine: Line
    tool: Line


@dataclass(frozen=True)
class Bundle:
    """What a closed project left: its closure, scars and reflections."""

    project: str
    closure: ProjectClosed
    scars: list[scar_rows.Scar]
    reflections: list[str]
    #: The ids of the scars whose lesson a reviewer refused (ADR 0145).
    refused: frozenset[str] = frozenset()

    @property
    def too_small(self) -> bool:
        """Return whether the project has too few scars for a lesson (:data:`MIN_SCARS`)."""
        return len(self.scars) < MIN_SCARS

    def prompt(self) -> str:
        """Return the bundle as the model's JSON prompt (personal data scrubbed)."""
        c = self.closure
        return msgspec.json.encode(
            {
                "project": self.project,
                "outcome": scrub_text(c.outcome),
                "estimate_hours": c.estimate_hours,
                "actual_hours": c.actual_hours,
                "scars": [
                    {"kind": s.kind, "what": scrub_text(s.what), "lesson_refused": True}
                    if s.id in self.refused
                    else {
                        "kind": s.kind,
                        "what": scrub_text(s.what),
                        "lesson": scrub_text(s.lesson),
                    }
                    for s in self.scars
                ],
                "reflections": [scrub_text(r) for r in self.reflections],
            }
        ).decode()


def belongs(scar: scar_rows.Scar, project: str) -> bool:
    """Return whether ``scar`` is the project's: tagged with its name, or its task."""
    return project in scar.tags or scar.sources.get("task") == project


def bundle(conn: sqlite3.Connection, closed: Event) -> Bundle:
    """Return what the project closed by ``closed`` left, read from the projections."""
    closure: ProjectClosed = closed.payload
    until = micros(closed.at)
    found = [
        s
        for s in scar_rows.list_scars(conn)
        if s.visibility == "public" and s.recorded_us <= until and belongs(s, closure.project)
    ]
    found.sort(key=lambda s: s.position)
    agents = sorted({s.agent for s in found})
    since = found[0].recorded_us if found else until
    thoughts = [
        r
        for agent in agents
        for r in reflection_rows.by_agent(conn, agent)
        if r.visibility == "public" and since <= r.at_us <= until
    ]
    thoughts.sort(key=lambda r: -r.position)
    texts = [r.text for r in thoughts[:MAX_REFLECTIONS]]
    refused = frozenset(suggestions.refused_scars(conn, [s.id for s in found]))
    return Bundle(closure.project, closure, found, texts, refused)


def _groups(
    scars: Sequence[scar_rows.Scar], embedder: Embedder | None
) -> list[list[scar_rows.Scar]]:
    """Group the scars that tell one mistake (or one pattern) as the learning step does, the
    biggest group first, then the most important, then the oldest."""
    if not scars:
        return []
    told = [repeats.Told(s.id, s.position, s.what, s.lesson) for s in scars]
    vectors = lessons = happened = None
    if embedder is not None:
        vectors, lessons = repeats.embedded(told, embedder)
        happened = repeats.situations(told, embedder)
    by_id = {s.id: s for s in scars}
    calibration = calibration_for(embedder)
    found = repeats.group([], told, vectors, calibration, lessons=lessons, happened=happened)
    groups = [[by_id[t.id] for t in g.joined] for g in found]
    groups.sort(key=lambda g: (-len(g), -max(s.importance for s in g), g[0].position))
    return groups


def _line(text: str) -> str:
    text = " ".join(scrub_text(text).split())
    return text if len(text) <= 400 else text[:399] + "…"


def draft_offline(b: Bundle, embedder: Embedder | None = None) -> LessonDraft:
    """Return the lesson extracted from the bundle, no model involved; ``embedder`` (the
    store's) finds the repeats by meaning, else their words do."""
    c = b.closure
    if c.estimate_hours is not None and c.actual_hours is not None:
        ratio = c.actual_hours / c.estimate_hours if c.estimate_hours else float("inf")
        estimate = (
            f"estimated {c.estimate_hours:g} h, took {c.actual_hours:g} h"
            f" ({ratio:.2f}x the estimate)"
        )
    elif c.actual_hours is not None:
        estimate = f"took {c.actual_hours:g} h; no estimate was recorded"
    else:
        estimate = "no estimate or actual time was recorded"
    if c.outcome:
        estimate += f"; outcome: {c.outcome}"
    groups = _groups([s for s in b.scars if s.kind == "failure"], embedder)
    # Each line says how often: a failure seen once is listed as such under the heading of
    # recurring errors, where fewer than TOP recurred (ADR 0142).
    errors = [_line(f"{g[0].what} (x{len(g)})" if len(g) > 1 else f"{g[0].what} (once)")
              for g in groups[:TOP]]  # fmt: skip
    # What is proposed again is a lesson no reviewer refused (ADR 0145).
    lessons = [s.lesson for g in groups for s in g if s.id not in b.refused]
    victories = [
        [s for s in g if s.id not in b.refused]
        for g in _groups([s for s in b.scars if s.kind == "victory"], embedder)
    ]
    victories = [g for g in victories if g]
    patterns = list(dict.fromkeys(_line(g[0].lesson) for g in victories))[:TOP]
    if lessons:
        doctrine = _line(lessons[0])
        tool = _line(f"a check that runs before the work it guards: {lessons[0]}")
    elif victories:
        doctrine = _line(victories[0][0].lesson)
        tool = _line(f"a template for: {victories[0][0].lesson}")
    else:
        doctrine = _line(b.reflections[0]) if b.reflections else "nothing recurred"
        tool = "none proposed"
    return LessonDraft(_line(estimate), errors, patterns, doctrine, tool)


def _offline_answer(system: str, prompt: str) -> LessonDraft:
    raise CompletionError("the offline drafter extracts; it is never asked")


def routed_lesson_drafter(routing: str | os.PathLike[str] | None) -> Completer:
    """Return the drafter the routing file's ``[complete.learn]`` route names (offline by
    default, when the extraction stands)."""
    path = os.path.expanduser(routing) if routing else None
    offline: dict[type[msgspec.Struct], OfflineAnswer] = {LessonDraft: _offline_answer}
    return completer_for("learn", load_completion_routing(path), offline=offline)


def draft(
    b: Bundle, completer: Completer | None = None, embedder: Embedder | None = None
) -> tuple[LessonDraft, str]:
    """Return the bundle's lesson and who drafted it (``offline``, or the model's route);
    ``embedder`` groups the repeats of the offline extraction."""
    if completer is None or isinstance(completer, OfflineCompleter):
        return draft_offline(b, embedder), "offline"
    try:
        answer = completer.complete(SYSTEM, b.prompt(), LessonDraft)
    except CompletionError:
        return draft_offline(b, embedder), "offline"
    # Personal data never leaves a model's answer either (ADR 0029).
    return LessonDraft(
        _line(answer.estimate_vs_actual),
        [_line(x) for x in answer.recurring_errors],
        [_line(x) for x in answer.standardise],
        _line(answer.doctrine),
        _line(answer.tool),
    ), "model"


def lesson_text(project: str, lesson: LessonDraft) -> str:
    """Return the lesson as a note: a title line naming the project, then its five parts."""

    def items(lines: Sequence[str]) -> str:
        return "\n".join(f"- {line}" for line in lines) if lines else "- none"

    return (
        f"Post-project lesson: {project}\n\n"
        f"Estimate vs actual: {lesson.estimate_vs_actual}\n\n"
        f"Top recurring errors:\n{items(lesson.recurring_errors)}\n\n"
        f"Patterns to standardise:\n{items(lesson.standardise)}\n\n"
        f"Doctrine candidate: {lesson.doctrine}\n\n"
        f"Tool to create: {lesson.tool}\n"
    )


def close_project(
    ledger: Ledger,
    project: str,
    agent: str,
    *,
    outcome: str = "",
    estimate_hours: float | None = None,
    actual_hours: float | None = None,
    at: datetime | None = None,
) -> int:
    """Append ``project.closed`` on the stream ``project:<project>``; return its position.

    Raises:
        SuggestionInputError: an empty or overlong name, an outcome that is no str, hours
            that are not a number of 0..1e6, or a project closed already (nothing is
            appended).
    """
    for name, value in (("project", project), ("agent", agent)):
        if not isinstance(value, str) or not value.strip() or len(value) > 512:
            got = (
                f"{len(value):,} characters"
                if isinstance(value, str) and value.strip()
                else repr(value)
            )
            raise SuggestionInputError(
                f"{name} must be a non-empty name of at most 512 characters, got {got}"
            )
    if not isinstance(outcome, str):
        raise SuggestionInputError(f"outcome must be a str, got {type(outcome).__name__}")
    for name, hours in (("estimate_hours", estimate_hours), ("actual_hours", actual_hours)):
        if hours is None:
            continue
        if (
            isinstance(hours, bool)
            or not isinstance(hours, int | float)
            or not math.isfinite(hours)
            or not 0 <= hours <= 1e6
        ):
            raise SuggestionInputError(f"{name} must be a number of hours in 0..1e6, got {hours!r}")
    payload = ProjectClosed(
        project=project,
        agent=agent,
        outcome=outcome,
        estimate_hours=None if estimate_hours is None else float(estimate_hours),
        actual_hours=None if actual_hours is None else float(actual_hours),
    )
    event = NewEvent.of(payload, stream=f"project:{project}", actor=agent, at=at)
    try:
        return ledger.append(event, expect=NO_STREAM)[0]
    except ConcurrencyError:
        raise SuggestionInputError(
            f"project {project!r} is closed already: a project closes once (nothing was appended)"
        ) from None
