"""The working set (ADR 0066): resonance decays per tick and drops under epsilon."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from strategies import HISTORY_START

from engram.agents.network import NeuronNetwork
from engram.cli import main
from engram.ledger import Ledger
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex
from engram.projections.vitality import EPSILON, HORIZON, RESONANCE_DECAY, resonate

T = HISTORY_START


def test_resonance_decays_per_tick_and_drops_under_epsilon() -> None:
    ticks = [[("a", 1.0)], [("b", 0.5)], [("b", 0.75), ("c", 3.0)]]
    first, second, third = resonate(ticks)
    assert first == {"a": 1.0}
    assert second == {"a": RESONANCE_DECAY, "b": 0.5}
    assert third == pytest.approx({"a": RESONANCE_DECAY**2, "b": 1.0, "c": 1.0})  # capped at 1
    quiet = resonate([[("a", 1.0)], *([("b", 1.0)] for _ in range(HORIZON))])
    assert quiet[HORIZON - 1]["a"] == pytest.approx(RESONANCE_DECAY ** (HORIZON - 1))
    assert quiet[HORIZON - 1]["a"] >= EPSILON
    assert "a" not in quiet[HORIZON]  # 0.8 ** 14 < 0.05: dropped


@pytest.fixture
def network(tmp_path: Path) -> Iterator[NeuronNetwork]:
    with (
        Ledger.open(str(tmp_path / "ledger.db")) as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        net = NeuronNetwork(ledger, engine, actor="test")
        for n in ("a", "b", "c", "d"):
            net.create_neuron(n, n, at=T)
        yield net


def test_the_network_s_working_set_follows_its_waves(network: NeuronNetwork) -> None:
    after = T + timedelta(hours=1)  # the history lies in the future of the clock
    assert network.working_set(as_of=after).size == 0
    network.stimulate({"a": 1.0}, at=T + timedelta(seconds=1), max_depth=0)
    network.stimulate({"b": 1.0}, at=T + timedelta(seconds=2), max_depth=0)
    held = network.working_set(as_of=after)
    assert held.resonance == pytest.approx({"a": RESONANCE_DECAY, "b": 1.0})
    assert (held.size, held.coverage) == (2, 0.5)
    assert held.mean_resonance == pytest.approx((1 + RESONANCE_DECAY) / 2)
    assert held.drift == 0.5  # b came in with the latest tick: one of {a, b}
    for k in range(HORIZON + 1):  # b leaves on the 14th of them, a before it
        network.stimulate({"c": 1.0}, at=T + timedelta(seconds=3 + k), max_depth=0)
    later = network.working_set(as_of=after)
    assert set(later.resonance) == {"c"}  # a and b decayed out
    assert later.drift == 0.0
    # As of the past, the set is what it was then.
    assert network.working_set(as_of=T + timedelta(seconds=2)).size == 2


def test_engram_vitality_reports_the_working_set(
    network: NeuronNetwork, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    network.stimulate({"a": 1.0, "b": 0.5}, at=T + timedelta(seconds=1), max_depth=0)
    out = io.StringIO()
    db = str(tmp_path / "ledger.db")
    argv = ["--ledger", db, "vitality", "--as-of", "2030-01-01T01:00:00Z"]
    assert main([*argv, "--format", "json"], out=out) == 0
    (row,) = json.loads(out.getvalue())
    assert (row["working_set"], row["coverage"], row["drift"]) == (2, 0.5, 1.0)
    assert row["mean_resonance"] == 0.75
