"""The stored vectors' cosines in one product are each vector's own ``@`` to the bit (ADR 0101):
recall's scores must not move by the last bit when the product is batched."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from engram.projections import semantic

SEED = 20261127


def _store(vectors: np.ndarray) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE semantic_vectors (position INTEGER PRIMARY KEY, vector BLOB)")
    conn.executemany(
        "INSERT INTO semantic_vectors VALUES (?, ?)",
        [(p, row.tobytes()) for p, row in enumerate(vectors, start=1)],
    )
    return conn


@pytest.mark.parametrize("dimension", [3, 17, 256, 384, 1000])
def test_each_cosine_is_the_one_its_own_product_gives(dimension: int) -> None:
    rng = np.random.default_rng(SEED + dimension)
    print(f"seed {SEED + dimension}")
    vectors = rng.standard_normal((600, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = rng.standard_normal(dimension).astype(np.float32)
    query /= np.linalg.norm(query)
    conn = _store(vectors)
    wanted = [int(p) for p in rng.choice(np.arange(1, 700), size=250, replace=False)]
    found = semantic.stored_cosines(conn, wanted, query)
    held = [p for p in wanted if p <= len(vectors)]
    assert sorted(found) == sorted(held)  # positions past the table have no vector
    for p in held:
        alone = float(np.frombuffer(vectors[p - 1].tobytes(), dtype=np.float32) @ query)
        assert repr(found[p]) == repr(alone)


def test_nothing_stored_gives_nothing() -> None:
    conn = _store(np.zeros((0, 4), dtype=np.float32))
    assert semantic.stored_cosines(conn, [1, 2], np.ones(4, dtype=np.float32)) == {}
