"""Recall works out relevance lazily, down the final order, and serves what working it out
for every candidate serves (ADR 0068)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import engram
from engram.agents import memory as memory_module
from engram.agents.memory import AgentMemory
from engram.agents.recalled import RecallResult

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
WORDS = [
    "database",
    "outage",
    "checkout",
    "alice",
    "berlin",
    "release",
    "friday",
    "hiking",
    "mountains",
    "pasta",
    "tomato",
    "certificate",
    "expires",
    "garden",
    "sister",
    "painting",
    "guitar",
    "concert",
    "budget",
    "invoice",
    "server",
    "deploy",
    "rollback",
    "coffee",
    "lunch",
    "meeting",
    "vacation",
    "paris",
    "dog",
    "cat",
    "school",
]
FILLERS = ("Note: ", "Reminder: ", "", "", "")


def _store(path: Path, seed: int) -> Iterator[AgentMemory]:
    """A store of generated memories: shared words, exact and near copies, ages, ratings."""
    rng = random.Random(seed)
    with engram.open_memory(str(path / f"lazy-{seed}.db")) as opened:
        agent = opened.agent("ana")
        texts: list[str] = []
        for i in range(160):
            if texts and rng.random() < 0.15:  # a copy: a filler, a word added, or verbatim
                base = rng.choice(texts)
                text = rng.choice(FILLERS) + base + rng.choice(["", "", f" {rng.choice(WORDS)}"])
            else:
                words = rng.sample(WORDS, rng.randint(2, 7))
                if rng.random() < 0.1:
                    words.append(f"HE-{rng.randint(1, 9)}")
                text = " ".join(words)
            texts.append(text)
            agent.observe(
                text,
                at=T0 + timedelta(days=i % 40, minutes=i),
                importance=rng.choice([None, 1, 5, 9]),
                type=rng.choice(["observation", "plan", "thought"]),
            )
        yield agent


@pytest.fixture(params=[1, 2, 3])
def generated(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentMemory]:
    yield from _store(tmp_path, request.param)


def _queries(seed: int) -> list[str]:
    rng = random.Random(seed + 100)
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 4))) for _ in range(12)]
    return [*queries, "what is HE-3 about", "zzzz qqqq", "the latest budget now"]


def _served(result: RecallResult) -> list[tuple[object, ...]]:
    return [
        (
            i.event.position,
            i.score,
            i.relevance,
            i.recency,
            i.importance,
            i.via,
            i.fused,
            i.bm25,
            i.cosine,
            i.match,
            i.copies,
            i.copy_positions,
            i.replaced_by,
        )
        for i in result.items
    ]


def _both(agent: AgentMemory, query: str, **kw: object) -> tuple[RecallResult, RecallResult]:
    """Recall lazily and eagerly at one time (recency moves with the clock)."""
    kw.setdefault("as_of", T0 + timedelta(days=60))
    agent.lazy = True
    lazy = agent.recall(query, record=False, **kw)  # type: ignore[arg-type]
    agent.lazy = False
    try:
        eager = agent.recall(query, record=False, **kw)  # type: ignore[arg-type]
    finally:
        agent.lazy = True
    return lazy, eager


WEIGHTS: Sequence[dict[str, float] | None] = (
    None,
    {"relevance": 1.0, "recency": 0.0, "importance": 0.0},
    {"relevance": 0.3, "recency": 1.0, "importance": 1.0},
    {"relevance": 0.0, "recency": 0.0, "importance": 1.0},
)


@pytest.mark.parametrize(("k", "floor"), [(1, None), (10, None), (3, 0.2), (40, 0.0)])
def test_lazy_recall_serves_what_eager_recall_serves(
    generated: AgentMemory, k: int, floor: float | None
) -> None:
    for query in _queries(k):
        for weights in WEIGHTS:
            kw = {"k": k, "min_score": floor, "weights": weights}
            lazy, eager = _both(generated, query, **kw)
            assert _served(lazy) == _served(eager), (query, weights)
            paths = _both(generated, query, paths=("lexical",), **kw)
            assert _served(paths[0]) == _served(paths[1]), (query, weights, "lexical")


def test_lazy_recall_works_out_fewer_candidates(
    generated: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted: list[int] = []
    real = memory_module.work_out

    def counting(fused, positions, m):  # type: ignore[no-untyped-def]
        counted.append(len(positions))
        return real(fused, positions, m)

    monkeypatch.setattr(memory_module, "work_out", counting)
    lazy_total = eager_total = 0
    for query in _queries(7):
        counted.clear()
        lazy, eager = _both(generated, query, k=3)
        assert _served(lazy) == _served(eager)
        # the eager call works every candidate out in one call, the last one counted
        eager_total += counted[-1]
        lazy_total += sum(counted[:-1])
    assert lazy_total < 0.7 * eager_total


def test_lazy_recall_serves_what_eager_recall_serves_with_long_memories_under_the_neural_fit(
    tmp_path: Path,
) -> None:
    # ADR 0137: a long memory whose best passage is nearer than its head keeps what its
    # words alone give it; the ceilings bound that floor too, so lazy and eager agree.
    from engram.agents.calibration import CALIBRATIONS

    rng = random.Random(7)
    with engram.open_memory(str(tmp_path / "long.db")) as opened:
        agent = opened.agent("ana")
        for i in range(80):
            size = rng.choice([3, 6, 200, 400])  # words: short notes and long ones
            text = " ".join(rng.choice(WORDS) for _ in range(size))
            agent.observe(text, at=T0 + timedelta(days=i % 30, minutes=i))
        agent.calibration = CALIBRATIONS["neural"]
        for query in _queries(5):
            for k, floor in ((3, None), (10, 0.0)):
                lazy, eager = _both(agent, query, k=k, min_score=floor)
                assert _served(lazy) == _served(eager), query
