"""agents.network.NeuronNetwork: checked writes, bootstrap, stimulate (real SQLite files)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from strategies import HISTORY_START, neuron_activated

from engram.agents.errors import (
    AgentError,
    ConnectionStateError,
    NeuronExistsError,
    UnknownNeuronError,
)
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS, NeuronNetwork
from engram.ledger import Ledger
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import INITIAL, MAX, SalienceIndex

T = HISTORY_START


@pytest.fixture
def network(tmp_path: Path) -> Iterator[NeuronNetwork]:
    with (
        Ledger.open(str(tmp_path / "ledger.db")) as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        yield NeuronNetwork(ledger, engine, actor="agent:test")


def test_bootstrap_appends_the_core_network_once(network: NeuronNetwork) -> None:
    assert network.bootstrap(at=T) == list(range(1, 8))
    assert network.bootstrap(at=T) == []
    assert network.ledger.head() == 7
    graph = network.export(as_of=T)
    assert [n["id"] for n in graph["neurons"]] == sorted(n for n, _, _ in CORE_NEURONS)
    links = {
        (n["id"], c["target"], c["type"], c["weight"])
        for n in graph["neurons"]
        for c in n["connections"]
    }
    assert links == set(CORE_CONNECTIONS)
    assert {n["salience"] for n in graph["neurons"]} == {INITIAL}
    assert graph["metadata"]["active_agents"] == ["engram"]


def test_writes_are_checked_against_the_live_graph(network: NeuronNetwork) -> None:
    network.create_neuron("a", "apples", at=T)
    network.create_neuron("b", "bananas", "semantic", at=T)
    with pytest.raises(NeuronExistsError, match="'a' exists already"):
        network.create_neuron("a", "again")
    for call, message in [
        (lambda: network.connect("a", "nope", "triggers", 10), "neuron 'nope' does not exist"),
        (lambda: network.connect("nope", "a", "triggers", 10), "neuron 'nope' does not exist"),
        (lambda: network.reweight("a", "nope", "triggers", 10), "neuron 'nope' does not exist"),
        (lambda: network.archive("nope"), "neuron 'nope' does not exist"),
    ]:
        with pytest.raises(UnknownNeuronError, match=message):
            call()
    head = network.ledger.head()
    with pytest.raises(ConnectionStateError, match="does not exist"):
        network.reweight("a", "b", "triggers", 10)
    network.connect("a", "b", "triggers", 10, at=T)
    with pytest.raises(ConnectionStateError, match="exists; reweight it instead"):
        network.connect("a", "b", "triggers", 20)
    network.connect("a", "b", "inhibits", 20, at=T)  # another type is another connection
    network.reweight("a", "b", "triggers", 30, at=T)
    network.archive("b", reason="done", at=T)
    with pytest.raises(UnknownNeuronError, match="neuron 'b' is archived"):
        network.connect("a", "b", "feeds_into", 1)
    with pytest.raises(UnknownNeuronError, match="neuron 'b' is archived"):
        network.archive("b")
    assert network.ledger.head() == head + 4  # the refusals appended nothing
    graph = network.export(as_of=T)
    assert [(n["id"], n["connections"]) for n in graph["neurons"]] == [("a", [])]
    assert issubclass(UnknownNeuronError, AgentError)


def test_stimulate_appends_one_correlated_batch(network: NeuronNetwork) -> None:
    network.bootstrap(at=T)
    network.create_neuron("island", "alone", at=T)
    result = network.stimulate({"n_perception_001": 1.0}, cause="a smell", at=T)
    # Perception reaches memory and decision at hop 1; decision's 'recalls' comes back.
    assert set(result.activation.levels) == {"n_perception_001", "n_memory_001", "n_decision_001"}
    assert len(result.positions) == 3
    assert result.positions == list(range(8 + 1, 8 + 4))
    events = list(network.ledger.read(after=8))
    assert {e.correlation_id for e in events} == {result.correlation_id}
    causes = {e.payload.id: (e.payload.cause, e.payload.strength, e.actor) for e in events}
    levels = result.activation.levels
    assert causes == {
        "n_perception_001": ("a smell", levels["n_perception_001"], "agent:test"),
        "n_memory_001": ("propagation:a smell", levels["n_memory_001"], "agent:test"),
        "n_decision_001": ("propagation:a smell", levels["n_decision_001"], "agent:test"),
    }
    # Memory gets perception's strength * 52000/65535 * salience * 0.9 at hop 1.
    assert levels["n_memory_001"] == pytest.approx(52000 / MAX * INITIAL / MAX * 0.9)
    # The activations are projected: counts went up, salience was reinforced.
    top = network.top(3, as_of=T)
    assert {i.id for i in top} == {"n_perception_001", "n_memory_001", "n_decision_001"}
    assert all(i.salience > INITIAL for i in top)
    assert network.propagate({"island": 1.0}, as_of=T).levels == {"island": 1.0}


def test_stimulate_skips_levels_below_min_strength(network: NeuronNetwork) -> None:
    network.bootstrap(at=T)
    network.ledger.append(neuron_activated("n_memory_001", T, 0.0))
    result = network.stimulate({"n_perception_001": 1.0}, at=T, min_strength=0.4)
    kept = {n for n, v in result.activation.levels.items() if v >= 0.4}
    assert kept == {"n_perception_001"}
    assert len(result.positions) == 1
    assert result.positions == [network.ledger.head()]
