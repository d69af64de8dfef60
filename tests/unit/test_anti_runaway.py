"""Anti-runaway on a network with a feedback loop (ADR 0065): bounded, no oscillation.

Four neurons connected every way round at full weight form the loop. Each wave re-enters the
network from what the previous wave changed (its levels become the next seeds, as an agent's
commit re-enters it after a wave woke the agent), one wave every ``step`` seconds. The
total activation of each wave is the measure.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from strategies import HISTORY_START

from engram.agents.network import NeuronNetwork
from engram.ledger import Ledger
from engram.projections.activation import PASS_LIMIT, REFRACTORY
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

T = HISTORY_START
LOOP = ("a", "b", "c", "d")
WAVES = 12


@pytest.fixture
def network(tmp_path: Path) -> Iterator[NeuronNetwork]:
    with (
        Ledger.open(str(tmp_path / "ledger.db")) as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        net = NeuronNetwork(ledger, engine, actor="loop")
        for n in LOOP:
            net.create_neuron(n, f"loop {n}", at=T)
        for s in LOOP:
            for t in LOOP:
                if s != t:
                    net.connect(s, t, "feeds_into", 65535, at=T)
        yield net


def reverberate(net: NeuronNetwork, step: float, *, guarded: bool) -> list[float]:
    """Run the loop and return each wave's total activation."""
    seeds = {"a": 1.0}
    totals = []
    for k in range(1, WAVES + 1):
        if not seeds:  # the chain died out
            totals.append(0.0)
            continue
        at = T + timedelta(seconds=10 + k * step)
        wave = net.stimulate(
            seeds,
            cause=f"pass {k}",
            at=at,
            refractory=REFRACTORY if guarded else 0.0,
            passes=k if guarded else 1,
        ).activation
        totals.append(sum(wave.levels.values()))
        seeds = {n: min(v, 1e6) for n, v in wave.levels.items() if v > 0.01}
    return totals


def _turns(totals: list[float]) -> int:
    """How often the wave-to-wave change flips sign (an oscillation flips on every wave)."""
    diffs = [b - a for a, b in itertools.pairwise(totals) if abs(b - a) > 1e-9]
    return sum(1 for x, y in itertools.pairwise(diffs) if (x > 0) != (y > 0))


def test_without_the_guards_the_loop_runs_away(network: NeuronNetwork) -> None:
    totals = reverberate(network, 2 * REFRACTORY, guarded=False)
    assert totals[-1] > 1000 * totals[0]


@pytest.mark.parametrize(
    "step", [REFRACTORY / 2, 2 * REFRACTORY], ids=["faster-than-the-lock", "slower"]
)
def test_the_guards_keep_the_loop_bounded_and_steady(network: NeuronNetwork, step: float) -> None:
    totals = reverberate(network, step, guarded=True)
    print(f"step {step}s totals per wave: {[round(t, 3) for t in totals]}")
    assert max(totals) <= 3**PASS_LIMIT * totals[0]  # bounded
    assert totals[-1] < totals[0]  # and dying out once the chain has passed its limit
    assert _turns(totals) <= 1  # rises at most once, then falls: no oscillation


def test_bad_loop_settings_are_refused(network: NeuronNetwork) -> None:
    with pytest.raises(QueryError, match="passes"):
        network.propagate({"a": 1.0}, passes=0)
    with pytest.raises(QueryError, match="refractory"):
        network.propagate({"a": 1.0}, refractory=-1.0)


def test_a_neuron_that_just_fired_receives_but_relays_nothing(network: NeuronNetwork) -> None:
    network.create_neuron("e", "after d", at=T)
    network.connect("d", "e", "feeds_into", 65535, at=T)
    fired = T + timedelta(seconds=100)
    network.stimulate({"d": 1.0}, cause="d fires", at=fired, max_depth=0)
    soon = fired + timedelta(seconds=REFRACTORY / 2)
    locked = network.propagate({"a": 1.0}, as_of=soon, max_depth=2)
    assert locked.levels["d"] > 0.01  # d is reached ...
    assert "e" not in locked.levels  # ... but locked: nothing reaches e through it
    later = fired + timedelta(seconds=REFRACTORY)
    assert "e" in network.propagate({"a": 1.0}, as_of=later, max_depth=2).levels
    assert "e" in network.propagate({"d": 1.0}, as_of=soon, max_depth=1).levels  # a seed relays
