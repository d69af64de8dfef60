"""The bootstrap agent: a light first cycle that warms the brain up (ADR 0066).

It spawns once, while the ``brain:bootstrap`` stream is empty. Its cognition reads the graph
as it stands, grows what is missing of a small starting network — the core (perception,
memory, decision), the affect neuron with its resting inhibition of decision, an episodic
neuron for the current episode, and one contextual neuron per role it is given — warms them
up with a light activation, and marks ``bootstrap.completed`` in the same atomic commit
(expected on an empty stream, so two bootstrappers cannot both complete).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.agents.affect import AFFECT, DECISION, grow_affect
from engram.agents.network import CORE_CONNECTIONS, CORE_NEURONS, NeuronNetwork, stream_of
from engram.agents.runner import AgentSpec, Plan, Probe, Situation
from engram.ledger import NO_STREAM, Expectation, NewEvent
from engram.ledger.catalog import (
    BootstrapCompleted,
    ConnectionCreated,
    ConnectionType,
    NeuronActivated,
    NeuronCreated,
    NeuronType,
)

BOOTSTRAP_STREAM = "brain:bootstrap"
EPISODE = "n_episode_001"
PERCEPTION, MEMORY = "n_perception_001", "n_memory_001"
#: The strength of the warm-up activation each grown neuron gets: light, a quarter stimulus.
WARM_UP = 0.25
#: The weight of a role's links (perception to the role, the role to decision): a third.
ROLE_WEIGHT = 22000


def bootstrapped(network: NeuronNetwork) -> bool:
    """Return whether the bootstrap agent has completed (``bootstrap.completed`` is stored)."""
    return any(True for _ in network.ledger.read_stream(BOOTSTRAP_STREAM))


def _not_yet(probe: Probe) -> str:
    return "" if probe.version(BOOTSTRAP_STREAM) else "the brain has not bootstrapped yet"


def role_neuron(role: str) -> str:
    """Return the id of a role's contextual neuron (``n_role_<role>``)."""
    return "n_role_" + re.sub(r"[^a-z0-9_]+", "_", role.lower()).strip("_")


def bootstrap_agent(
    network: NeuronNetwork, *, roles: Sequence[str] = (), name: str = "bootstrap"
) -> AgentSpec:
    """Return the bootstrap agent, growing a starting network with a neuron per role."""

    def grow(situation: Situation) -> Plan:
        graph = network.export()
        existing = {n["id"] for n in graph["neurons"]}
        links = {
            (n["id"], c["target"], c["type"]) for n in graph["neurons"] for c in n["connections"]
        }
        neurons: list[tuple[str, str, NeuronType]] = [
            *CORE_NEURONS,
            (EPISODE, "the current episode", "episodic"),
        ]
        connections: list[tuple[str, str, ConnectionType, int]] = [
            *CORE_CONNECTIONS,
            (MEMORY, EPISODE, "feeds_into", 40000),
            (EPISODE, MEMORY, "recalls", 40000),  # memory retrieves the episode
        ]
        for role in roles:
            neuron = role_neuron(role)
            if neuron in {n for n, _, _ in neurons}:
                continue
            neurons.append((neuron, f"the {role} role", "contextual"))
            connections += [
                (PERCEPTION, neuron, "feeds_into", ROLE_WEIGHT),
                (neuron, DECISION, "feeds_into", ROLE_WEIGHT),
            ]
        events: list[NewEvent] = []
        expect: dict[str, Expectation] = {}
        grown: list[str] = []
        for neuron, concept, kind in neurons:
            if neuron in existing:
                continue
            created = NeuronCreated(id=neuron, concept=concept, type=kind)
            events.append(NewEvent.of(created, stream=stream_of(neuron), actor=name))
            expect[stream_of(neuron)] = NO_STREAM
            grown.append(neuron)
        if AFFECT not in existing:
            events += grow_affect(name)
            expect[stream_of(AFFECT)] = NO_STREAM
            grown.append(AFFECT)
        made = 1 if AFFECT not in existing else 0
        for source, target, link_type, weight in connections:
            if (source, target, link_type) in links:
                continue
            link = ConnectionCreated(
                source=source, target=target, type=link_type, weight=weight, reason="bootstrap"
            )
            events.append(NewEvent.of(link, stream=stream_of(source), actor=name))
            made += 1
        for neuron in grown:
            warm = NeuronActivated(id=neuron, strength=WARM_UP, cause="warm-up")
            events.append(NewEvent.of(warm, stream=stream_of(neuron), actor=name))
        done = BootstrapCompleted(agent=name, neurons=grown, connections=made)
        events.append(NewEvent.of(done, stream=BOOTSTRAP_STREAM, actor=name))
        return Plan(events=events, expect=expect)

    return AgentSpec(name, grow, trigger=_not_yet, watch=[BOOTSTRAP_STREAM])
