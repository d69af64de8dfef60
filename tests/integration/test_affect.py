"""The affect agent (ADR 0066): urgency goes first and holds decision back until calm."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import engram
from engram.agents.affect import (
    AFFECT,
    DECISION,
    INHIBITED_AT,
    affect_agent,
    grow_affect,
    unless_inhibited,
)
from engram.agents.runner import AgentSpec, Plan, Runner, Situation, inbox_waiting
from engram.ledger import NewEvent
from engram.ledger.catalog import MemoryObserved
from engram.projections.activation import inhibition
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        opened.network.bootstrap()
        opened.ledger.append(grow_affect())
        yield opened


def decide(situation: Situation) -> Plan:
    note = MemoryObserved(agent="decision", type="plan", text="decided")
    return Plan(
        events=[NewEvent.of(note, stream="agent:decision", actor="decision")],
        handled=[s.id for s in situation.inbox],
    )


def agents(gated: bool = True) -> list[AgentSpec]:
    trigger = unless_inhibited(DECISION, inbox_waiting) if gated else inbox_waiting
    return [AgentSpec("decision", decide, trigger=trigger), affect_agent()]


def test_an_urgent_signal_goes_first_and_holds_decision_back(memory: Memory) -> None:
    world = memory.mailbox("world")
    world.send("decision", "task.new", "ship the release")
    world.send("affect", "urgent", "the database is on fire")
    runner = Runner(memory.ledger, memory.engine, agents())
    decision, affect = runner.step()
    assert (affect.outcome, decision.outcome) == ("committed", "idle")  # urgency first
    assert "urgent" in affect.reason
    weights = [
        e.payload.weight
        for e in memory.ledger.read_stream(f"neuron:{AFFECT}")
        if e.kind == "connection.reweighted"
    ]
    assert weights == [65535]
    assert [r.outcome for r in runner.step()] == ["idle", "idle"]  # still held back
    world.send("affect", "calm", "the fire is out")
    decision, affect = runner.step()
    # The calm lands first; decision's trigger, read after it, holds again.
    assert (affect.outcome, decision.outcome) == ("committed", "committed")


def test_without_the_gate_decision_would_run_through_the_urgency(memory: Memory) -> None:
    world = memory.mailbox("world")
    world.send("decision", "task.new", "ship the release")
    world.send("affect", "urgent", "the database is on fire")
    decision, affect = Runner(memory.ledger, memory.engine, agents(gated=False)).step()
    assert (affect.outcome, decision.outcome) == ("committed", "committed")


def test_the_pressure_is_the_inhibitor_s_weight_times_its_salience(memory: Memory) -> None:
    world = memory.mailbox("world")
    runner = Runner(memory.ledger, memory.engine, [affect_agent()])
    now = datetime.now(UTC)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        assert inhibition(conn, DECISION, now) == 0.0  # at rest: weight 0
    world.send("affect", "urgent.outage", "")
    runner.step()
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        assert INHIBITED_AT <= inhibition(conn, DECISION, now) <= 1.0
        assert inhibition(conn, AFFECT, now) == 0.0
