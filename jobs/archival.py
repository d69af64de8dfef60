"""Archival: retire what has gone quiet, by event, leaving the ledger whole (ADR 0015, 0032).

Each *source* is one function from the projections known at the window's end to the events
that archive its items; the job runs them all. Today: neurons activated fewer than
``min_activations`` times and created more than ``neuron_age`` before the window's end
(``neuron.archived``), and memories never recalled and observed more than ``memory_age``
before it (``memory.archived``, one event per agent and 10,000 positions), and scars never
recalled and recorded more than ``scar_age`` before it (``scar.archived``, one event per
agent and 10,000 positions). A new item source is one more function in :data:`SOURCES`.

The scars table is read live, not replayed as of the window's end: recall counts only grow
and archival only happens once, so a scar the live table shows never recalled and not
archived was so at the window's end too; a scar first recalled after the window's end is
kept (never archived wrongly, at worst a window late).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from engram.agents.network import stream_of
from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent, chunked
from engram.ledger.catalog import MemoryArchived, NeuronArchived, ScarArchived
from engram.projections import scars as scar_table
from engram.projections.graph import dormant_neurons
from engram.projections.salience import micros, unrecalled_memories
from engram.projections.store import ProjectionStore

NAME = "archive"
#: Positions per ``memory.archived`` event: keeps each payload far below the size limit.
MEMORY_CHUNK = 10_000


@dataclass(frozen=True)
class ArchiveSettings:
    """What counts as gone quiet, and how often the job looks."""

    min_activations: int = 1
    neuron_age: timedelta = timedelta(days=30)
    memory_age: timedelta = timedelta(days=90)
    scar_age: timedelta = timedelta(days=90)
    every: timedelta = timedelta(days=1)

    def __post_init__(self) -> None:
        value = self.min_activations
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise JobConfigError(f"archive min_activations must be an int >= 0, got {value!r}")
        for name in ("neuron_age", "memory_age", "scar_age", "every"):
            age = getattr(self, name)
            if not isinstance(age, timedelta) or age < timedelta(seconds=1):
                raise JobConfigError(f"archive {name} must be at least one second, got {age!r}")


Source = Callable[[JobContext, ArchiveSettings, Plan], None]


def neurons(ctx: JobContext, settings: ArchiveSettings, plan: Plan) -> None:
    """Plan ``neuron.archived`` for each dormant neuron."""
    window = ctx.window
    before = micros(window.as_of - settings.neuron_age)
    found = dormant_neurons(ctx.conn, settings.min_activations, before)
    reason = (
        f"archive: fewer than {settings.min_activations} activations,"
        f" older than {settings.neuron_age}"
    )
    for neuron in found:
        plan.events.append(
            NewEvent.of(
                NeuronArchived(id=neuron, reason=reason),
                stream=stream_of(neuron),
                actor=f"job:{NAME}",
                id=window.event_id(f"neuron.archived|{neuron}"),
                at=window.end,
            )
        )
        plan.lines.append({"kind": "neuron.archived", "item": neuron, "detail": reason})
    plan.counts["neurons"] = len(found)


def memories(ctx: JobContext, settings: ArchiveSettings, plan: Plan) -> None:
    """Plan ``memory.archived`` for the memories never recalled, grouped by agent."""
    window = ctx.window
    positions = unrecalled_memories(ctx.conn, micros(window.as_of - settings.memory_age))
    by_agent: dict[str, list[int]] = {}
    for chunk in chunked(positions, 500):
        for event in ctx.ledger.get(list(chunk)):
            by_agent.setdefault(event.payload.agent, []).append(event.position)
    reason = f"archive: never recalled, older than {settings.memory_age}"
    for agent in sorted(by_agent):
        for chunk in chunked(by_agent[agent], MEMORY_CHUNK):
            group = list(chunk)
            plan.events.append(
                NewEvent.of(
                    MemoryArchived(agent=agent, positions=group, reason=reason),
                    stream=f"agent:{agent}",
                    actor=f"job:{NAME}",
                    id=window.event_id(f"memory.archived|{agent}|{group[0]}"),
                    at=window.end,
                )
            )
        plan.lines += (
            {"kind": "memory.archived", "item": f"{agent}@{p}", "detail": reason}
            for p in by_agent[agent]
        )
    plan.counts["memories"] = len(positions)


def scars(ctx: JobContext, settings: ArchiveSettings, plan: Plan) -> None:
    """Plan ``scar.archived`` for the scars never recalled, grouped by agent."""
    window = ctx.window
    if ProjectionStore.live_generation(ctx.store, scar_table.ScarsTable.name) is None:
        plan.counts["scars"] = 0  # no scars projection in this store: nothing to retire
        return
    found = scar_table.never_recalled(ctx.store, micros(window.as_of - settings.scar_age))
    by_agent: dict[str, list[int]] = {}
    for scar in found:
        by_agent.setdefault(scar.agent, []).append(scar.position)
    reason = f"archive: scar never recalled, older than {settings.scar_age}"
    for agent in sorted(by_agent):
        for chunk in chunked(by_agent[agent], MEMORY_CHUNK):
            group = list(chunk)
            plan.events.append(
                NewEvent.of(
                    ScarArchived(positions=group, reason=reason),
                    stream=f"agent:{agent}",
                    actor=f"job:{NAME}",
                    id=window.event_id(f"scar.archived|{agent}|{group[0]}"),
                    at=window.end,
                )
            )
    plan.lines += (
        {"kind": "scar.archived", "item": f"{s.agent}@{s.position}", "detail": reason}
        for s in found
    )
    plan.counts["scars"] = len(found)


SOURCES: tuple[Source, ...] = (neurons, memories, scars)


class ArchiveJob:
    """The archival job: plan one window's archive events from every source."""

    name = NAME

    def __init__(
        self, settings: ArchiveSettings | None = None, sources: tuple[Source, ...] = SOURCES
    ) -> None:
        self.settings = settings or ArchiveSettings()
        self.every = self.settings.every
        self.sources = sources

    def plan(self, ctx: JobContext) -> Plan:
        """Return the window's archive events and a count per source."""
        plan = Plan()
        for source in self.sources:
            source(ctx, self.settings, plan)
        return plan
