"""The README's main job: a small multi-agent session on a fresh embedded ledger.

Agents share one ledger. They bootstrap a minimal neuron network, observe, plan and signal
each other through the ledger. Then three agents run on the runner (:mod:`engram.demo_agents`):
perception spawns on a strong stimulus, memory and decision on their signals; memory builds
context frames, both post to the memo, meet optimistic concurrency on a shared neuron, and
the loser retries on fresh state; they sleep when nothing is left. Scars become rules,
reflections rest on evidence, the chain is verified and the session is audited in SQL.
Deterministic and offline (the hash embedder, one cognition worker).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, cast

from engram.agents.context import build_context
from engram.agents.meaning import content_words
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS
from engram.agents.reflection import reflect
from engram.demo_agents import run_agents, run_roles, warm_up
from engram.ledger import Ledger, NewEvent, new_id
from engram.ledger.audit import open_audit
from engram.ledger.catalog import MemoryObserved, NeuronActivated, SignalSent
from engram.projections.store import STORE_FILE
from engram.runtime import Memory, open_memory


def _session(ledger: Ledger, start: datetime, out: IO[str]) -> None:
    task = new_id()
    steps = [
        (
            "perception",
            "agent:perception",
            "memory.observed",
            MemoryObserved(
                agent="perception",
                text="The user asked for a summary of the Q3 outage report.",
                importance=6,
                tags=["task"],
            ),
        ),
        (
            "perception",
            "neuron:n_perception_001",
            "neuron.activated",
            NeuronActivated(id="n_perception_001", strength=0.8, cause="user request"),
        ),
        (
            "perception",
            "agent:perception",
            "signal.sent",
            SignalSent(to="planner", topic="task.new", body="summarise the Q3 outage report"),
        ),
        (
            "planner",
            "agent:planner",
            "memory.observed",
            MemoryObserved(
                agent="planner",
                type="plan",
                importance=7,
                text="Read the report, extract root cause and timeline, draft five bullet points.",
            ),
        ),
        (
            "planner",
            "neuron:n_decision_001",
            "neuron.activated",
            NeuronActivated(id="n_decision_001", strength=0.6, cause="plan drafted"),
        ),
        (
            "critic",
            "agent:critic",
            "memory.observed",
            MemoryObserved(
                agent="critic",
                type="thought",
                importance=4,
                visibility="private",
                text="The planner skipped the customer-impact section last time.",
            ),
        ),
        (
            "critic",
            "agent:critic",
            "signal.sent",
            SignalSent(to="planner", topic="review", body="include customer impact"),
        ),
    ]
    for i, (actor, stream, kind, payload) in enumerate(steps):
        ledger.append(
            NewEvent(
                stream=stream,
                kind=kind,
                payload=payload,
                actor=actor,
                at=start + timedelta(seconds=5 * i),
                correlation_id=task,
            )
        )


def _learn(memory: Memory, now: datetime, out: IO[str]) -> None:
    """A failure becomes a scar, a drafted suggestion, a reviewed rule; beliefs get evidence."""
    planner = memory.agent("planner")
    memory.scars("planner").record(
        "failure",
        "The database failover failed during the Q3 deploy: the replica lagged.",
        "Always check replica lag before a database failover.",
        importance=8,
        sources={"task": "q3-outage"},
        at=now + timedelta(seconds=205),
    )
    # Another agent hits the same mistake and tells it in its own words: a repeat.
    memory.scars("memory").record(
        "failure",
        "Promoting the standby broke writes: it was minutes behind the primary.",
        "Before failing over a database, confirm the replica's lag is near zero.",
        importance=7,
        at=now + timedelta(seconds=206),
    )
    lessons = memory.lessons()
    report = lessons.learn()
    for drafted in report.drafted:
        print(f"\nlearning step drafted ({drafted.destination}): {drafted.text}", file=out)
        if len(drafted.scars) > 1:
            print(f"  one suggestion for {len(drafted.scars)} scars of one mistake", file=out)
    lessons.apply(report.drafted[0].suggestion, "demo-reviewer", note="a person agreed")
    for rule in lessons.rules():
        print(f"  reviewed and applied; every session now loads the rule: {rule.text}", file=out)
    # Worded unlike the rule (no content word in common): served by the meaning of the
    # mistakes it was drawn from, not by shared words.
    task = "Promote the standby to primary for the billing cluster tonight."
    frame = build_context(memory.agent("decision"), task, budget=500, save=False)
    for entry in cast(list[dict[str, str]], frame.frames["constraints"]):
        shared = sorted(content_words(task) & content_words(entry["text"]))
        print(
            f"  a new task ({task!r}), {len(shared)} word(s) in common with the rule,"
            f" is served it by meaning: {entry['text']}",
            file=out,
        )
    served = planner.recall("database failover", 2, scope="rules", record=False)
    print(f"  recall(scope='rules') serves: {served.items[0].event.payload.text}", file=out)
    scars = planner.recall("failover replica lag", 1, scope="scars", record=False)
    for r in scars.items:
        print(f"  recall(scope='scars') {r.score:.2f}: {r.event.payload.lesson}", file=out)
    for seconds, text in (
        (210, "The database failover failed because the replica lagged during the deploy."),
        (220, "The deploy runbook skips the replica lag check before a database failover."),
    ):
        planner.observe(text, importance=7, at=now + timedelta(seconds=seconds))
    outcome = reflect(planner)
    print(f"\nplanner reflects ({outcome.reason}):", file=out)
    for insight in outcome.insights:
        print(f"  depth {insight.depth}: {insight.text}", file=out)
        for e in insight.evidence:
            print(f"    rests on #{e.position} [{e.payload.agent}] {e.payload.text}", file=out)


def run_demo(directory: str | None, out: IO[str]) -> int:
    """Run the demo session in ``directory`` (a new temp dir when None) and print the audit."""
    folder = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="engram-demo-"))
    path = folder / "ledger.db"
    if path.exists():
        print(f"{path} exists: the demo needs a fresh directory", file=out)
        return 2
    now = datetime.now(UTC)
    print(f"engram demo — ledger at {path}", file=out)
    with open_memory(str(path), actor="demo") as memory:
        ledger, network = memory.ledger, memory.network
        network.bootstrap(now)
        print(
            f"  bootstrapped {len(CORE_NEURONS)} core neurons and {len(CORE_CONNECTIONS)}"
            " connections",
            file=out,
        )
        warm_up(memory, out)
        _session(ledger, now + timedelta(seconds=1), out)
        print(
            f"  agents perception, planner and critic appended; head is {ledger.head()}", file=out
        )
        before = ledger.head()
        run_agents(memory, now + timedelta(seconds=30), out)
        run_roles(memory, out)
        for seconds, seed, strength, cause in (
            (60, "n_perception_001", 1.0, "new task arrived"),
            (120, "n_memory_001", 0.7, "recalled the last outage"),
            (180, "n_perception_001", 0.9, "follow-up question"),
        ):
            wave = network.stimulate(
                {seed: strength}, cause=cause, at=now + timedelta(seconds=seconds)
            )
            reached = ", ".join(f"{n} {v:.2f}" for n, v in wave.activation.strongest(3))
            swayed = "".join(
                f"; sways {n} {v:.2f} (influences: context, no activation)"
                for n, v in sorted(wave.activation.influence.items())
            )
            print(
                f"  stimulus {cause!r} on {seed}: {len(wave.positions)} activations"
                f" ({reached}){swayed}",
                file=out,
            )
        planner, critic = memory.agent("planner"), memory.agent("critic")
        planner.observe(
            "Root cause of the Q3 outage: a failed database failover during the deploy.",
            at=now + timedelta(seconds=200),
        )
        for agent in (planner, critic):
            result = agent.recall(
                "customer impact of the outage", 3, as_of=now + timedelta(seconds=240)
            )
            print(f"\n{agent.agent} recalls 'customer impact of the outage':", file=out)
            for r in result.items:
                who = f"{r.event.payload.agent}/{r.event.payload.visibility}"
                print(f"  {r.score:5.2f}  [{who}] {r.event.payload.text}", file=out)
        print("  (the critic's private thought reaches only the critic)", file=out)
        _learn(memory, now, out)
        as_of = now + timedelta(hours=1)
        print(f"\nmost salient neurons as of {as_of:%H:%M} UTC (lazy decay 0.99/h):", file=out)
        for item in network.top(5, as_of=as_of):
            print(f"  {item.id:<18} salience {item.salience:>5}  (stored {item.stored})", file=out)
        print(f"  verify: {ledger.verify()}", file=out)
        kinds = {spec.name: spec.type for spec in ledger.registry}
        store = str(Path(memory.settings.projection_store, STORE_FILE))
        with open_audit(
            ledger.audit_target(), kinds, extra_attachments={"projections": store}
        ) as audit:
            for title, sql in (
                (
                    "events by kind",
                    "SELECT kind, count(*) AS events FROM events GROUP BY kind ORDER BY kind",
                ),
                (
                    "what each agent observed",
                    "SELECT agent, type, visibility, importance, text "
                    "FROM memory_observed ORDER BY position",
                ),
                (
                    "activations per neuron: ledger against the neuron graph projection",
                    "SELECT a.id AS neuron, count(*) AS activations, "
                    "any_value(n.activation_count) AS projected, "
                    "round(sum(a.strength), 2) AS total_strength "
                    "FROM neuron_activated a JOIN projections.neurons n ON n.id = a.id "
                    "GROUP BY a.id ORDER BY a.id",
                ),
                (
                    "the agents at work: what each cycle committed (context.saved: the frames)",
                    "SELECT position, actor, kind, stream, version FROM events"
                    " WHERE actor IN ('perception', 'memory', 'decision')"
                    f" AND position > {before} ORDER BY position",
                ),
                (
                    "the lessons loop: scar, suggestion, review",
                    "SELECT kind, actor, coalesce(json_extract_string(payload, '$.lesson'),"
                    " json_extract_string(payload, '$.text')) AS text"
                    " FROM events WHERE kind LIKE 'scar.%' OR kind LIKE 'suggestion.%'"
                    " ORDER BY position",
                ),
            ):
                print(f"\n{title}:", file=out)
                print(audit.query(sql).to_table(), file=out)
    print(
        f"\nexplore it: engram --ledger {path} log | graph top | rules | reflections"
        ' | sql "SELECT ... FROM projections.neurons"',
        file=out,
    )
    return 0
