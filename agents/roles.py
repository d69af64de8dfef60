"""The observer role: an agent that reflects over two others' streams (seed 004, ADR 0066).

Seed 004 splits a mind into an **inner** agent (it thinks: proposes plans, asks), an **outer**
agent (it acts: carries plans out, answers) and an **observer** that watches both and says
what it sees. The observer here spawns when either of the agents it watches posted to the
memo or a plan of the session moved since it last looked; its cognition reads their notes
and the session's plans and posts one ``reflection`` to everyone: who said what to whom,
where each plan stands, and the requests still unanswered. A caller may pass its own
``reflect`` (a model call) instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engram.agents.runner import AgentSpec, Plan, Probe, Situation
from engram.agents.signals import SharedMemo
from engram.projections.errors import QueryError
from engram.projections.memo import Note, PlanState

Reflect = Callable[[Sequence[Note], Sequence[PlanState]], str]


def describe(notes: Sequence[Note], plans: Sequence[PlanState], watched: Sequence[str]) -> str:
    """Return a plain reflection over the watched agents' notes and the plans."""
    parts = []
    for agent in watched:
        theirs = [n for n in notes if n.agent == agent]
        kinds = ", ".join(f"{n.type} to {n.to}" for n in theirs) or "silent"
        parts.append(f"{agent}: {kinds}")
    for p in plans:
        parts.append(f"plan '{p.goal}' {p.status} {p.done}/{len(p.steps)} (by {p.updated_by})")
    open_requests = [
        n
        for n in notes
        if n.type == "request"
        and not any(m.agent == n.to and m.to == n.agent and m.position > n.position for m in notes)
    ]
    for n in open_requests:
        parts.append(f"{n.to} has not answered {n.agent}'s request #{n.position}")
    return "; ".join(parts)


def observer_agent(
    memo: SharedMemo,
    *,
    watched: Sequence[str] = ("inner", "outer"),
    name: str = "observer",
    reflect: Reflect | None = None,
) -> AgentSpec:
    """Return the observer of ``watched`` on ``memo``'s session."""
    if not watched or name in watched:
        raise QueryError("the observer watches one agent or more, never itself")

    def fresh(probe: Probe) -> str:
        # The condition names what the observer would see: a new one spawns it again.
        seen = [n.position for n in probe.memo() if n.agent in watched]
        moved = [f"{p.plan} {p.status} {p.done}/{len(p.steps)}" for p in probe.plans()]
        if not seen and not moved:
            return ""
        return f"notes of {', '.join(watched)} up to #{max(seen, default=0)}; plans: " + (
            ", ".join(moved) or "none"
        )

    def observe(situation: Situation) -> Plan:
        notes = [n for n in situation.memo if n.agent in watched]
        plans = memo.plans()
        text = reflect(notes, plans) if reflect else describe(notes, plans, watched)
        return Plan(events=[memo.note(name, text, type="reflection")])

    return AgentSpec(name, observe, trigger=fresh, session=memo.session)
