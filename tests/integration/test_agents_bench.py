"""The agents bench suite at a tiny scale: its figures are measured, not made up."""

from __future__ import annotations

from pathlib import Path

from engram.bench import SUITES, agents_bench
from engram.bench.common import QUICK, Config


def test_the_agents_suite_measures_cycles_and_context_frames_at_a_tiny_scale(
    tmp_path: Path,
) -> None:
    assert "agents" in SUITES
    config = Config("agents", True, 1, None, "", str(tmp_path), QUICK, 7)
    (cycles,) = agents_bench.cycles(config, steps=3)
    assert cycles.unit == "cycles/s"
    assert len(cycles.engram_samples) == len(cycles.reference_samples) == 1
    assert cycles.engram_samples[0] > 0
    assert cycles.reference_samples[0] > 0
    p50, p99 = agents_bench.contexts(config, memories=300, concepts=40, queries=6)
    assert p50.unit == p99.unit == "ms"
    assert 0 < p50.engram_samples[0] <= p99.engram_samples[0]
    assert 0 < p50.reference_samples[0] <= p99.reference_samples[0]
    assert "goal p50 <= 30 ms" in p50.note
    assert p50.name == "build_context p50, 300 memories + 40 concepts"
