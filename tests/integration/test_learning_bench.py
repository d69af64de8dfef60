"""The learning bench runs its workload end to end and reports what the loop changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.bench import SUITES, learning_bench
from engram.bench.common import QUICK, Config
from engram.bench.learning_workload import MISTAKES, UNRELATED
from engram.projections.embedding import HashEmbedder


def test_the_workload_tells_each_mistake_in_different_words() -> None:
    assert len(MISTAKES) >= 10
    for mistake in MISTAKES:
        assert 2 <= len(mistake.scars) <= 3
        lessons = [m.lesson for m in mistake.scars]
        assert len(set(lessons)) == len(lessons)
        assert len(mistake.tasks) >= 2
    assert UNRELATED


@pytest.mark.slow
def test_the_learning_suite_measures_the_loop_under_the_hash_embedder(tmp_path: Path) -> None:
    assert "learning" in SUITES
    config = Config("learning", True, 1, None, "", str(tmp_path), QUICK, 7)
    outcome = learning_bench._measure(config, "hash", HashEmbedder())
    n, d = outcome.values["refused"]
    assert (n, d) == (0, 2 * (sum(len(m.tasks) for m in MISTAKES) + len(UNRELATED)))
    worked, drafted = outcome.values["destinations"]
    assert worked == drafted > 0
    assert outcome.values["unrelated"][0] == 0
    assert "applied rule served" in learning_bench.table([outcome])
