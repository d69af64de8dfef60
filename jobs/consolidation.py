"""Sleep: consolidate the connections between neurons that were strongly active together.

As of a window's end, a neuron is a *candidate* when its salience is at least ``threshold``
and it was activated within the window (its salience last changed inside it): Hebbian
co-activation, counted once per window. Every existing connection between two different
candidates grows by ``boost``, capped at ``cap`` (uint16), and is appended as
``connection.reweighted`` whose ``reason`` keeps the old and new weight (ADR 0032).

Sleep appends no activation, so it feeds nothing back into salience: activity decays as it
would without sleep, and only connections between co-active neurons grow, by a bounded step.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from engram.agents.network import stream_of
from engram.jobs.base import JobContext, Plan, Window
from engram.jobs.errors import JobConfigError
from engram.ledger import NewEvent
from engram.ledger.catalog import ConnectionReweighted
from engram.projections.graph import Connection, connections_among
from engram.projections.salience import MAX, above, micros

NAME = "sleep"


@dataclass(frozen=True)
class SleepSettings:
    """How sleep chooses candidates and how much it strengthens, and when it runs."""

    threshold: int = 50_000
    boost: int = 512
    cap: int = MAX
    every: timedelta = timedelta(hours=1)
    #: Sleep early after this many ``neuron.activated`` events since the last sleep (0: never).
    after_actions: int = 0
    #: Sleep early when more neurons than this are at or above the threshold (0: never).
    saturation: int = 0

    def __post_init__(self) -> None:
        _int_in("threshold", self.threshold, 1, MAX)
        _int_in("boost", self.boost, 1, MAX)
        _int_in("cap", self.cap, 1, MAX)
        _int_in("after_actions", self.after_actions, 0, 2**62)
        _int_in("saturation", self.saturation, 0, 2**62)
        if not isinstance(self.every, timedelta) or self.every < timedelta(seconds=1):
            raise JobConfigError(f"sleep every must be at least one second, got {self.every!r}")


def consolidate(
    connections: Iterable[Connection], candidates: set[str], boost: int, cap: int = MAX
) -> list[tuple[Connection, int]]:
    """Return each connection between two different candidates with its new weight.

    A connection already at ``cap`` is left out: there is nothing to append for it.
    """
    out: list[tuple[Connection, int]] = []
    for edge in connections:
        source, target, _, weight = edge
        if source != target and source in candidates and target in candidates:
            new = min(cap, weight + boost)
            if new > weight:
                out.append((edge, new))
    return out


def candidates(conn: sqlite3.Connection, window: Window, threshold: int, rate: float) -> list[str]:
    """Return the neurons at or above ``threshold`` as of the window's end, active within it."""
    since = micros(window.start)
    items = above(conn, threshold - 1, window.as_of, ["neuron"], rate=rate)
    return sorted(item.id for item in items if item.updated_us >= since)


def active_count(conn: sqlite3.Connection, window: Window, threshold: int, rate: float) -> int:
    """Return how many neurons are at or above ``threshold`` as of the window's end."""
    return len(above(conn, threshold - 1, window.as_of, ["neuron"], rate=rate))


class SleepJob:
    """The consolidation job: plan one window's reweights."""

    name = NAME

    def __init__(self, settings: SleepSettings | None = None) -> None:
        self.settings = settings or SleepSettings()
        self.every = self.settings.every

    def plan(self, ctx: JobContext) -> Plan:
        """Return the window's ``connection.reweighted`` events and its figures."""
        s, window = self.settings, ctx.window
        chosen = candidates(ctx.conn, window, s.threshold, ctx.rate)
        edges = connections_among(ctx.conn, chosen)
        changes = consolidate(edges, set(chosen), s.boost, s.cap)
        plan = Plan(counts={"candidates": len(chosen), "connections": len(edges)})
        for (source, target, kind, old), new in changes:
            plan.events.append(
                NewEvent.of(
                    ConnectionReweighted(
                        source=source,
                        target=target,
                        type=kind,  # type: ignore[arg-type]  # read from the graph
                        weight=new,
                        reason=f"sleep: {old} -> {new}",
                    ),
                    stream=stream_of(source),
                    actor=f"job:{NAME}",
                    id=window.event_id(f"reweight|{source}|{target}|{kind}"),
                    at=window.end,
                )
            )
            plan.lines.append(
                {
                    "kind": "connection.reweighted",
                    "item": f"{source} -[{kind}]-> {target}",
                    "detail": f"{old} -> {new}",
                }
            )
        plan.counts["reweighted"] = len(changes)
        return plan


def _int_in(name: str, value: object, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise JobConfigError(f"sleep {name} must be an int in {low}..{high}, got {value!r}")
