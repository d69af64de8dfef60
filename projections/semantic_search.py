"""The FAISS index over the semantic projection's vectors (:mod:`engram.projections.semantic`).

The FAISS index is an accelerator over the ``semantic_vectors`` table, held by
:class:`VectorSearcher`: saved atomically (write, fsync, rename) to an index file beside the
store with the generation, fingerprint, last position and last removal it covers
(:mod:`engram.projections.semantic_file`), loaded on start and caught up from the tables. A
missing, truncated or mismatched file is rebuilt from the table with a warning — never a
crash.

Exact search (inner product on normalised vectors) up to ``exact_limit`` vectors; HNSW above.
A removal leaves an exact index at once; HNSW cannot remove, so a removed vector stays in it
as a tombstone that searches skip, until tombstones pass ``TOMBSTONE_SHARE`` of the index and
it is rebuilt from the table (ADR 0015).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engram.projections import semantic_file as index_file
from engram.projections.errors import QueryError
from engram.projections.semantic_file import IndexFileWarning
from engram.projections.store import ProjectionStore, physical

_log = logging.getLogger(__name__)
#: A temp file this old is left from a save that died; younger ones may be in flight.
_ORPHAN_AGE = 600.0

DEFAULT_EXACT_LIMIT = 20_000
#: Above this share of tombstones among its vectors, an HNSW index is rebuilt from the table.
TOMBSTONE_SHARE = 0.2


class VectorHit(NamedTuple):
    """A semantic match: the event position and its cosine similarity."""

    position: int
    score: float


class VectorSearcher:
    """A FAISS index over the live ``semantic_vectors`` table, persisted beside the store.

    It serves the positions in ``_meta``; an HNSW index may also hold removed vectors
    (tombstones), which searches skip. A long item's passages (``semantic_passages``) sit
    in it under the item's position beside its own vector, so a search finds the item by
    its best vector and serves it once; with ``passages=False`` it holds the items' own
    vectors only.
    """

    def __init__(
        self,
        directory: str | Path,
        dimension: int,
        fingerprint: str,
        *,
        exact_limit: int = DEFAULT_EXACT_LIMIT,
        hnsw_m: int = 32,
        ef_search: int = 128,
        passages: bool = True,
    ) -> None:
        """``passages``: search the passages the table holds beside the items' own vectors
        (max pooling, ADR 0054); False: the items' own vectors only, the passages left for
        recall to read as a feature of the candidates it scores (ADR 0097)."""
        import faiss

        faiss.omp_set_num_threads(1)  # single queries are faster on one thread here
        self._faiss = faiss
        self.directory = Path(directory)
        self.dimension = dimension
        self.fingerprint = fingerprint
        self.exact_limit = exact_limit
        self.hnsw_m = hnsw_m
        self.ef_search = ef_search
        self.passages = passages
        self._lock = threading.Lock()
        self._index: Any = None
        self._generation = -1
        self._table = ""
        self._removed = ""
        self._last = 0  # the highest position added
        self._removed_through = 0  # the highest removal (archive position) taken into account
        # The served positions; an HNSW index also holds the removed ones (its tombstones).
        self._meta: dict[int, tuple[str, str, str]] = {}
        self._held: set[int] = set()  # the positions the index holds vectors of

    # -- keeping up with the table ---------------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the index up to the live tables seen by ``conn`` (load or rebuild if needed)."""
        generation = ProjectionStore.live_generation(conn, "semantic")
        if generation is None:
            raise QueryError("the semantic index is not in this projection store")
        with self._lock:
            if generation != self._generation:
                self._open(conn, generation)
            self._add_rows(conn, self._last)
            self._drop_removed(conn)
            if self.tombstones > TOMBSTONE_SHARE * len(self._held):
                self._rebuild(conn)

    def purge(self, conn: sqlite3.Connection) -> bool:
        """Sync with ``conn``, rebuild the index if it still holds removed vectors (HNSW keeps
        them as tombstones), and write its file at once; return whether the file was written.

        A forgetting calls this (ADR 0039): otherwise the file on disk keeps the forgotten
        vectors until the next recall saves it.
        """
        self.sync(conn)
        with self._lock:
            if self.tombstones:
                self._rebuild(conn)
        return self.save()

    def _path(self, generation: int) -> Path:
        return self.directory / f"semantic.g{generation}.faiss"

    def _open(self, conn: sqlite3.Connection, generation: int) -> None:
        self._generation = generation
        self._reset()
        self._table = physical(generation, "semantic_vectors")
        self._removed = physical(generation, "semantic_removed")
        self._passages = physical(generation, "semantic_passages")
        path = self._path(generation)
        loaded = index_file.load(
            path,
            conn,
            self._faiss,
            fingerprint=self.fingerprint,
            dimension=self.dimension,
            vectors=self._table,
            removed=self._removed,
            passages=self._passages if self.passages else None,
        )
        if isinstance(loaded, str):
            if path.exists() or loaded != "missing":
                warnings.warn(
                    f"semantic index file {path}: {loaded}; rebuilding it from the projection",
                    IndexFileWarning,
                    stacklevel=4,
                )
        else:
            self._index, self._meta, self._last = loaded.index, loaded.meta, loaded.last
            self._removed_through = loaded.removed_through
            self._held = set(self._faiss.vector_to_array(loaded.index.id_map).tolist())
            self._forget(loaded.dropped)
        for stale in self.directory.glob("semantic.g*.faiss*"):
            if not stale.name.startswith(path.name):
                stale.unlink(missing_ok=True)
        # Its sidecar is named without ".faiss" ("semantic.g4.json"): an older generation's
        # was left behind at every rebuild (ADR 0141).
        for stale in self.directory.glob("semantic.g*.json"):
            if stale.name != path.with_suffix(".json").name:
                stale.unlink(missing_ok=True)
        for orphan in self.directory.glob(".semantic.g*.tmp"):
            with contextlib.suppress(OSError):
                if time.time() - orphan.stat().st_mtime > _ORPHAN_AGE:
                    orphan.unlink()

    def _reset(self) -> None:
        self._index, self._meta, self._held = None, {}, set()
        self._last = self._removed_through = 0

    def _add_rows(self, conn: sqlite3.Connection, after: int) -> None:
        rows = conn.execute(
            f"SELECT position, agent, visibility, type, vector FROM {self._table}"
            " WHERE position > ? ORDER BY position",
            (after,),
        ).fetchall()
        if not rows:
            return
        last = int(rows[-1][0])
        extra = (
            conn.execute(
                f"SELECT position, vector FROM {self._passages}"
                " WHERE position > ? AND position <= ? ORDER BY position, passage",
                (after, last),
            ).fetchall()
            if self.passages
            else []
        )
        blobs = [r[4] for r in rows] + [r[1] for r in extra]
        vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(
            len(blobs), self.dimension
        )
        ids = np.asarray([r[0] for r in rows] + [r[0] for r in extra], dtype=np.int64)
        if self._index is None:
            self._index = self._new_index(len(blobs))
        if self._index.ntotal + len(blobs) > self.exact_limit and self._is_flat():
            # Grown past exact search: rebuild as HNSW from the whole table.
            self._rebuild(conn)
            return
        self._index.add_with_ids(vectors, ids)
        for position, agent, visibility, kind, _ in rows:
            self._meta[position] = (agent, visibility, kind)
        self._held.update(ids.tolist())
        self._last = last

    def _drop_removed(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            f"SELECT position, removed_at FROM {self._removed} WHERE removed_at > ?",
            (self._removed_through,),
        ).fetchall()
        if not rows:
            return
        # A vector removed before it was ever added is simply not there.
        self._forget(sorted(p for p, _ in rows if p in self._meta))
        self._removed_through = max(at for _, at in rows)

    def _forget(self, positions: list[int]) -> None:
        """Stop serving vectors the index holds: remove them (exact) or tombstone them (HNSW)."""
        if not positions:
            return
        for position in positions:
            self._meta.pop(position, None)
        if self._is_flat():
            self._index.remove_ids(np.asarray(positions, dtype=np.int64))
            self._held.difference_update(positions)

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        """Build the index afresh from the table (exact or HNSW by its size, no tombstones)."""
        self._index, self._meta, self._held, self._last = None, {}, set(), 0
        self._add_rows(conn, 0)

    def _index_total(self) -> int:
        return 0 if self._index is None else int(self._index.ntotal)

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

    def save(self) -> bool:
        """Write the index file and its metadata atomically; return whether it was written.

        The file is a cache of the projection's tables, so saving never fails loudly: when
        another process is saving it, or the directory cannot be written (full disk,
        read-only media), this logs why and returns False; the next load rebuilds what is
        missing from the tables.
        """
        with self._lock:
            if self._index is None:
                return False
            meta = {
                "generation": self._generation,
                "fingerprint": self.fingerprint,
                "dimension": self.dimension,
                "last_position": self._last,
                "count": int(self._index.ntotal),
                "removed_through": self._removed_through,
                "tombstones": self.tombstones,
            }
            path = self._path(self._generation)
            try:
                return index_file.save(path, self._faiss, self._index, meta)
            except (OSError, RuntimeError) as exc:  # faiss reports write errors as RuntimeError
                _log.warning("semantic index file %s not saved: %s", path, exc)
                return False

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
            total = int(index.ntotal)
            fetch = min(max(k * 4, 32), total)
            while True:
                scores, ids = index.search(vector, fetch)
                hits = []
                seen: set[int] = set()
                for score, position in zip(scores[0].tolist(), ids[0].tolist(), strict=True):
                    found = self._meta.get(position)  # None: no result (-1) or a tombstone
                    if found is None or position in seen:
                        continue  # an item's passages after its best vector: served once
                    seen.add(position)
                    author, visibility, kind = found
                    if visibility != "public" and author != agent:
                        continue
                    if wanted is not None and kind not in wanted:
                        continue
                    hits.append(VectorHit(position, score))
                    if len(hits) == k:  # the rest would be cut below: not built
                        return hits
                if len(hits) >= k or fetch >= total:
                    return hits[:k]
                fetch = min(fetch * 4, total)

    @property
    def size(self) -> int:
        """Return how many vectors the index serves (tombstones excluded)."""
        return len(self._meta)

    @property
    def tombstones(self) -> int:
        """Return how many removed items an HNSW index still holds vectors of (searches skip
        them)."""
        return len(self._held) - len(self._meta)

    @property
    def index(self) -> Any:
        """Return the FAISS index itself (None before the first sync), ids being positions.

        For inspection and benchmarks: searching it directly skips the visibility and type
        filters and may return tombstones; :meth:`search` is the way to serve an agent.
        """
        return self._index
