"""The embedding cache file is a cache: damage, an unopenable path or a full disk never crash.

A full disk used to surface as a raw ``sqlite3.OperationalError`` from ``observe`` and
``init``, because the cache opened its own SQLite file without guarding it. Now a damaged
file is moved aside and started afresh, and a file that cannot be opened or written leaves
the cache in memory; each case says so once with an EmbeddingCacheWarning.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sandbox import needs_userns

import engram
from engram.projections.embedding import (
    CachedEmbedder,
    EmbeddingCache,
    EmbeddingCacheWarning,
    HashEmbedder,
)

WORKER = Path(__file__).parent / "_workers" / "observe_worker.py"


def _roundtrip(cache: EmbeddingCache) -> None:
    embedder = CachedEmbedder(HashEmbedder(dimension=16), cache)
    first = embedder.embed(["a text", "another"])
    again = embedder.embed(["a text", "another"])
    np.testing.assert_array_equal(first, again)
    assert (embedder.misses, embedder.hits) == (2, 2)


def test_a_damaged_cache_file_is_moved_aside_and_started_afresh(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    path.write_bytes(b"this is not a SQLite database, " * 200)
    with pytest.warns(EmbeddingCacheWarning, match="damaged"):
        cache = EmbeddingCache(path)
    with cache:
        _roundtrip(cache)
        assert len(cache) == 2
    [aside] = tmp_path.glob("embeddings.db.corrupt-*")
    assert aside.read_bytes().startswith(b"this is not a SQLite database")
    with EmbeddingCache(path) as reopened:  # the fresh file persisted
        assert len(reopened) == 2


def test_a_cache_path_that_cannot_be_opened_caches_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.db"
    path.mkdir()  # a directory where the file should be
    with pytest.warns(EmbeddingCacheWarning, match="in memory"):
        cache = EmbeddingCache(path)
    with cache:
        _roundtrip(cache)
    assert path.is_dir()


@needs_userns
def test_a_full_disk_under_the_cache_never_fails_an_observation(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger) as memory:
        memory.agent("alice").observe("before the disk filled up")
    cache = Path(ledger + ".projections") / "embeddings.db"
    cache.unlink()
    cache.touch()
    # /dev/full mounted over the cache file: every write to it fails with ENOSPC.
    script = f'mount --bind /dev/full "{cache}" && exec "{sys.executable}" "{WORKER}" "{ledger}"'
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"outcome": "ok"}, result.stdout
    with engram.open_memory(ledger) as memory:
        texts = [e.payload.text for e in memory.ledger.read(kinds=["memory.observed"])]
    assert texts == ["before the disk filled up", "the disk is full"]
