"""The latency bench's store takes hash vectors when ``ENGRAM_EMBEDDER=hash`` asks for them,
MiniLM installed or not (ADR 0101)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.bench.common import QUICK, Config
from engram.bench.recall_latency import _embedder


def _config(scratch: Path) -> Config:
    return Config("recall", True, 1, None, "", str(scratch), QUICK, 1, embedding_cache=None)


def test_hash_vectors_when_the_variable_asks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hash")
    embedder, what = _embedder(_config(tmp_path))
    try:
        assert embedder.fingerprint.provider == "hash"
        assert what == "hash vectors (ENGRAM_EMBEDDER=hash)"
    finally:
        embedder.cache.close()
