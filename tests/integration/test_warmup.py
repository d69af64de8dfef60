"""The bootstrap agent (ADR 0066): one light cycle grows a starting network and marks it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.affect import AFFECT
from engram.agents.runner import Runner
from engram.agents.warmup import (
    BOOTSTRAP_STREAM,
    EPISODE,
    bootstrap_agent,
    bootstrapped,
    role_neuron,
)
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_a_fresh_brain_is_grown_once_and_marked(memory: Memory) -> None:
    assert memory.network.export()["neurons"] == []
    assert not bootstrapped(memory.network)
    spec = bootstrap_agent(memory.network, roles=["planner", "critic"])
    runner = Runner(memory.ledger, memory.engine, [spec])
    (result,) = runner.step()
    assert result.outcome == "committed"
    assert result.reason == "the brain has not bootstrapped yet"
    graph = memory.network.export()
    ids = {n["id"] for n in graph["neurons"]}
    assert ids == {
        "n_perception_001",
        "n_memory_001",
        "n_decision_001",
        EPISODE,
        AFFECT,
        role_neuron("planner"),
        role_neuron("critic"),
    }
    assert sum(len(n["connections"]) for n in graph["neurons"]) == 4 + 2 + 1 + 4
    assert all(n["salience"] > 32768 for n in graph["neurons"])  # warmed up
    (done,) = memory.ledger.read_stream(BOOTSTRAP_STREAM)
    assert done.kind == "bootstrap.completed"
    assert sorted(done.payload.neurons) == sorted(ids)
    assert bootstrapped(memory.network)
    assert [r.outcome for r in runner.step()] == ["idle"]  # once, never again


def test_it_grows_only_what_is_missing(memory: Memory) -> None:
    memory.network.bootstrap()
    (result,) = Runner(memory.ledger, memory.engine, [bootstrap_agent(memory.network)]).step()
    assert result.outcome == "committed"
    (done,) = memory.ledger.read_stream(BOOTSTRAP_STREAM)
    assert sorted(done.payload.neurons) == sorted([EPISODE, AFFECT])
    assert done.payload.connections == 3
    # A second bootstrapper on the same ledger finds it done.
    again = Runner(memory.ledger, memory.engine, [bootstrap_agent(memory.network, name="b2")])
    assert [r.outcome for r in again.step()] == ["idle"]
