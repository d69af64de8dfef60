"""The runner and the network (ADR 0066): commits activate, spawns follow what changed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.runner import AgentSpec, Plan, Runner, Situation, salience_above
from engram.ledger import NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronCreated
from engram.projections.activation import PASS_LIMIT
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        net = opened.network
        for n in ("n1", "n2", "n3"):
            net.create_neuron(n, f"concept {n}")
        net.connect("n1", "n2", "feeds_into", 65535)
        yield opened


def activate(agent: str, neuron: str, strength: float = 1.0) -> NewEvent:
    payload = NeuronActivated(id=neuron, strength=strength, cause="thought")
    return NewEvent.of(payload, stream=f"neuron:{neuron}", actor=agent)


def once(events: list[NewEvent]) -> AgentSpec:
    done: list[bool] = []

    def think(situation: Situation) -> Plan | None:
        if done:
            return None
        done.append(True)
        return Plan(events=events)

    return AgentSpec("writer", think, trigger=lambda probe: not done)


def test_a_commit_activates_what_it_touches_and_the_wave_spreads(memory: Memory) -> None:
    runner = Runner(memory.ledger, memory.engine, [once([activate("writer", "n1")])])
    (result,) = runner.step()
    assert result.outcome == "committed"
    events = memory.ledger.get(list(result.positions))
    causes = {(e.payload.id, e.payload.cause) for e in events}
    assert causes == {("n1", "thought"), ("n2", "propagation:commit:writer")}
    assert all(e.actor == "writer" for e in events)


def test_a_write_that_is_not_an_activation_activates_its_neuron(memory: Memory) -> None:
    link = ConnectionCreated(source="n3", target="n1", type="feeds_into", weight=65535)
    runner = Runner(memory.ledger, memory.engine, [once([NewEvent.of(link, stream="neuron:n3")])])
    (result,) = runner.step()
    wave = [e.payload for e in memory.ledger.get(list(result.positions))[1:]]
    # The wave runs on the graph as it stood before the commit: n3 has no link yet.
    assert [(p.id, p.cause) for p in wave] == [("n3", "commit:writer")]
    # Without commit activation, the plan lands as written.
    quiet = Runner(
        memory.ledger,
        memory.engine,
        [once([NewEvent.of(NeuronCreated(id="n4", concept="c", type="core"), stream="neuron:n4")])],
        activate_commits=False,
    )
    (result,) = quiet.step()
    assert len(result.positions) == 1


def test_the_next_agent_spawns_from_what_the_commit_changed(memory: Memory) -> None:
    woke: list[int] = []
    listener = AgentSpec(
        "listener", lambda s: woke.append(s.head) and None, trigger=salience_above("n2", 34_000)
    )
    runner = Runner(memory.ledger, memory.engine, [once([activate("writer", "n1")]), listener])
    assert [r.outcome for r in runner.step()] == ["committed", "idle"]
    assert [r.outcome for r in runner.step()][1] == "nothing"  # n2 was activated by the commit
    assert len(woke) == 1


def test_without_commit_activation_the_next_agent_sleeps(memory: Memory) -> None:
    listener = AgentSpec("listener", lambda s: None, trigger=salience_above("n2", 34_000))
    agents = [once([activate("writer", "n1")]), listener]
    runner = Runner(memory.ledger, memory.engine, agents, activate_commits=False)
    assert [r.outcome for r in runner.step()] == ["committed", "idle"]
    assert [r.outcome for r in runner.step()] == ["idle", "idle"]


def test_reentrant_commits_halve_their_wave_past_the_pass_limit(memory: Memory) -> None:
    def think(situation: Situation) -> Plan:
        return Plan(events=[activate("looper", "n1")])

    runner = Runner(
        memory.ledger, memory.engine, [AgentSpec("looper", think, trigger=lambda p: True)]
    )
    reached = []
    for _ in range(PASS_LIMIT + 2):
        (result,) = runner.step()
        (n2,) = [e for e in memory.ledger.get(list(result.positions)) if e.payload.id == "n2"]
        reached.append(n2.payload.strength)
    # n2's salience rises a little with each pass; the halving dominates past the limit.
    full = reached[:PASS_LIMIT]
    assert full == sorted(full)
    assert reached[PASS_LIMIT] < 0.6 * reached[PASS_LIMIT - 1]
    assert reached[PASS_LIMIT + 1] < 0.6 * reached[PASS_LIMIT]
