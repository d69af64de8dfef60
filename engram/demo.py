"""The README's main job: a small multi-agent session on a fresh embedded ledger.

Three agents share one ledger. They bootstrap a minimal neuron network, observe, plan and
signal each other through the ledger, meet optimistic concurrency on a shared neuron and
retry on fresh state; then the chain is verified and the session is audited in SQL.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

from ledger import NO_STREAM, ConcurrencyError, Ledger, NewEvent, default_registry, new_id
from ledger.audit import open_audit
from ledger.catalog import (
    ConnectionCreated,
    ConnectionType,
    MemoryObserved,
    NeuronActivated,
    NeuronCreated,
    NeuronType,
    SignalSent,
)

NETWORK: list[tuple[str, str, NeuronType]] = [
    ("n_perception_001", "perception", "core"),
    ("n_memory_001", "memory", "core"),
    ("n_decision_001", "decision", "core"),
]
LINKS: list[tuple[str, str, ConnectionType, int]] = [
    ("n_perception_001", "n_memory_001", "feeds_into", 52000),
    ("n_memory_001", "n_decision_001", "influences", 45000),
    ("n_decision_001", "n_perception_001", "recalls", 20000),
]


def _bootstrap(ledger: Ledger, at: datetime) -> None:
    for neuron, concept, kind in NETWORK:
        links = [
            NewEvent(
                stream=f"neuron:{neuron}",
                kind="connection.created",
                payload=ConnectionCreated(source=s, target=t, type=c, weight=w, reason="bootstrap"),
                actor="engram",
                at=at,
            )
            for s, t, c, w in LINKS
            if s == neuron
        ]
        created = NewEvent(
            stream=f"neuron:{neuron}",
            kind="neuron.created",
            payload=NeuronCreated(id=neuron, concept=concept, type=kind),
            actor="engram",
            at=at,
        )
        ledger.append([created, *links], expect=NO_STREAM)


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
    # Two agents read the memory neuron at the same version and both try to activate it.
    stream = "neuron:n_memory_001"

    def activate(actor: str, strength: float, cause: str, expect: int) -> None:
        payload = NeuronActivated(id="n_memory_001", strength=strength, cause=cause)
        ledger.append(
            NewEvent(stream=stream, kind="neuron.activated", actor=actor, payload=payload),
            expect=expect,
        )

    seen = max(e.version for e in ledger.read_stream(stream))
    activate("planner", 0.5, "recall plan", seen)
    try:
        activate("critic", 0.4, "recall critique", seen)
    except ConcurrencyError as exc:
        print(f"  critic met optimistic concurrency: {exc}; retrying on fresh state", file=out)
        activate(
            "critic", 0.4, "recall critique", max(e.version for e in ledger.read_stream(stream))
        )


def run_demo(directory: str | None, out: IO[str]) -> int:
    """Run the demo session in ``directory`` (a new temp dir when None) and print the audit."""
    folder = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="engram-demo-"))
    path = folder / "ledger.db"
    if path.exists():
        print(f"{path} exists: the demo needs a fresh directory", file=out)
        return 2
    registry = default_registry()
    now = datetime.now(UTC)
    print(f"engram demo — ledger at {path}", file=out)
    with Ledger.open(str(path), registry) as ledger:
        _bootstrap(ledger, now)
        print(f"  bootstrapped {len(NETWORK)} core neurons and {len(LINKS)} connections", file=out)
        _session(ledger, now + timedelta(seconds=1), out)
        print(
            f"  agents perception, planner and critic appended; head is {ledger.head()}", file=out
        )
        print(f"  verify: {ledger.verify()}", file=out)
        kinds = {spec.name: spec.type for spec in registry}
        with open_audit(ledger.audit_target(), kinds) as audit:
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
                    "activations per neuron",
                    "SELECT id AS neuron, count(*) AS activations, "
                    "round(sum(strength), 2) AS total_strength, string_agg(actor, ', ') AS by "
                    "FROM neuron_activated GROUP BY id ORDER BY id",
                ),
            ):
                print(f"\n{title}:", file=out)
                print(audit.query(sql).to_table(), file=out)
    print(f'\nexplore it: engram --ledger {path} log | sql "SELECT ..." | verify', file=out)
    return 0
