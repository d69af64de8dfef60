"""The semantic index: FAISS vectors of every text-bearing event, keyed by ledger position.

The projection's state is a table of vectors (position, author, visibility, item type,
float32 bytes) of the same events and texts as the lexical index (memories, scars,
reflections, concepts: :func:`engram.projections.lexical.item_text`), committed with the
checkpoint like every projection's; its identity includes the embedder's fingerprint, so
changing the model rebuilds it. With ``passages=True``, a text longer than
:data:`PASSAGE_WORDS` words is also embedded as overlapping passages (:func:`passages`, ADR
0054), kept in ``semantic_passages``: an embedder reads a window of word pieces (MiniLM:
256), so a long memory's head vector says nothing of what follows; its passages are
searched beside it and it is recalled as the memory, by its best vector (max pooling), or
read by recall as a feature of the candidates it scores (ADR 0097: ``engram.open`` stores
them and searches the items' own vectors only). ``memory.archived`` and
``scar.archived`` delete the named vectors of their item types and record each removal
(position, and the archive's position as ``removed_at``) in ``semantic_removed``; a
position without a vector is ignored. A ``concept.upserted`` supersedes the concept's
previous upsert the same way: its vector is removed and the removal recorded (ADR 0037),
so only the newest version is ever served. ``subject.forgotten`` removes the subject's
vectors before it the same way (ADR 0039).

The FAISS index over that table is :mod:`engram.projections.semantic_search`'s
:class:`VectorSearcher` (re-exported here).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from engram.ledger import Event, chunked
from engram.projections.base import Projection, Tables
from engram.projections.embedding import Embedder
from engram.projections.errors import ProjectionConfigError
from engram.projections.lexical import ARCHIVES, TEXT_KINDS, item_text
from engram.projections.semantic_file import IndexFileWarning as IndexFileWarning

# Re-exported: the FAISS index over the table has its own module.
from engram.projections.semantic_search import DEFAULT_EXACT_LIMIT as DEFAULT_EXACT_LIMIT
from engram.projections.semantic_search import TOMBSTONE_SHARE as TOMBSTONE_SHARE
from engram.projections.semantic_search import VectorHit as VectorHit
from engram.projections.semantic_search import VectorSearcher as VectorSearcher

MAX_TEXT = 16_000
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

_REMOVALS = (*ARCHIVES, "subject.forgotten", "reflection.retracted")
#: The item types a removal event reaches by its positions.
_REMOVED_TYPES = {**ARCHIVES, "reflection.retracted": ("reflection",)}


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
    db.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed
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
            types = _REMOVED_TYPES[e.kind]
            marks = ",".join("?" * len(types))
            if e.kind == "reflection.retracted":  # ADR 0110: its text is forgotten content
                db.conn.execute("PRAGMA secure_delete = ON")
            for position in e.payload.positions:
                deleted = db.conn.execute(
                    f"DELETE FROM {db['semantic_vectors']} WHERE position = ?"
                    f" AND type IN ({marks}) AND position < ?",
                    (position, *types, e.position),
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


def stored_cosines(
    conn: sqlite3.Connection, positions: Sequence[int], query: npt.NDArray[np.float32]
) -> dict[int, float]:
    """Return the inner product of ``query`` with the stored vector of each live item at
    ``positions`` (its cosine: vectors are stored normalised); items without one left out.

    One product over all of them, each the float ``np.frombuffer(vector) @ query`` gives to
    the bit: a stack of 1 x d by d x 1 products, which numpy works out one vector dot each,
    the kernel of a single ``@`` (a matrix-vector product is another kernel, whose sums may
    differ in the last bit: ADR 0096); a unit test holds numpy to it (ADR 0101)."""
    stored = vectors_of(conn, positions)
    if not stored:
        return {}
    vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1, 1)
    matrix = np.frombuffer(b"".join(stored.values()), dtype=np.float32)
    products = matrix.reshape(len(stored), 1, -1) @ vector
    return dict(zip(stored, products.reshape(-1).tolist(), strict=True))


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
        # The fingerprint's JSON, then what else the identity names ("passages=128/96").
        fingerprint, _ = json.JSONDecoder().raw_decode(str(row[0]).split("embedder=", 1)[1])
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
