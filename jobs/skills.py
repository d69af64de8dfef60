"""The skills job: a successful pattern that recurs across tasks becomes a skill proposal.

As of a window's end, the *candidates* are the live, public victories recorded by then with
a vector in the semantic index. They are grouped by meaning as the learning step groups
scars (:func:`engram.agents.repeats.group`, ADR 0056/0067); a group whose victories span
at least ``min_tasks`` (3) distinct tasks — a victory's task is its ``sources.task``; one
recorded without a task counts as a task of its own — is a recurring pattern (ADR 0081).

Each pattern becomes one ``suggestion.proposed``: destination ``skill``, drafter
``skills``, citing every victory, the text the lesson of its centre and the tasks it worked
in. Proposals are deduplicated: a pattern whose victories are all cited by a skill proposal
already made (pending or reviewed, by this job) is passed by; one that adds victories to
such a proposal joins it (``suggestion.joined``) instead of making a second. A victory the
learning step drafted already is left to its suggestion: a pattern is proposed from the
others only where they still span ``min_tasks`` tasks (counted ``drafted`` otherwise). A person
reviews them (the hub, ``engram suggestions``); an applied one is a skill of the doctrine,
offered by the MCP server and context frames. Nothing is applied here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from engram.agents import repeats
from engram.agents.meaning import REPEAT
from engram.jobs.base import JobContext, Plan
from engram.jobs.dream import Candidate, calibration, centre, rule_text
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent
from engram.ledger.catalog import SuggestionJoined, SuggestionProposed
from engram.projections import scars as scar_table
from engram.projections import suggestions
from engram.projections.embedding import Embedder
from engram.projections.salience import micros
from engram.projections.semantic import SemanticIndex, vectors_of
from engram.projections.store import ProjectionStore

NAME = "skills"
DRAFTER = "skills"


@dataclass(frozen=True)
class SkillSettings:
    """How alike victories must be, across how many tasks, and how often the job runs."""

    threshold: float = REPEAT
    min_tasks: int = 3
    every: timedelta = timedelta(days=1)

    def __post_init__(self) -> None:
        value = self.threshold
        if not isinstance(value, int | float) or isinstance(value, bool) or not 0.0 < value <= 1.0:
            raise JobConfigError(f"skills threshold must be a number in (0, 1], got {value!r}")
        size = self.min_tasks
        if not isinstance(size, int) or isinstance(size, bool) or size < 2:
            raise JobConfigError(f"skills min_tasks must be an int >= 2, got {size!r}")
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"skills every must be at least one second, got {self.every!r}")


def tasks_of(victories: Sequence[scar_table.Scar]) -> list[str]:
    """Return the distinct tasks of ``victories`` (a victory without one: its own id)."""
    return list(dict.fromkeys(str(v.sources.get("task") or v.id) for v in victories))


def skill_text(lesson: str, tasks: Sequence[str], count: int) -> str:
    """Return a skill proposal's text: the pattern, then where it worked."""
    named = [t for t in tasks if len(t) < 80][:5]
    where = f" ({', '.join(named)})" if named else ""
    return f"{rule_text(lesson)}\n\nWorked in {count} tasks{where}."


class SkillJob:
    """Propose a skill for each successful pattern that recurs across tasks."""

    name = NAME
    #: Reads no salience or graph table: the live snapshot, no replay as of the end.
    reads_as_of = False

    def __init__(
        self, settings: SkillSettings | None = None, *, embedder: Embedder | None = None
    ) -> None:
        self.settings = settings or SkillSettings()
        self.every = self.settings.every
        #: The semantic index's embedder, to compare lessons by meaning (None: by their words).
        self.embedder = embedder

    def plan(self, ctx: JobContext) -> Plan:
        """Return a proposal (or a join) per recurring pattern not proposed yet."""
        s, window, conn = self.settings, ctx.window, ctx.store
        plan = Plan(
            counts={"victories": 0, "patterns": 0, "proposed": 0, "joined": 0, "drafted": 0}
        )
        needed = (suggestions.NAME, scar_table.ScarsTable.name, SemanticIndex.name)
        if any(ProjectionStore.live_generation(conn, name) is None for name in needed):
            return plan
        horizon = micros(ctx.window.as_of)
        rows = [
            v
            for v in scar_table.list_scars(conn, kind="victory")
            if v.visibility == "public" and v.recorded_us <= horizon
        ]
        vectors = vectors_of(conn, [v.position for v in rows])
        by_id = {v.id: v for v in rows if v.position in vectors}
        found = [
            Candidate(
                v.position,
                v.id,
                v.lesson,
                np.frombuffer(vectors[v.position], dtype=np.float32),
                v.what,
            )
            for v in sorted(by_id.values(), key=lambda v: v.position)
        ]
        plan.counts["victories"] = len(found)
        told = [repeats.Told(c.id, c.position, c.what, c.lesson) for c in found]
        arrays = {c.id: np.asarray(c.vector, dtype=np.float32) for c in found}
        lessons = None
        if self.embedder is not None and found:
            embedded = self.embedder.embed([c.lesson for c in found])
            lessons = {
                c.id: np.asarray(v, dtype=np.float32) for c, v in zip(found, embedded, strict=True)
            }
        groups = repeats.group([], told, arrays, calibration(ctx), s.threshold, lessons=lessons)
        made = [
            x
            for x in suggestions.listing(conn, None, None)
            if x.drafter == DRAFTER and x.destination == "skill"
        ]
        cited = {scar: x.id for x in made for scar in x.scars}
        # A victory the learning step drafted already (cited by a suggestion of its own) is
        # under review there: proposing it again here made two suggestions of one pattern.
        drafted = {
            scar
            for x in suggestions.listing(conn, None, None)
            if not (x.drafter == DRAFTER and x.destination == "skill")
            for scar in x.scars
        }
        candidates = {c.id: c for c in found}
        for g in groups:
            members = sorted((candidates[t.id] for t in g.joined), key=lambda c: c.position)
            tasks = tasks_of([by_id[c.id] for c in members])
            if len(tasks) < s.min_tasks:
                continue
            plan.counts["patterns"] += 1
            ids = [c.id for c in members]
            owners = sorted({cited[i] for i in ids if i in cited})
            fresh = [i for i in ids if i not in cited and i not in drafted]
            if owners and not fresh:
                continue  # proposed already
            if not owners and len(fresh) < len(ids):
                # Some were drafted by the learning step: what is left must still recur.
                members = [c for c in members if c.id in fresh]
                tasks = tasks_of([by_id[c.id] for c in members])
                if len(tasks) < s.min_tasks:
                    plan.counts["drafted"] += 1
                    continue
                ids = fresh
            if owners:
                key = f"suggestion.joined|{owners[0]}|" + ",".join(sorted(fresh))
                plan.events.append(
                    NewEvent.of(
                        SuggestionJoined(suggestion=owners[0], scars=fresh, drafter=DRAFTER),
                        stream=f"suggestion:{owners[0]}",
                        actor=f"job:{NAME}",
                        id=window.event_id(key),
                        at=window.end,
                    )
                )
                plan.counts["joined"] += 1
                plan.lines.append(
                    {"kind": "suggestion.joined", "item": owners[0], "detail": f"{len(fresh)}"}
                )
                continue
            text = skill_text(centre(members).lesson, tasks, len(tasks))
            event_id = window.event_id("suggestion.proposed|" + ",".join(sorted(ids)))
            plan.events.append(
                NewEvent.of(
                    SuggestionProposed(scars=ids, destination="skill", text=text, drafter=DRAFTER),
                    stream=f"suggestion:{event_id}",
                    actor=f"job:{NAME}",
                    id=event_id,
                    at=window.end,
                )
            )
            plan.counts["proposed"] += 1
            plan.lines.append(
                {
                    "kind": "suggestion.proposed",
                    "item": f"{len(ids)} victories in {len(tasks)} tasks",
                    "detail": text.splitlines()[0],
                }
            )
        return plan
