"""The demo's agents at work: perception, memory and decision on the runner (ADR 0035, 0037).

First the bootstrap agent warms the brain up (ADR 0066). Then:

- **perception** spawns when the perception neuron's salience passes a threshold (a strong
  stimulus): it observes the request, broadcasts it and posts to the session memo;
- **memory** spawns on the signal: it builds context frames for the request (saved as
  ``context.saved``), activates the memory neuron, tells decision what the frames hold;
- **decision** spawns on the same broadcast and also activates the memory neuron: it read the
  neuron's version before memory committed, so its commit conflicts; the runner reads again,
  decision now finds memory's signal too and commits a plan on fresh state;
- then every trigger is quiet and the runner sleeps.

Last, inner, outer and observer (seed 004) work on an addressed memo and a plan.

One cognition worker and fixed agent order make the story the same on every run.
"""

from __future__ import annotations

from datetime import datetime
from typing import IO

from engram.agents.context import build_context
from engram.agents.memory import AgentMemory
from engram.agents.roles import observer_agent
from engram.agents.runner import (
    AgentSpec,
    Plan,
    Probe,
    Runner,
    Situation,
    any_of,
    inbox_waiting,
    memo_addressed,
)
from engram.agents.warmup import BOOTSTRAP_STREAM, bootstrap_agent
from engram.ledger import NewEvent
from engram.ledger.catalog import MemoPosted, MemoryObserved, NeuronActivated, SignalSent
from engram.projections.embedding import CachedEmbedder
from engram.runtime import Memory

SESSION = "q3-outage"
SHARED = "neuron:n_memory_001"
#: The perception neuron's salience that wakes perception (out of 65,535).
WAKE = 30_000
REQUEST = "summarise the Q3 outage report: root cause, timeline, customer impact"
#: The session's roles beyond the core: the bootstrap agent grows a neuron for each.
ROLES = ("planner", "critic")
ROLES_SESSION = "q3-roles"


def _note(agent: str, text: str) -> NewEvent:
    return NewEvent.of(
        MemoPosted(agent=agent, session=SESSION, text=text), stream=f"memo:{SESSION}", actor=agent
    )


def _activate(agent: str, strength: float, cause: str) -> NewEvent:
    payload = NeuronActivated(id="n_memory_001", strength=strength, cause=cause)
    return NewEvent.of(payload, stream=SHARED, actor=agent)


def _signal(agent: str, to: str, topic: str, body: str) -> NewEvent:
    payload = SignalSent(to=to, topic=topic, body=body)
    return NewEvent.of(payload, stream=f"agent:{agent}", actor=agent)


def warm_up(memory: Memory, out: IO[str]) -> None:
    """Run the bootstrap agent's one cycle and tell what it grew (ADR 0066)."""
    runner = Runner(memory.ledger, memory.engine, [bootstrap_agent(memory.network, roles=ROLES)])
    (result,) = runner.step()
    (done,) = [
        e.payload for e in memory.ledger.get(list(result.positions)) if e.stream == BOOTSTRAP_STREAM
    ]
    print(
        f"  the brain warms up ({result.reason}): bootstrap grew {len(done.neurons)} neurons"
        f" ({', '.join(done.neurons)}) and {done.connections} connections in one cycle,"
        " then marked bootstrap.completed",
        file=out,
    )


def run_agents(memory: Memory, at: datetime, out: IO[str]) -> None:
    """Stimulate perception, run the three agents until all sleep, and tell what happened."""
    memory.concepts("memory").upsert(
        "runbook.failover",
        "pattern",
        "database failover runbook",
        payload={"steps": ["check replica lag", "promote the replica", "repoint the app"]},
        links=[{"to": "incident.q3", "rel": "applies_to", "weight": 0.8}],
    )
    memory.concepts("memory").upsert(
        "incident.q3", "episode", "Q3 outage: failed database failover during the deploy"
    )
    frames: list[str] = []
    # Cognition runs on a worker thread; the embedding cache's SQLite connection belongs to
    # the main thread, so the memory agent embeds through the cache's own model.
    embedder = memory.embedder
    if isinstance(embedder, CachedEmbedder):
        embedder = embedder.embedder
    thinker = AgentMemory("memory", memory.ledger, memory.engine, embedder=embedder,
                          searcher=memory.searcher)  # fmt: skip

    def perceive(s: Situation) -> Plan | None:
        observed = MemoryObserved(agent="perception", text=f"user request: {REQUEST}", importance=7)
        return Plan(
            events=[
                NewEvent.of(observed, stream="agent:perception", actor="perception"),
                _signal("perception", "*", "task.new", REQUEST),
                _note("perception", "new task: the Q3 outage summary"),
            ]
        )

    def woken(probe: Probe) -> str:
        done = any(n.agent == "perception" for n in probe.memo())
        salience = probe.salience("n_perception_001")
        return "" if done or salience <= WAKE else f"perception's salience {salience} > {WAKE}"

    def recall(s: Situation) -> Plan | None:
        task = next(sig for sig in s.inbox if sig.topic == "task.new")
        context = build_context(thinker, task.body, task="summarise", budget=600)
        sizes = ", ".join(f"{name} {tokens}" for name, tokens in context.sections.items())
        frames.append(
            f"{len(context.items)} items, {context.tokens}/{context.budget} tokens"
            f" ({context.tokenizer}); sections in order: {sizes}"
        )
        knowledge = ", ".join(sorted(_ids(context.frames["knowledge"])))  # type: ignore[arg-type]
        return Plan(
            events=[
                _activate("memory", 0.5, "recalled the last outage"),
                _signal("memory", "decision", "context.ready", f"knowledge: {knowledge}"),
                _note("memory", f"context built: {len(context.items)} items"),
            ],
            handled=[task.id],
        )

    def decide(s: Situation) -> Plan | None:
        ready = [sig for sig in s.inbox if sig.topic == "context.ready"]
        if not ready:
            return Plan(
                events=[
                    _activate("decision", 0.4, "weighing the request"),
                    _note("decision", "waiting for context"),
                ],
                handled=[sig.id for sig in s.inbox],
            )
        plan = MemoryObserved(
            agent="decision",
            type="plan",
            importance=8,
            text=f"Draft the summary from the runbook and the incident ({ready[0].body}).",
        )
        return Plan(
            events=[
                _activate("decision", 0.4, "weighing the request"),
                NewEvent.of(plan, stream="agent:decision", actor="decision"),
                _note("decision", "plan drafted from memory's context"),
            ],
            handled=[sig.id for sig in s.inbox],
        )

    memory.network.stimulate({"n_perception_001": 1.0}, cause="a user request", at=at)
    agents = [
        AgentSpec("perception", perceive, trigger=woken, session=SESSION),
        AgentSpec("memory", recall, watch=[SHARED], session=SESSION),
        AgentSpec("decision", decide, trigger=inbox_waiting, watch=[SHARED], session=SESSION),
    ]
    runner = Runner(memory.ledger, memory.engine, agents, workers=1, seed=7)
    print("\nthe agents at work (spawn on triggers, think, commit, retry, sleep):", file=out)
    step = 0
    while True:
        results = [r for r in runner.step() if r.outcome != "idle"]
        if not results:
            break
        step += 1
        for r in results:
            extra = f" after {r.attempts} attempts (a conflict, retried)" if r.attempts > 1 else ""
            print(
                f"  step {step}: {r.agent} {r.outcome} {len(r.positions)} events{extra}"
                f" [spawned on: {r.reason}]",
                file=out,
            )
    for line in frames:
        print(f"  memory's context frames: {line}", file=out)
    print(f"  memo: {' | '.join(n.text for n in memory.memo(SESSION).read())}", file=out)
    print(f"  all triggers quiet after step {step}: the agents sleep", file=out)


def run_roles(memory: Memory, out: IO[str]) -> None:
    """Run inner, outer and observer on an addressed memo and a plan (seed 004, ADR 0066)."""
    memo = memory.memo(ROLES_SESSION)
    steps = ["find the root cause", "build the timeline", "write the summary"]

    def inner(s: Situation) -> Plan | None:
        if any(n.type == "answer" for n in s.memo if n.to == "inner"):
            return Plan(events=[memo.progress("inner", "q3-summary", "DONE", done=3)])
        return Plan(
            events=[
                memo.proposal("inner", "summarise the Q3 outage", steps, plan="q3-summary"),
                memo.note("inner", "carry out q3-summary", to="outer", type="request"),
            ]
        )

    def outer(s: Situation) -> Plan | None:
        return Plan(
            events=[
                memo.progress("outer", "q3-summary", "IN_PROGRESS", done=2, note="drafting"),
                memo.note("outer", "root cause and timeline found", to="inner", type="answer"),
            ]
        )

    asked = any_of(lambda p: "" if p.plans() else "a summary is asked for", memo_addressed)
    agents = [
        AgentSpec("inner", inner, trigger=asked, session=ROLES_SESSION),
        AgentSpec("outer", outer, trigger=memo_addressed, session=ROLES_SESSION),
        observer_agent(memo),
    ]
    print(
        "\ninner, outer and observer (addressed memo, a plan moved by events, reflections):",
        file=out,
    )
    for step, r in enumerate(Runner(memory.ledger, memory.engine, agents).run(), 1):
        print(f"  {step}. {r.agent} {r.outcome} [spawned on: {r.reason}]", file=out)
    for n in memo.read():
        print(f"  memo #{n.position} {n.agent} -> {n.to} [{n.type}]: {n.text}", file=out)
    for p in memo.plans():
        print(
            f"  plan '{p.goal}': {p.status} {p.done}/{len(p.steps)} (by {p.updated_by})", file=out
        )


def _ids(tree: dict[str, object], prefix: str = "") -> list[str]:
    out = []
    for key, value in tree.items():
        if key == "_":
            out.append(prefix)
        elif isinstance(value, dict):
            out += _ids(value, f"{prefix}.{key}" if prefix else key)
    return out
