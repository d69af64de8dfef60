"""The semantic index: FAISS vectors of every text-bearing event, keyed by ledger position.

The projection's state is a table of vectors (position, author, visibility, type, float32
bytes), committed with the checkpoint like every projection's; its identity includes the
embedder's fingerprint, so changing the model rebuilds it. The FAISS index is an accelerator
over that table, held by :class:`VectorSearcher`: saved atomically (write, fsync, rename) to
an index file beside the store with the generation, fingerprint and last position it covers,
loaded on start and caught up from the table. A missing, truncated or mismatched file is
rebuilt from the table with a warning — never a crash.

Exact search (inner product on normalised vectors) up to ``exact_limit`` vectors; HNSW above.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ledger import Event
from projections.base import Projection, Tables
from projections.embedder import Embedder
from projections.errors import QueryError
from projections.store import ProjectionStore, physical

MAX_TEXT = 16_000
DEFAULT_EXACT_LIMIT = 20_000


class IndexFileWarning(UserWarning):
    """The index file was missing, damaged or stale and has been rebuilt from the table."""


class SemanticIndex(Projection):
    """Vectors of observations, embedded once and kept with the checkpoint."""

    name = "semantic"
    version = 1
    kinds = ("memory.observed",)
    tables = ("semantic_vectors",)

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def config(self) -> str:
        """The embedder's fingerprint: another model means other vectors."""
        return f"embedder={self.embedder.fingerprint!s}"

    def create(self, db: Tables) -> None:
        """Create the vectors table."""
        db.conn.execute(
            f"""CREATE TABLE {db["semantic_vectors"]} (
                position   INTEGER PRIMARY KEY,
                agent      TEXT NOT NULL,
                visibility TEXT NOT NULL,
                type       TEXT NOT NULL,
                vector     BLOB NOT NULL
            )"""
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Embed the batch's texts in one call and store the vectors."""
        vectors = self.embedder.embed([e.payload.text[:MAX_TEXT] for e in events])
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        db.conn.executemany(
            f"INSERT INTO {db['semantic_vectors']} (position, agent, visibility, type, vector)"
            " VALUES (?, ?, ?, ?, ?)",
            [
                (e.position, e.payload.agent, e.payload.visibility, e.payload.type, v.tobytes())
                for e, v in zip(events, vectors, strict=True)
            ],
        )


class VectorHit(NamedTuple):
    """A semantic match: the event position and its cosine similarity."""

    position: int
    score: float


class VectorSearcher:
    """A FAISS index over the live ``semantic_vectors`` table, persisted beside the store."""

    def __init__(
        self,
        directory: str | Path,
        dimension: int,
        fingerprint: str,
        *,
        exact_limit: int = DEFAULT_EXACT_LIMIT,
        hnsw_m: int = 32,
        ef_search: int = 128,
    ) -> None:
        import faiss

        faiss.omp_set_num_threads(1)  # single queries are faster on one thread here
        self._faiss = faiss
        self.directory = Path(directory)
        self.dimension = dimension
        self.fingerprint = fingerprint
        self.exact_limit = exact_limit
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self._lock = threading.Lock()
        self._index: Any = None
        self._generation = -1
        self._table = ""
        self._last = 0
        self._meta: dict[int, tuple[str, str, str]] = {}
        self._added_since_save = 0

    # -- keeping up with the table ---------------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the index up to the live table seen by ``conn`` (load or rebuild if needed)."""
        generation = ProjectionStore.live_generation(conn, "semantic")
        if generation is None:
            raise QueryError("the semantic index is not in this projection store")
        with self._lock:
            if generation != self._generation:
                self._open(conn, generation)
            self._add_rows(conn, self._last)

    def _path(self, generation: int) -> Path:
        return self.directory / f"semantic.g{generation}.faiss"

    def _open(self, conn: sqlite3.Connection, generation: int) -> None:
        self._generation, self._index, self._last, self._meta = generation, None, 0, {}
        self._table = physical(generation, "semantic_vectors")
        path = self._path(generation)
        problem = self._load(path, conn)
        if problem is not None:
            if path.exists() or problem != "missing":
                warnings.warn(
                    f"semantic index file {path}: {problem}; rebuilding it from the projection",
                    IndexFileWarning,
                    stacklevel=4,
                )
            self._index, self._last, self._meta = None, 0, {}
        for stale in self.directory.glob("semantic.g*.faiss*"):
            if not stale.name.startswith(path.name):
                stale.unlink(missing_ok=True)

    def _load(self, path: Path, conn: sqlite3.Connection) -> str | None:
        meta_path = path.with_suffix(".json")
        if not path.exists() or not meta_path.exists():
            return "missing"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            index = self._faiss.read_index(str(path))
        except (OSError, ValueError, RuntimeError) as exc:
            return f"unreadable ({exc})"
        if meta.get("fingerprint") != self.fingerprint or meta.get("dimension") != self.dimension:
            return "built with another embedder"
        last, count = int(meta.get("last_position", -1)), int(meta.get("count", -1))
        if index.ntotal != count or index.d != self.dimension:
            return f"holds {index.ntotal} vectors, its metadata says {count}"
        stored = conn.execute(
            f"SELECT count(*) FROM {self._table} WHERE position <= ?", (last,)
        ).fetchone()[0]
        if stored != count:
            return f"covers {count} vectors up to position {last}, the table has {stored}"
        self._index, self._last = index, last
        for position, agent, visibility, kind in conn.execute(
            f"SELECT position, agent, visibility, type FROM {self._table} WHERE position <= ?",
            (last,),
        ):
            self._meta[position] = (agent, visibility, kind)
        return None

    def _add_rows(self, conn: sqlite3.Connection, after: int) -> None:
        rows = conn.execute(
            f"SELECT position, agent, visibility, type, vector FROM {self._table}"
            " WHERE position > ? ORDER BY position",
            (after,),
        ).fetchall()
        if not rows:
            return
        vectors = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(
            len(rows), self.dimension
        )
        ids = np.asarray([r[0] for r in rows], dtype=np.int64)
        if self._index is None:
            self._index = self._new_index(len(rows))
        if self._index.ntotal + len(rows) > self.exact_limit and self._is_flat():
            # Grown past exact search: rebuild as HNSW from the whole table.
            self._index, self._meta = None, {}
            self._add_rows(conn, 0)
            return
        self._index.add_with_ids(vectors, ids)
        for position, agent, visibility, kind, _ in rows:
            self._meta[position] = (agent, visibility, kind)
        self._last = int(ids[-1])
        self._added_since_save += len(rows)

    def _is_flat(self) -> bool:
        return isinstance(self._faiss.downcast_index(self._index.index), self._faiss.IndexFlat)

    def _new_index(self, expected: int) -> Any:
        faiss = self._faiss
        if expected > self.exact_limit:
            inner = faiss.IndexHNSWFlat(self.dimension, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efSearch = self.ef_search
        else:
            inner = faiss.IndexFlatIP(self.dimension)
        return faiss.IndexIDMap2(inner)

    def save(self) -> None:
        """Write the index file and its metadata atomically (temp file, fsync, rename)."""
        with self._lock:
            if self._index is None:
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self._path(self._generation)
            meta = {
                "generation": self._generation,
                "fingerprint": self.fingerprint,
                "dimension": self.dimension,
                "last_position": self._last,
                "count": int(self._index.ntotal),
            }
            # The metadata goes first and is checked against the file's vector count, so a
            # crash between the two renames is detected as a mismatch, never trusted.
            _atomic_write(path.with_suffix(".json"), json.dumps(meta).encode())
            _atomic_write(path, self._faiss.serialize_index(self._index).tobytes())
            self._added_since_save = 0

    # -- searching -------------------------------------------------------------------------

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        *,
        agent: str,
        types: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """Return the ``k`` nearest vectors ``agent`` may see (its own and public items)."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise QueryError(f"k must be a positive int, got {k!r}")
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        if vector.shape[1] != self.dimension:
            raise QueryError(f"query vector has {vector.shape[1]} dimensions, not {self.dimension}")
        wanted = set(types) if types else None
        with self._lock:
            index = self._index
            if index is None or index.ntotal == 0:
                return []
            fetch = min(max(k * 4, 32), int(index.ntotal))
            while True:
                scores, ids = index.search(vector, fetch)
                hits = []
                for score, position in zip(scores[0].tolist(), ids[0].tolist(), strict=True):
                    if position < 0:
                        continue
                    author, visibility, kind = self._meta[position]
                    if visibility != "public" and author != agent:
                        continue
                    if wanted is not None and kind not in wanted:
                        continue
                    hits.append(VectorHit(position, score))
                if len(hits) >= k or fetch >= index.ntotal:
                    return hits[:k]
                fetch = min(fetch * 4, int(index.ntotal))

    @property
    def size(self) -> int:
        """Return how many vectors the index holds."""
        return 0 if self._index is None else int(self._index.ntotal)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
