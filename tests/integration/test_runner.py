"""The agent runner (ADR 0035): spawn → cognition → commit → sleep, on real ledgers."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.runner import (
    AgentSpec,
    Plan,
    RetryPolicy,
    Runner,
    Situation,
    inbox_waiting,
    salience_above,
)
from engram.ledger import NewEvent
from engram.ledger.catalog import MemoryObserved, NeuronActivated, NeuronCreated
from engram.projections.errors import QueryError
from engram.runtime import Memory

WORKER = Path(__file__).parent / "_workers" / "runner_worker.py"
NEURON = "neuron:n1"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        opened.ledger.append(
            NewEvent.of(NeuronCreated(id="n1", concept="memory", type="core"), stream=NEURON)
        )
        yield opened


def activate(agent: str, cause: str, strength: float = 0.5) -> NewEvent:
    return NewEvent.of(
        NeuronActivated(id="n1", strength=strength, cause=cause), stream=NEURON, actor=agent
    )


def test_a_signal_spawns_its_agent_and_is_handled_in_the_commit(memory: Memory) -> None:
    seen: list[Situation] = []

    def plan(situation: Situation) -> Plan:
        seen.append(situation)
        (signal,) = situation.inbox
        note = MemoryObserved(agent="planner", text=f"planning: {signal.body}")
        event = NewEvent.of(note, stream="agent:planner", actor="planner")
        return Plan(events=[event], handled=[signal.id])

    runner = Runner(memory.ledger, memory.engine, [AgentSpec("planner", plan)])
    assert [r.outcome for r in runner.step()] == ["idle"]
    memory.mailbox("perception").send("planner", "task.new", "summarise the report")
    (result,) = runner.step()
    assert (result.outcome, result.attempts, len(result.positions)) == ("committed", 1, 2)
    kinds = [e.kind for e in memory.ledger.get(list(result.positions))]
    assert kinds == ["memory.observed", "signal.acked"]
    assert memory.mailbox("planner").inbox() == []
    assert [r.outcome for r in runner.step()] == ["idle"]
    assert seen[0].head == result.positions[0] - 1


def test_two_agents_changing_one_neuron_both_land_the_second_on_fresh_state(
    memory: Memory,
) -> None:
    def counter(agent: str) -> AgentSpec:
        def think(situation: Situation) -> Plan:
            return Plan(events=[activate(agent, f"count {situation.versions[NEURON] + 1}")])

        return AgentSpec(agent, think, trigger=lambda probe: True, watch=[NEURON])

    runner = Runner(memory.ledger, memory.engine, [counter("a"), counter("b")], seed=1)
    first, second = runner.step()
    # Both read version 1; a commits first, b conflicts, reads version 2 and thinks again.
    assert (first.outcome, first.attempts) == ("committed", 1)
    assert (second.outcome, second.attempts) == ("committed", 2)
    causes = [e.payload.cause for e in list(memory.ledger.read_stream(NEURON))[1:]]
    assert causes == ["count 2", "count 3"]


def test_a_conflict_that_never_clears_ends_after_the_policy_s_attempts(memory: Memory) -> None:
    def meddling(situation: Situation) -> Plan:
        memory.ledger.append(activate("someone", "in between"))  # another writer, every time
        return Plan(events=[activate("a", "mine")])

    spec = AgentSpec("a", meddling, trigger=lambda probe: True, watch=[NEURON])
    runner = Runner(memory.ledger, memory.engine, [spec], policy=RetryPolicy(3, backoff=0))
    (result,) = runner.step()
    assert (result.outcome, result.attempts) == ("conflict", 3)
    assert "neuron:n1" in (result.error or "")
    causes = [e.payload.cause for e in list(memory.ledger.read_stream(NEURON))[1:]]
    assert causes == ["in between"] * 3


def test_failures_end_a_cycle_not_the_runner(memory: Memory) -> None:
    def broken(situation: Situation) -> Plan:
        raise RuntimeError("the model is down")

    def bad_plan(situation: Situation) -> Plan:
        return Plan(events=[NewEvent(stream="agent:x", kind="memory.observd", payload={})])

    def fine(situation: Situation) -> Plan:
        return Plan(events=[activate("fine", "ok")])

    always = lambda probe: True  # noqa: E731
    runner = Runner(
        memory.ledger,
        memory.engine,
        [
            AgentSpec("x", broken, always),
            AgentSpec("y", bad_plan, always),
            AgentSpec("z", fine, always),
        ],
    )
    x, y, z = runner.step()
    assert (x.outcome, y.outcome, z.outcome) == ("failed", "failed", "committed")
    assert "the model is down" in (x.error or "")
    assert "memory.observd" in (y.error or "")


def test_salience_spawns_an_agent_once_a_stimulus_is_strong_enough(memory: Memory) -> None:
    fired: list[int] = []

    def perceive(situation: Situation) -> Plan | None:
        fired.append(situation.head)
        return None

    spec = AgentSpec("perception", perceive, trigger=salience_above("n1", 40_000))
    runner = Runner(memory.ledger, memory.engine, [spec])
    assert [r.outcome for r in runner.step()] == ["idle"]
    memory.ledger.append(activate("world", "stimulus", strength=1.0))
    assert [r.outcome for r in runner.step()] == ["nothing"]
    assert len(fired) == 1


def test_bad_runner_settings_are_refused(memory: Memory) -> None:
    spec = AgentSpec("a", lambda s: None, inbox_waiting)
    with pytest.raises(QueryError, match="distinct"):
        Runner(memory.ledger, memory.engine, [spec, spec])
    with pytest.raises(QueryError, match="workers"):
        Runner(memory.ledger, memory.engine, [spec], workers=0)
    with pytest.raises(QueryError, match="attempts"):
        RetryPolicy(attempts=0)


def run_two_processes(ledger: str, schema: str | None, cycles: int = 40) -> list[dict[str, int]]:
    extra = [schema] if schema else []
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), ledger, name, str(cycles), *extra],
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("left", "right")
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    return [json.loads(out.strip().splitlines()[-1]) for out in outs]


def check_no_lost_update(memory: Memory, outcomes: list[dict[str, int]]) -> None:
    causes = [e.payload.cause for e in memory.ledger.read_stream("neuron:counter")]
    committed = sum(o.get("committed", 0) for o in outcomes)
    assert committed == 80
    assert causes == [str(v) for v in range(1, committed + 1)]


def test_two_processes_on_one_sqlite_ledger_lose_no_update(tmp_path: Path) -> None:
    ledger = str(tmp_path / "shared.db")
    with engram.open_memory(ledger):
        pass
    outcomes = run_two_processes(ledger, None)
    with engram.open_memory(ledger) as memory:
        check_no_lost_update(memory, outcomes)


@pytest.mark.postgres
def test_two_processes_on_one_postgres_ledger_lose_no_update(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    store = str(tmp_path / "store")
    with engram.open_memory(pg_dsn, pg_schema=pg_schema, projections=store):
        pass
    outcomes = run_two_processes(pg_dsn, pg_schema)
    with engram.open_memory(pg_dsn, pg_schema=pg_schema, projections=store) as memory:
        check_no_lost_update(memory, outcomes)
