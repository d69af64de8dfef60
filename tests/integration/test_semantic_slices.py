"""A semantic rebuild embeds in bounded slices, caches and reports each, and ends the same."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryArchived, MemoryObserved
from engram.projections.embedding import CachedEmbedder, EmbeddingCache, FloatArray, HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import ProjectionConfigError
from engram.projections.semantic import SemanticIndex

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Counting(HashEmbedder):
    """Hash vectors that remember how many texts each call embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> FloatArray:
        self.calls.append(len(texts))
        return super().embed(texts)


def _ledger(path: Path) -> Ledger:
    ledger = Ledger.open(str(path), default_registry())
    events = [
        NewEvent(
            stream="agent:ana",
            kind="memory.observed",
            payload=MemoryObserved(agent="ana", text=f"memory number {i} about topic {i % 3}"),
            at=T0,
        )
        for i in range(10)
    ]
    events.insert(
        7,
        NewEvent(
            stream="agent:ana",
            kind="memory.archived",
            payload=MemoryArchived(agent="ana", positions=[2, 5]),
            at=T0,
        ),
    )
    ledger.append(events)
    return ledger


def _vectors(engine: ProjectionEngine) -> list[tuple[int, bytes]]:
    with engine.read() as conn:
        return conn.execute("SELECT position, vector FROM semantic_vectors ORDER BY 1").fetchall()


def test_a_rebuild_embeds_caches_and_reports_slice_by_slice(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path / "ledger.db")
    counting = Counting()
    cache = EmbeddingCache(str(tmp_path / "cache.db"))
    index = SemanticIndex(CachedEmbedder(counting, cache), slice_size=3)
    reports: list[tuple[str, int, int]] = []
    try:
        with ProjectionEngine(ledger, str(tmp_path / "sliced"), [index]) as engine:
            engine.rebuild(progress=lambda label, done, total: reports.append((label, done, total)))
            sliced = _vectors(engine)
        with ProjectionEngine(
            ledger, str(tmp_path / "whole"), [SemanticIndex(HashEmbedder(), slice_size=1000)]
        ) as engine:
            engine.catch_up()
            whole = _vectors(engine)
        # Seven observations before the archive (3 + 3 + 1), three after.
        assert counting.calls == [3, 3, 1, 3]
        embedded = [r for r in reports if r[0] == "semantic: embedded"]
        assert embedded == [(*embedded[0][:1], n, 10) for n in (3, 6, 7, 10)]
        assert index.progress is None  # the engine's callback is not kept after the run
        # Every slice was written to the cache as it went.
        assert len(cache) == 10
    finally:
        cache.close()
        ledger.close()
    assert sliced == whole
    assert [p for p, _ in sliced] == [1, 3, 4, 6, 7, 9, 10, 11]


@pytest.mark.parametrize("size", [0, -1, True, 2.5])
def test_a_slice_size_that_is_not_a_positive_int_is_refused(size: object) -> None:
    with pytest.raises(ProjectionConfigError, match="slice_size"):
        SemanticIndex(HashEmbedder(), slice_size=size)  # type: ignore[arg-type]
