"""The learning bench runs its workload end to end and reports what the loop changed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engram.agents.meaning import CALIBRATIONS, calibration_for
from engram.bench import SUITES, learning_bench, learning_check, learning_fresh, learning_workload
from engram.bench.common import QUICK, Config
from engram.bench.learning_workload import MISTAKES, UNRELATED, Mistake
from engram.projections.embedding import HashEmbedder
from engram.projections.embedding.onnx_provider import ready as onnx_ready
from engram.projections.embedding.st import available as st_available


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
    tuned = learning_bench.WORKLOADS[0]
    outcome = learning_bench._measure(config, "hash", HashEmbedder(), tuned)
    n, d = outcome.values["refused"]
    assert (n, d) == (0, 2 * (sum(len(m.tasks) for m in MISTAKES) + len(UNRELATED)))
    worked, drafted = outcome.values["destinations"]
    assert worked == drafted > 0
    assert outcome.values["unrelated"][0] == 0
    assert "applied rule served" in learning_bench.table([outcome])
    # The embedder's ceiling is measured over the same tasks as the serving.
    assert outcome.values["ceiling"][1] == outcome.values["served"][1] > 0
    # The margin serving (ADR 0077), the default before the background test (ADR 0092), is
    # counted over the same tasks beside it.
    assert outcome.values["margin_served"][1] == outcome.values["served"][1]
    right, given = outcome.values["margin_precision"]
    assert 0 <= right <= given
    assert outcome.values["margin_unrelated"][1] == len(UNRELATED)
    assert "margin serving" in learning_bench.table([outcome])


def test_the_check_workload_shares_no_mistake_and_no_words_with_the_tuned_one() -> None:
    check = learning_check.MISTAKES
    _held_apart(check, learning_workload.MISTAKES)
    keys = {m.key for m in check}
    assert set(learning_check.REFUSED) <= keys
    assert learning_check.ALWAYS in keys
    assert learning_check.ALWAYS not in learning_check.REFUSED
    assert not set(learning_check.UNRELATED) & set(UNRELATED)
    assert [w.name for w in learning_bench.WORKLOADS][:2] == ["tuned", "check"]


@pytest.mark.skipif(not (onnx_ready() or st_available()), reason="MiniLM is not installed")
def test_the_bench_runs_minilm_on_whichever_runtime_is_installed() -> None:
    model = learning_bench.minilm_or_none(None)
    assert model is not None
    assert (
        calibration_for(model)
        is CALIBRATIONS[("sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2")]
    )


def test_the_fresh_workload_shares_no_mistake_and_no_words_with_the_other_two() -> None:
    fresh = learning_fresh.MISTAKES
    _held_apart(fresh, (*learning_workload.MISTAKES, *learning_check.MISTAKES))
    assert set(learning_fresh.REFUSED) <= {m.key for m in fresh}
    assert learning_fresh.ALWAYS in {m.key for m in fresh}
    assert [w.name for w in learning_bench.WORKLOADS] == ["tuned", "check", "fresh"]


def _held_apart(mistakes: Sequence[Mistake], others: Sequence[Mistake]) -> None:
    """Assert ``mistakes`` are ten, each told two or three times with distinct lessons and
    three tasks, and share no key and no scar or task text with ``others``."""
    assert len(mistakes) == 10
    assert not {m.key for m in mistakes} & {m.key for m in others}
    texts = {t for m in others for s in m.scars for t in s} | {t for m in others for t in m.tasks}
    for mistake in mistakes:
        assert 2 <= len(mistake.scars) <= 3
        assert len(mistake.tasks) == 3
        assert len({s.lesson for s in mistake.scars}) == len(mistake.scars)
        assert not ({t for s in mistake.scars for t in s} | set(mistake.tasks)) & texts
