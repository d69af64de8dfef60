"""The runner and the network (ADR 0066): commits activate, spawns follow what changed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.runner import AgentSpec, Plan, Runner, Situation, ledger_moved, salience_above
from engram.ledger import NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronCreated
from engram.projections.activation import PASS_LIMIT
from engram.projections.errors import QueryError
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
        memory.ledger, memory.engine, [AgentSpec("looper", think, trigger=ledger_moved)]
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


def test_a_trigger_that_stays_true_spawns_once_per_new_condition(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    condition = {"now": "n3 looks odd"}
    thoughts: list[str] = []

    def think(situation: Situation) -> None:
        thoughts.append(situation.reason)

    spec = AgentSpec("watcher", think, trigger=lambda probe: condition["now"])
    runner = Runner(memory.ledger, memory.engine, [spec])
    with caplog.at_level("INFO", logger="engram.agents.runner"):
        outcomes = [runner.step()[0].outcome for _ in range(3)]
        assert outcomes == ["nothing", "idle", "idle"]  # it stays true: no respawn
        condition["now"] = "n3 looks odder"
        assert runner.step()[0].reason == "n3 looks odder"  # a new condition
        condition["now"] = ""
        assert runner.step()[0].outcome == "idle"
        condition["now"] = "n3 looks odder"
        assert runner.step()[0].outcome == "nothing"  # it ended, then held again: new
    assert thoughts == ["n3 looks odd", "n3 looks odder", "n3 looks odder"]
    assert [r.getMessage() for r in caplog.records if "spawned" in r.getMessage()] == [
        "agent watcher spawned: n3 looks odd",
        "agent watcher spawned: n3 looks odder",
        "agent watcher spawned: n3 looks odder",
    ]


def test_each_new_signal_spawns_and_a_waiting_one_does_not(memory: Memory) -> None:
    spec = AgentSpec("reader", lambda s: None)  # reads, never acknowledges
    runner = Runner(memory.ledger, memory.engine, [spec])
    mailbox = memory.mailbox("sender")
    mailbox.send("reader", "task.new", "one")
    first = runner.step()[0]
    assert first.outcome == "nothing"
    assert "task.new from sender" in first.reason
    assert runner.step()[0].outcome == "idle"  # the same signal still waits
    mailbox.send("reader", "task.more", "two")
    assert "task.more" in runner.step()[0].reason


def test_a_cooldown_defers_a_new_condition_without_losing_it(memory: Memory) -> None:
    condition = {"now": "first"}
    spec = AgentSpec("slow", lambda s: None, trigger=lambda p: condition["now"], cooldown=0.3)
    runner = Runner(memory.ledger, memory.engine, [spec])
    assert runner.step()[0].outcome == "nothing"
    condition["now"] = "second"
    assert runner.step()[0].outcome == "idle"  # new, but within the cooldown
    time.sleep(0.35)
    assert runner.step()[0].reason == "second"
    with pytest.raises(QueryError, match="cooldown"):
        Runner(memory.ledger, memory.engine, [AgentSpec("x", lambda s: None, cooldown=-1)])
