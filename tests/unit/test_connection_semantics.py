"""What each connection type carries in a wave (ADR 0064).

Every neuron is created at ``T`` and the wave is evaluated at ``T``: saliences are exact,
32768 (INITIAL) unless an activation raised them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from strategies import HISTORY_START, connection_created, neuron_activated, neuron_created

from engram.ledger import Ledger, NewEvent
from engram.projections.activation import TRIGGER_RATIO, GraphSnapshot
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import INITIAL, MAX, SalienceIndex

T = HISTORY_START
S = INITIAL / MAX


def hop(strength: float, weight: int, salience: float = S, decay: float = 0.9) -> float:
    return strength * weight / MAX * salience * decay


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


def _snapshot(ledger: Ledger, tmp_path: Path, events: list[NewEvent]) -> GraphSnapshot:
    ledger.append(events)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine:
        engine.catch_up()
        with engine.read() as conn:
            return GraphSnapshot(conn)


def test_influences_sway_the_target_s_context_without_activating_it(
    ledger: Ledger, tmp_path: Path
) -> None:
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *(neuron_created(n, T) for n in ("a", "b", "c", "d")),
            connection_created("a", "b", 65535, T, type="influences"),
            connection_created("b", "c", 65535, T),  # b is never activated: c stays dark
            connection_created("a", "d", 40000, T),
        ],
    )
    wave = graph.propagate({"a": 1.0}, T)
    assert set(wave.levels) == {"a", "d"}
    assert wave.influence == {"b": pytest.approx(hop(1.0, 65535))}
    assert "c" not in wave.hops


def test_recalls_run_backward_the_target_retrieves_its_source(
    ledger: Ledger, tmp_path: Path
) -> None:
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *(neuron_created(n, T) for n in ("episode", "cue")),
            connection_created("episode", "cue", 50000, T, type="recalls"),
        ],
    )
    assert graph.propagate({"episode": 1.0}, T).levels == {"episode": 1.0}  # not forward
    back = graph.propagate({"cue": 1.0}, T)
    assert back.levels["episode"] == pytest.approx(hop(1.0, 50000))
    assert back.hops == {"cue": 0, "episode": 1}


def test_triggers_fire_on_a_sharp_change_not_on_every_pass(ledger: Ledger, tmp_path: Path) -> None:
    events = [
        *(neuron_created(n, T) for n in ("quiet", "busy", "alarm1", "alarm2")),
        connection_created("quiet", "alarm1", 65535, T, type="triggers"),
        connection_created("busy", "alarm2", 65535, T, type="triggers"),
    ]
    # busy fires all the time: its salience saturates near the top of the range.
    events += [neuron_activated("busy", T, 1.0) for _ in range(12)]
    graph = _snapshot(ledger, tmp_path, events)
    busy = graph.stored[graph.index["busy"]] / MAX  # all at T: no decay yet
    assert busy > 0.95
    # The same strength is a sharp change for the quiet neuron, a usual pass for the busy one.
    strength = 1.2
    assert strength >= TRIGGER_RATIO * S
    assert strength < TRIGGER_RATIO * busy
    # (No refractory lock here: busy fired at T, and the lock is ADR 0065's, tested apart.)
    wave = graph.propagate({"quiet": strength, "busy": strength}, T, refractory=0.0)
    assert wave.levels["alarm1"] == pytest.approx(hop(strength, 65535))
    assert "alarm2" not in wave.levels
    # A weak pass through the quiet neuron is no anomaly either.
    assert "alarm1" not in graph.propagate({"quiet": 0.5}, T).levels
