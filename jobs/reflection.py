"""The reflection job: the daemon lets each agent reflect when its triggers are reached.

Each window, for every agent (those configured, else every author of a memory the lexical
index holds and every agent that reflected before), :func:`~engram.agents.reflection.
reflect_if_due` is asked in a dry run; the insights of the agents that are due become the
window's ``memory.reflected`` events, appended with its ``job.completed`` in one batch. Their
ids are the reflection's own (agent and the ledger positions reflected on), so a re-run, or a
reflection by hand of the same positions, appends nothing new; an agent that is not due
appends nothing. The words come from the offline generator unless the job is given a
completer (the routing file's ``[complete.reflect]`` route, wired by the composition root).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from engram.agents.completion import Completer
from engram.agents.memory import AgentMemory
from engram.agents.reflection import Triggers, reflect_if_due, reflected_event
from engram.jobs.base import JobContext, Plan
from engram.jobs.errors import JobConfigError
from engram.projections import reflections
from engram.projections.errors import QueryError
from engram.projections.lexical.memories import memory_authors

NAME = "reflect"


@dataclass(frozen=True)
class ReflectSettings:
    """Which agents reflect, when each is due, and how often the job looks."""

    every: timedelta = timedelta(hours=1)
    #: Reflect after this many visible memories since the agent's last reflection (0: off).
    after: int = 100
    #: ... or once their importance sums to this (0: off).
    importance: float = 150.0
    #: The agents to consider; empty: every agent the store knows.
    agents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"reflect every must be at least one second, got {self.every!r}")
        agents = self.agents
        if isinstance(agents, str) or not all(isinstance(a, str) and a for a in agents):
            raise JobConfigError(f"reflect agents must be a list of names, got {agents!r}")
        try:
            Triggers(self.after, self.importance)
        except QueryError as exc:  # the agents layer's, said as a setting
            raise JobConfigError(f"reflect: {exc}") from None

    @property
    def triggers(self) -> Triggers:
        """Return the agents layer's triggers for these settings."""
        return Triggers(self.after, self.importance)


class ReflectJob:
    """The reflection job: each due agent's insights, appended with the window."""

    name = NAME
    #: Reflection reads the live projections through the agent's memory, not a replay.
    reads_as_of = False

    def __init__(
        self,
        memory_for: Callable[[str], AgentMemory],
        settings: ReflectSettings | None = None,
        *,
        completer: Completer | None = None,
    ) -> None:
        self.settings = settings or ReflectSettings()
        self.every = self.settings.every
        self.memory_for = memory_for
        self.completer = completer

    def agents(self, ctx: JobContext) -> Sequence[str]:
        """Return the agents this window considers."""
        if self.settings.agents:
            return self.settings.agents
        return sorted({*memory_authors(ctx.store), *reflections.marked_agents(ctx.store)})

    def plan(self, ctx: JobContext) -> Plan:
        """Return the due agents' reflections as the window's events."""
        window = ctx.window
        plan = Plan(counts={"agents": 0, "due": 0, "reflections": 0})
        for agent in self.agents(ctx):
            plan.counts["agents"] += 1
            outcome = reflect_if_due(
                self.memory_for(agent),
                self.settings.triggers,
                completer=self.completer,
                dry_run=True,
            )
            if outcome.status != "dry-run":
                continue
            plan.counts["due"] += 1
            for insight in outcome.insights:
                plan.events.append(
                    reflected_event(agent, insight, actor=f"job:{NAME}", at=window.end)
                )
                plan.lines.append(
                    {"kind": "memory.reflected", "item": agent, "detail": insight.text[:120]}
                )
                plan.counts["reflections"] += 1
        return plan
