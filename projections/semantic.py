"""The semantic index: FAISS vectors of every text-bearing event, keyed by ledger position.

The projection's state is a table of vectors (position, author, visibility, item type,
float32 bytes) of the same events and texts as the lexical index (memories, scars,
reflections, concepts: :func:`engram.projections.lexical.item_text`), committed with the
checkpoint like every projection's; its identity includes the embedder's fingerprint, so
changing the model rebuilds it. With ``passages=True``, a text longer than
:data:`PASSAGE_WORDS` words is also embedded as overlapping passages (:func:`passages`, ADR
0054), kept in ``semantic_passages``: an embedder reads a window of word pieces (MiniLM:
256), so a long memory's head vector says nothing of what follows; its passages are
searched beside it and it is recalled as the memory, by its best vector (max pooling). Off
by default: on BEAM it cost the MiniLM path recall (ADR 0054). ``memory.archived`` and
``scar.archived`` delete the named vectors of their item types and record each removal
(position, and the archive's position as ``removed_at``) in ``semantic_removed``; a
position without a vector is ignored. A ``concept.upserted`` supersedes the concept's
previous upsert the same way: its vector is removed and the removal recorded (ADR 0037),
so only the newest version is ever served. ``subject.forgotten`` removes the subject's
vectors before it the same way (ADR 0039).

The FAISS index is an accelerator over that table, held by :class:`VectorSearcher`: saved
atomically (write, fsync, rename) to an index file beside the store with the generation,
fingerprint, last position and last removal it covers (:mod:`engram.projections.semantic_file`),
loaded on start and caught up from the tables. A missing, truncated or mismatched file is
rebuilt from the table with a warning — never a crash.

Exact search (inner product on normalised vectors) up to ``exact_limit`` vectors; HNSW above.
A removal leaves an exact index at once; HNSW cannot remove, so a removed vector stays in it
as a tombstone that searches skip, until tombstones pass ``TOMBSTONE_SHARE`` of the index and
it is rebuilt from the table (ADR 0015).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engram.ledger import Event, chunked
from engram.projections import semantic_file as index_file
from engram.projections.base import Projection, Tables
from engram.projections.embedding import Embedder
from engram.projections.errors import ProjectionConfigError, QueryError
from engram.projections.lexical import ARCHIVES, TEXT_KINDS, item_text
from engram.projections.semantic_file import IndexFileWarning
from engram.projections.store import ProjectionStore, physical

_log = logging.getLogger(__name__)
#: A temp file this old is left from a save that died; younger ones may be in flight.
_ORPHAN_AGE = 600.0

MAX_TEXT = 16_000
DEFAULT_EXACT_LIMIT = 20_000
#: Above this share of tombstones among its vectors, an HNSW index is rebuilt from the table.
TOMBSTONE_SHARE = 0.2
#: Texts embedded and stored per step of a batch: bounds a rebuild's memory (ADR 0026).
SLICE = 2_000


#: A text of more words than this is embedded as passages too (ADR 0054): MiniLM reads 256
#: word pieces, about 170 words of English prose and fewer of code, so a passage of 128
#: words fits its window.
PASSAGE_WORDS = 128
#: Each passage starts this many words after the one before, so consecutive passages share
#: a quarter (32 words): a sentence cut by one passage's end is whole in the next.
PASSAGE_STRIDE = 96
_WORDS = re.compile(r"\S+")

_REMOVALS = (*ARCHIVES, "subject.forgotten")


def passages(text: str) -> list[str]:
    """Return the passages of ``text`` beyond its head, each a slice of the text itself.

    A text of at most :data:`PASSAGE_WORDS` words (runs of non-space) has none: its own
    vector covers it. A longer one has a passage of :data:`PASSAGE_WORDS` words every
    :data:`PASSAGE_STRIDE` words from the second stride on (the text's own vector covers
    its head), while a passage still reaches words the one before did not. Pure and
    deterministic: a rebuild cuts the same passages.
    """
    spans = [m.span() for m in _WORDS.finditer(text[:MAX_TEXT])]
    if len(spans) <= PASSAGE_WORDS:
        return []
    overlap = PASSAGE_WORDS - PASSAGE_STRIDE
    out = []
    for start in range(PASSAGE_STRIDE, len(spans) - overlap, PASSAGE_STRIDE):
        end = min(start + PASSAGE_WORDS, len(spans)) - 1
        out.append(text[spans[start][0] : spans[end][1]])
    return out


def _drop_passages(db: Tables, positions: Sequence[int]) -> None:
    """Delete the passages of the items at ``positions``."""
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        db.conn.execute(
            f"DELETE FROM {db['semantic_passages']} WHERE position IN ({marks})", list(chunk)
        )


def _forget_subject(db: Tables, subject: str, position: int) -> None:
    """Remove the vectors of ``subject``'s items before ``position``, as an archival does."""
    vectors, removed = db["semantic_vectors"], db["semantic_removed"]
    gone = [
        row[0]
        for row in db.conn.execute(
            f"SELECT position FROM {vectors} WHERE agent = ? AND position < ?", (subject, position)
        )
    ]
    for chunk in chunked(gone):
        marks = ",".join("?" * len(chunk))
        db.conn.execute(f"DELETE FROM {vectors} WHERE position IN ({marks})", chunk)
    db.conn.executemany(
        f"INSERT OR REPLACE INTO {removed} (position, removed_at) VALUES (?, ?)",
        [(p, position) for p in gone],
    )
    _drop_passages(db, gone)


class SemanticIndex(Projection):
    """Vectors of memories, scars and reflections, embedded once and kept with the checkpoint."""

    name = "semantic"
    version = 6
    kinds = TEXT_KINDS
    tables = ("semantic_vectors", "semantic_removed", "semantic_concepts", "semantic_passages")

    def __init__(
        self, embedder: Embedder, *, slice_size: int = SLICE, passages: bool = False
    ) -> None:
        """``slice_size``: texts embedded and stored per step (see :meth:`apply`);
        ``passages``: embed long texts as passages too (ADR 0054: off by default, as
        measured on BEAM; its table is then empty)."""
        if not isinstance(slice_size, int) or isinstance(slice_size, bool) or slice_size < 1:
            raise ProjectionConfigError(f"slice_size must be a positive int, got {slice_size!r}")
        if not isinstance(passages, bool):
            raise ProjectionConfigError(f"passages must be a bool, got {passages!r}")
        self.embedder = embedder
        self.slice_size = slice_size
        self.passages = passages
        #: Told ``(label, texts done, texts in the batch)`` after each slice; the engine sets
        #: it for the length of a catch-up or rebuild given a progress callback.
        self.progress: Callable[[str, int, int], None] | None = None

    def config(self) -> str:
        """The embedder's fingerprint (another model means other vectors) and, when on,
        the passages' cut."""
        cut = f" passages={PASSAGE_WORDS}/{PASSAGE_STRIDE}" if self.passages else ""
        return f"embedder={self.embedder.fingerprint!s}{cut}"

    def create(self, db: Tables) -> None:
        """Create the vectors table and the table of removals."""
        db.conn.execute(
            f"""CREATE TABLE {db["semantic_vectors"]} (
                position   INTEGER PRIMARY KEY,
                agent      TEXT NOT NULL,
                visibility TEXT NOT NULL,
                type       TEXT NOT NULL,
                vector     BLOB NOT NULL
            )"""
        )
        removed = db["semantic_removed"]
        db.conn.execute(
            f"CREATE TABLE {removed} (position INTEGER PRIMARY KEY, removed_at INTEGER NOT NULL)"
        )
        name = removed.strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_at" ON {removed} (removed_at)')
        db.conn.execute(
            f"CREATE TABLE {db['semantic_concepts']} (id TEXT PRIMARY KEY,"
            " position INTEGER NOT NULL) WITHOUT ROWID"
        )
        db.conn.execute(
            f"CREATE TABLE {db['semantic_passages']} (position INTEGER NOT NULL,"
            " passage INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (position, passage))"
            " WITHOUT ROWID"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Embed and store the items' vectors a slice at a time; remove archived ones.

        A slice is :attr:`slice_size` texts: one embedder call (a cached embedder writes its
        cache per call), its vectors stored at once, then a progress report; so a rebuild's
        memory is bounded by a slice, not by the engine's batch.
        """
        latest = self._supersede(db, events)
        total = sum(1 for e in events if e.kind not in _REMOVALS)
        done = 0
        pending: list[Event] = []
        for e in events:
            if e.kind not in _REMOVALS:
                if e.kind == "concept.upserted" and latest[e.payload.id] != e.position:
                    total -= 1  # superseded within the batch: never embedded
                    continue
                pending.append(e)
                if len(pending) >= self.slice_size:
                    done = self._store(db, pending, done, total)
                    pending = []
                continue
            # In position order: an archive only reaches the items before it.
            done = self._store(db, pending, done, total)
            pending = []
            if e.kind == "subject.forgotten":
                _forget_subject(db, e.payload.subject, e.position)
                continue
            marks = ",".join("?" * len(ARCHIVES[e.kind]))
            for position in e.payload.positions:
                deleted = db.conn.execute(
                    f"DELETE FROM {db['semantic_vectors']} WHERE position = ?"
                    f" AND type IN ({marks})",
                    (position, *ARCHIVES[e.kind]),
                ).rowcount
                if deleted:
                    db.conn.execute(
                        f"INSERT INTO {db['semantic_removed']} (position, removed_at)"
                        " VALUES (?, ?)",
                        (position, e.position),
                    )
                    _drop_passages(db, [position])
        self._store(db, pending, done, total)

    @staticmethod
    def _supersede(db: Tables, events: Sequence[Event]) -> dict[str, int]:
        """Remove the vectors of concepts ``events`` upsert again; return each one's newest.

        Every superseded upsert is recorded as removed at the position of the upsert after
        it, whether its vector was stored by an earlier batch or never embedded (superseded
        within this one), so the tables are the same in any batch sizes.
        """
        latest: dict[str, int] = {}
        concepts, removed = db["semantic_concepts"], db["semantic_removed"]
        for e in events:
            if e.kind != "concept.upserted":
                continue
            concept_id = e.payload.id
            old = latest.get(concept_id)
            if old is None:
                row = db.conn.execute(
                    f"SELECT position FROM {concepts} WHERE id = ?", (concept_id,)
                ).fetchone()
                old = None if row is None else int(row[0])
            if old is not None:
                db.conn.execute(f"DELETE FROM {db['semantic_vectors']} WHERE position = ?", (old,))
                _drop_passages(db, [old])
                db.conn.execute(
                    f"INSERT OR REPLACE INTO {removed} (position, removed_at) VALUES (?, ?)",
                    (old, e.position),
                )
            latest[concept_id] = e.position
        db.conn.executemany(
            f"INSERT OR REPLACE INTO {concepts} (id, position) VALUES (?, ?)", latest.items()
        )
        return latest

    def _store(self, db: Tables, items: list[Event], done: int, total: int) -> int:
        """Embed one slice of items and store its vectors; return the texts done."""
        if not items:
            return done
        texts = [item_text(e) for e in items]
        heads = [text[:MAX_TEXT] for text, _ in texts]
        parts = [passages(text) if self.passages else [] for text in heads]
        embedded = self.embedder.embed(heads + [p for some in parts for p in some])
        embedded = np.ascontiguousarray(embedded, dtype=np.float32)
        rows = [
            (e.position, e.payload.agent, e.payload.visibility, kind, v.tobytes())
            for e, (_, kind), v in zip(items, texts, embedded[: len(items)], strict=True)
        ]
        self._insert(db, rows)
        at = len(items)
        extra: list[tuple[int, int, bytes]] = []
        for e, some in zip(items, parts, strict=True):
            for n in range(len(some)):
                extra.append((e.position, n + 1, embedded[at + n].tobytes()))
            at += len(some)
        db.conn.executemany(
            f"INSERT INTO {db['semantic_passages']} (position, passage, vector) VALUES (?, ?, ?)",
            extra,
        )
        done += len(items)
        if self.progress is not None:
            self.progress("semantic: embedded", done, total)
        return done

    @staticmethod
    def _insert(db: Tables, rows: list[tuple[int, str, str, str, bytes]]) -> None:
        db.conn.executemany(
            f"INSERT INTO {db['semantic_vectors']} (position, agent, visibility, type, vector)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )


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


def vectors_of(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, bytes]:
    """Return the stored vectors (float32 bytes) of the live items at ``positions``."""
    found: dict[int, bytes] = {}
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        for position, vector in conn.execute(
            f"SELECT position, vector FROM semantic_vectors WHERE position IN ({marks})",
            list(chunk),
        ):
            found[position] = vector
    return found


def best_passages(
    conn: sqlite3.Connection, positions: Sequence[int], query: npt.NDArray[np.float32]
) -> dict[int, float]:
    """Return the best cosine of ``query`` to the stored passages of each item at
    ``positions`` that has any (ADR 0054: a long text beyond its head; ADR 0097).

    One batched read; an item without passages (a text of at most :data:`PASSAGE_WORDS`
    words, or a store that keeps none) is left out.
    """
    found: dict[int, float] = {}
    vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT position, vector FROM semantic_passages WHERE position IN ({marks})",
            list(chunk),
        ).fetchall()
        if not rows:
            continue
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        scores = matrix.reshape(len(rows), -1) @ vector
        for (position, _), score in zip(rows, scores.tolist(), strict=True):
            if score > found.get(position, -2.0):
                found[position] = score
    return found


def embedder_of(conn: sqlite3.Connection) -> tuple[str, str] | None:
    """Return the (provider, model) that embedded the live semantic index, or None."""
    row = conn.execute(
        "SELECT identity FROM engram_generations WHERE name = ? AND state = 'live'",
        (SemanticIndex.name,),
    ).fetchone()
    if row is None or "embedder=" not in str(row[0]):
        return None
    try:
        fingerprint = json.loads(str(row[0]).split("embedder=", 1)[1])
        return str(fingerprint["provider"]), str(fingerprint["model"])
    except (ValueError, KeyError, TypeError):
        return None


def similarities(
    embedder: Embedder, query: npt.NDArray[np.float32], texts: Sequence[str]
) -> list[float]:
    """Return the cosine similarity of ``query`` to each text's vector, as the index scores it
    (a long text by its best passage, ADR 0054).

    For items the index no longer holds (archived since a time a read looks back to).
    """
    if not texts:
        return []
    heads = [t[:MAX_TEXT] for t in texts]
    parts = [passages(t) for t in heads]
    embedded = embedder.embed(heads + [p for some in parts for p in some])
    vectors = np.ascontiguousarray(embedded, dtype=np.float32)
    vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    scores = vectors @ vector
    out, at = [], len(heads)
    for i, some in enumerate(parts):
        out.append(float(max([scores[i], *scores[at : at + len(some)]])))
        at += len(some)
    return out
