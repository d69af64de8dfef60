"""Reflection: an agent turns recent memories into beliefs that cite their evidence.

``reflect(memory)`` follows Generative Agents (Park et al. 2023): focal questions from the
agent's memories since its last reflection, a recall per question, insights citing the
recalled memories, appended as ``memory.reflected`` events (one batch, all or nothing) with
``depth = 1 + the deepest evidence`` (an observation is 0, so a belief resting on beliefs is
deeper). The words come from :class:`~engram.agents.insight.OfflineGenerator` unless a
:class:`~engram.agents.completion.Completer` is given; a model that fails leaves the
reflection undone, with the reason in the outcome.

The recalls a reflection makes are not recorded as ``memory.recalled``: the appended
reflection is the record of what served it, its evidence (ADR 0030). The event ids derive
from the agent and the window reflected on (its last reflection's position, the newest
memory considered), so a retried or concurrent reflection of the same window appends
nothing new. ``reflect_if_due`` reflects only when the reflections projection's counters
reach a :class:`Triggers`' thresholds.
"""

from __future__ import annotations

import math
import os
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

from engram.agents.completion.port import Completer, CompletionError
from engram.agents.completion.routing import OfflineRoute, completer_for, load_completion_routing
from engram.agents.insight import (
    QUESTIONS,
    Draft,
    Generator,
    ModelGenerator,
    OfflineGenerator,
    words,
)
from engram.agents.memory import AgentMemory
from engram.ledger import Event, IdempotencyError, NewEvent
from engram.ledger.catalog import MemoryReflected
from engram.projections import reflections, salience
from engram.projections.errors import QueryError
from engram.projections.reflections import MISSING_IMPORTANCE, TriggerState

#: How many of the newest memories since the last reflection the questions are asked of.
RECENT = 100
#: How far back (in ledger positions) the newest memories are looked for.
SCAN = 20_000
#: How many memories each focal question recalls.
PER_QUESTION = 15
#: How many of the agent's own earlier reflections on a question may join its evidence.
EARLIER = 5
#: Event ids of reflections: uuid5 in this namespace over (agent, window, ordinal).
NAMESPACE = uuid.UUID("5f0c2f8e-6a43-5b8e-9a51-3c0d5e7a1b42")

Status = Literal["reflected", "dry-run", "already-reflected", "nothing-new", "no-insight",
                 "failed", "not-due"]  # fmt: skip


@dataclass(frozen=True)
class Triggers:
    """When an agent is due to reflect; 0 turns a trigger off.

    ``every``: after this many visible memories since its last reflection. ``importance``:
    once their importance sums to this (150 in Generative Agents).
    """

    every: int = 100
    importance: float = 150.0

    def __post_init__(self) -> None:
        if not isinstance(self.every, int) or isinstance(self.every, bool) or self.every < 0:
            raise QueryError(f"every must be an int >= 0 (0: off), got {self.every!r}")
        value = self.importance
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise QueryError(f"importance must be a number >= 0 (0: off), got {value!r}")
        if math.isnan(value) or math.isinf(value) or value < 0:
            raise QueryError(f"importance must be a finite number >= 0 (0: off), got {value!r}")

    def due(self, state: TriggerState) -> bool:
        """Say whether ``state`` reaches a trigger that is on."""
        by_count = self.every > 0 and state.visible >= self.every
        by_importance = self.importance > 0 and state.importance >= self.importance
        return by_count or by_importance


class Insight(NamedTuple):
    """One reflection, appended or (in a dry run) to be appended."""

    id: str
    text: str
    question: str
    evidence: list[Event]
    depth: int
    importance: int
    visibility: str
    position: int | None  # None until appended


class Outcome(NamedTuple):
    """What a reflection did, and why."""

    agent: str
    status: Status
    reason: str
    insights: list[Insight]
    window: tuple[int, int]  # (last reflection's position, newest memory considered)
    generator: str
    state: TriggerState


def depth_of(event: Event) -> int:
    """Return an event's depth as evidence: a reflection's stated depth, else 0."""
    return int(event.payload.depth) if event.kind == "memory.reflected" else 0


def reflection_id(agent: str, window: tuple[int, int], ordinal: int) -> str:
    """Return the event id of the ``ordinal``-th reflection of ``agent`` on ``window``."""
    return str(uuid.uuid5(NAMESPACE, f"{agent}\x00{window[0]}\x00{window[1]}\x00{ordinal}"))


def trigger_state(memory: AgentMemory) -> TriggerState:
    """Return the agent's counters since its last reflection, caught up to the ledger."""
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        return reflections.trigger_state(conn, memory.agent)


def routed_reflector(routing: str | os.PathLike[str] | None) -> Completer | None:
    """Return the completer the routing file's ``[complete.reflect]`` route names, or None
    when it is offline (the default): then the extractive generator reflects."""
    path = os.path.expanduser(routing) if routing else None
    table = load_completion_routing(path)
    if isinstance(table.route("reflect"), OfflineRoute):
        return None
    return completer_for("reflect", table)


def reflect_if_due(
    memory: AgentMemory,
    triggers: Triggers | None = None,
    *,
    completer: Completer | None = None,
    dry_run: bool = False,
) -> Outcome:
    """Reflect when a trigger is reached; otherwise append nothing and say where it stands."""
    triggers = Triggers() if triggers is None else triggers
    if not isinstance(triggers, Triggers):
        raise QueryError(f"triggers must be a Triggers, got {type(triggers).__name__}")
    state = trigger_state(memory)
    if not triggers.due(state):
        reason = (
            f"{state.visible} visible memories (importance {state.importance}) since"
            f" position {state.last_position}; due at {triggers.every or 'off'}"
            f" or importance {triggers.importance or 0:g}{'' if triggers.importance else ' (off)'}"
        )
        window = (state.last_position, state.last_position)
        return Outcome(memory.agent, "not-due", reason, [], window, "", state)
    return reflect(memory, completer, dry_run=dry_run)


def reflect(
    memory: AgentMemory, completer: Completer | None = None, *, dry_run: bool = False
) -> Outcome:
    """Reflect on the agent's memories since its last reflection; append the insights.

    Without ``completer`` the offline generator writes them. ``dry_run`` appends nothing
    (and records no recall) and returns what would be appended. A model that fails (down,
    refusing, or answering out of schema) gives status ``failed`` with the reason; nothing
    is appended.
    """
    if not isinstance(memory, AgentMemory):
        raise QueryError(f"memory must be an AgentMemory, got {type(memory).__name__}")
    if completer is not None and not callable(getattr(completer, "complete", None)):
        raise QueryError(f"completer must be a Completer, got {type(completer).__name__}")
    generator: Generator = OfflineGenerator() if completer is None else ModelGenerator(completer)
    state = trigger_state(memory)
    recent = _recent(memory, state.last_position)
    name = generator.fingerprint
    if not recent:
        window = (state.last_position, state.last_position)
        reason = f"no memory visible to {memory.agent!r} since position {state.last_position}"
        return Outcome(memory.agent, "nothing-new", reason, [], window, name, state)
    window = (state.last_position, recent[-1].position)
    try:
        drafts = _drafts(memory, generator, recent)
    except CompletionError as exc:
        reason = f"the model {name} gave no usable answer ({type(exc).__name__}: {exc})"
        return Outcome(memory.agent, "failed", reason, [], window, name, state)
    if not drafts:
        reason = f"{len(recent)} memories since position {window[0]} gave no insight"
        return Outcome(memory.agent, "no-insight", reason, [], window, name, state)
    insights = [
        _insight(memory.agent, window, i, question, draft)
        for i, (question, draft) in enumerate(drafts)
    ]
    if dry_run:
        reason = f"{len(insights)} insight(s) from {len(recent)} memories; nothing appended"
        return Outcome(memory.agent, "dry-run", reason, insights, window, name, state)
    return _append(memory, insights, window, name, state, len(recent))


def _recent(memory: AgentMemory, after: int) -> list[Event]:
    """Return the newest :data:`RECENT` memories the agent can see, after ``after``, live."""
    head = memory.ledger.head()
    start = max(after, head - SCAN)
    found = [
        e
        for e in memory.ledger.read(start, kinds=["memory.observed"])
        if e.payload.visibility == "public" or e.payload.agent == memory.agent
    ][-RECENT:]
    if not found:
        return []
    with memory.engine.read() as conn:
        facts = salience.memory_facts(conn, [e.position for e in found])
    return [e for e in found if not (f := facts.get(e.position)) or not f.archived]


def _drafts(
    memory: AgentMemory, generator: Generator, recent: list[Event]
) -> list[tuple[str, Draft]]:
    """Ask the questions, recall for each, and collect the insights (first of each text),
    until :data:`QUESTIONS` questions' worth are in hand."""
    drafts: list[tuple[str, Draft]] = []
    seen: set[str] = set()
    for question in generator.questions(recent):
        if len(drafts) >= QUESTIONS:
            break
        if not question.query.strip():
            continue
        # Evidence for a question: the nearest memories, however weak (no floor).
        recalled = memory.recall(question.query, PER_QUESTION, record=False, min_score=0)
        candidates = [r.event for r in recalled.items]
        candidates += _earlier(memory, question.query, {e.id for e in candidates})
        for draft in generator.insights(question, candidates):
            if draft.text and draft.evidence and draft.text not in seen:
                seen.add(draft.text)
                drafts.append((question.text, draft))
    return drafts


def _earlier(memory: AgentMemory, query: str, known: set[str]) -> list[Event]:
    """Return the agent's own earlier reflections that share a content word with ``query``."""
    wanted = set(words(query))
    if not wanted:
        return []
    with memory.engine.read() as conn:
        mine = reflections.by_agent(conn, memory.agent, limit=200)
    hits = [r.position for r in mine if wanted & set(words(r.text)) and r.id not in known]
    return memory.ledger.get(sorted(hits[:EARLIER])) if hits else []


def _insight(agent: str, window: tuple[int, int], i: int, question: str, draft: Draft) -> Insight:
    evidence = draft.evidence
    importance = max(
        MISSING_IMPORTANCE if e.payload.importance is None else int(e.payload.importance)
        for e in evidence
    )
    private = any(e.payload.visibility == "private" for e in evidence)
    return Insight(
        reflection_id(agent, window, i),
        draft.text,
        question,
        evidence,
        1 + max(depth_of(e) for e in evidence),
        importance,
        "private" if private else "public",
        None,
    )


def reflected_event(
    agent: str, insight: Insight, *, actor: str | None = None, at: datetime | None = None
) -> NewEvent:
    """Return the ``memory.reflected`` event recording ``insight`` on ``agent``'s stream.

    Its id is the insight's (derived from the agent and the window), so appending the same
    reflection twice appends it once. ``actor`` defaults to the agent (a job names itself).
    """
    return NewEvent.of(
        MemoryReflected(
            agent=agent,
            text=insight.text,
            evidence=[e.id for e in insight.evidence],
            depth=insight.depth,
            question=insight.question,
            importance=insight.importance,
            visibility=insight.visibility,  # type: ignore[arg-type]
        ),
        stream=f"agent:{agent}",
        actor=agent if actor is None else actor,
        id=insight.id,
        at=at,
    )


def _append(
    memory: AgentMemory,
    insights: list[Insight],
    window: tuple[int, int],
    name: str,
    state: TriggerState,
    considered: int,
) -> Outcome:
    events = [reflected_event(memory.agent, i) for i in insights]
    try:
        positions = memory.ledger.append(events)
    except IdempotencyError:
        # Another process reflected on this same window first, in other words.
        done = _appended(memory, insights[0].id)
        if done is None:
            raise
        reason = f"window {window} was reflected on already (position {done})"
        return Outcome(memory.agent, "already-reflected", reason, [], window, name, state)
    appended = [i._replace(position=p) for i, p in zip(insights, positions, strict=True)]
    reason = f"{len(appended)} insight(s) from {considered} memories since position {window[0]}"
    return Outcome(memory.agent, "reflected", reason, appended, window, name, state)


def _appended(memory: AgentMemory, id: str) -> int | None:
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = reflections.by_id(conn, id)
    return None if found is None else found.position
