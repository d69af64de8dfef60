"""The post-project job: each project closed in the window gets its lesson drafted for review.

For every ``project.closed`` appended in the window (the first window: every one before
its end), the job bundles the project's scars,
reflections and outcome and drafts its five-part lesson (:mod:`engram.agents.postproject`,
ADR 0080) as one ``suggestion.proposed`` — destination ``notes_inbox`` (applied, it is a
note of the doctrine, tier 2), citing every scar of the project, drafter ``postproject`` —
into the review queue, where a person decides. A project with fewer than
:data:`~engram.agents.postproject.MIN_SCARS` scars is skipped, and the report says so.

The suggestion's id derives from the window and the closure, so a re-run appends nothing
new; the window's ``job.completed`` counts ``closed``, ``drafted`` and ``skipped``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from engram.agents.completion import Completer
from engram.agents.postproject import MIN_SCARS, bundle, draft, lesson_text
from engram.jobs.base import JobContext, Plan, last_completed
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent
from engram.ledger.catalog import SuggestionProposed
from engram.projections import reflections, scars, suggestions
from engram.projections.embedding import Embedder
from engram.projections.store import ProjectionStore

NAME = "postproject"
DRAFTER = suggestions.BUNDLE_DRAFTER


@dataclass(frozen=True)
class PostProjectSettings:
    """How often the job looks for closed projects (default: every hour)."""

    every: timedelta = timedelta(hours=1)

    def __post_init__(self) -> None:
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(
                f"postproject every must be at least one second, got {self.every!r}"
            )


class PostProjectJob:
    """Draft one lesson per project closed in the window."""

    name = NAME
    #: Reads no salience or graph table: the live snapshot, no replay as of the end.
    reads_as_of = False

    def __init__(
        self,
        settings: PostProjectSettings | None = None,
        *,
        completer: Completer | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings or PostProjectSettings()
        self.every = self.settings.every
        #: The ``learn`` route's drafter (None: the offline extraction).
        self.completer = completer
        #: The semantic index's embedder, to find repeats by meaning (None: by their words).
        self.embedder = embedder

    def plan(self, ctx: JobContext) -> Plan:
        """Return one ``suggestion.proposed`` per project closed in the window (not too small)."""
        window, conn = ctx.window, ctx.store
        plan = Plan(counts={"closed": 0, "drafted": 0, "skipped": 0})
        needed = (
            scars.ScarsTable.name,
            reflections.Reflections.name,
            suggestions.SuggestionQueue.name,
        )
        if any(ProjectionStore.live_generation(conn, name) is None for name in needed):
            return plan
        # The first window reaches back to the first closure: none is left undrafted.
        first = last_completed(ctx.ledger, NAME) is None
        for closed in ctx.ledger.read(kinds=["project.closed"]):
            if not (first or window.start <= closed.at) or closed.at >= window.end:
                continue
            plan.counts["closed"] += 1
            found = bundle(conn, closed)
            item = f"{found.project} ({len(found.scars)} scars)"
            if found.too_small:
                plan.counts["skipped"] += 1
                plan.lines.append(
                    {
                        "kind": "skipped",
                        "item": item,
                        "detail": f"too small: fewer than {MIN_SCARS} scars",
                    }
                )
                continue
            lesson, by = draft(found, self.completer, self.embedder)
            text = lesson_text(found.project, lesson)
            event_id = window.event_id(f"suggestion.proposed|{closed.id}")
            plan.events.append(
                NewEvent.of(
                    SuggestionProposed(
                        scars=[s.id for s in found.scars],
                        destination="notes_inbox",
                        text=text,
                        drafter=DRAFTER if by == "offline" else f"{DRAFTER}:model",
                    ),
                    stream=f"suggestion:{event_id}",
                    actor=f"job:{NAME}",
                    id=event_id,
                    at=window.end,
                )
            )
            plan.counts["drafted"] += 1
            plan.lines.append(
                {"kind": "suggestion.proposed", "item": item, "detail": lesson.doctrine}
            )
        return plan
