"""The embedding cache: vectors keyed by SHA-256 of (fingerprint, text), in a SQLite table.

A rebuild of the semantic index then never embeds the same text twice: :class:`CachedEmbedder`
looks every text up and sends only the misses to the model. The table lives in the projection
store file; it is a cache, so losing it costs time, never truth.

A cache that owns its file treats it so: a file that is corrupt or not a database is moved
aside and started afresh, and when the file cannot be opened or written at all (a full disk,
read-only media) the cache carries on in memory. Each of these is said once, with an
:class:`EmbeddingCacheWarning`; none of them fails the embedding that needed the cache.

One cache serves every thread of a process (the daemon embeds from its follower and its
scheduler's worker, and closes from the main thread): an owned connection is opened for use
from any thread and every use of it holds the cache's lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from engram.ledger import chunked
from engram.ledger.files import create_private
from engram.projections.embedding.port import (
    Embedder,
    Fingerprint,
    FloatArray,
    TokenWindow,
    check_texts,
    truncate,
)
from engram.projections.errors import EmbeddingConfigError, EmbeddingProviderError

TABLE = "embedding_cache"


class EmbeddingCacheWarning(UserWarning):
    """The cache file could not be used as it was: moved aside, or replaced by memory."""


_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    key BLOB PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    vector BLOB NOT NULL
)
"""


def cache_key(fingerprint: Fingerprint | str, text: str) -> bytes:
    """Return the 32-byte key of ``text`` embedded under ``fingerprint``."""
    canonical = fingerprint.text if isinstance(fingerprint, Fingerprint) else fingerprint
    # The canonical fingerprint is JSON, which never holds a raw NUL: the split is unambiguous.
    return hashlib.sha256(
        canonical.encode() + b"\0" + text.encode("utf-8", "surrogatepass")
    ).digest()


class EmbeddingCache:
    """Float32 vectors by cache key, in the ``embedding_cache`` table of a SQLite database.

    Takes an open connection (the projection store's) or a path to open. With a connection
    it does not own, writes join the transaction in progress and the caller commits; a
    :meth:`put_many` outside any transaction commits itself. The table is created if missing.
    A cache that opened its own file may be used from any thread (each call holds its lock);
    a borrowed connection keeps its owner's threading rules.
    """

    def __init__(self, conn_or_path: sqlite3.Connection | str | os.PathLike[str]) -> None:
        self.path: str | None = None
        self._lock = threading.RLock()
        if isinstance(conn_or_path, sqlite3.Connection):
            self.conn, self._owned = conn_or_path, False
            self.conn.execute(_SCHEMA)
        elif isinstance(conn_or_path, str | os.PathLike):
            self.path, self._owned = os.fspath(conn_or_path), True
            self.conn = self._open_file(self.path)
        else:
            raise EmbeddingConfigError(
                f"EmbeddingCache takes a sqlite3.Connection or a path, "
                f"got {type(conn_or_path).__name__}"
            )

    @staticmethod
    def _connect(path: str) -> sqlite3.Connection:
        create_private(path)  # the texts it embedded: its user's alone (ADR 0183)
        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            conn.execute(_SCHEMA)
            conn.execute(f"SELECT key FROM {TABLE} LIMIT 1").fetchall()
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_file(self, path: str) -> sqlite3.Connection:
        try:
            return self._connect(path)
        except sqlite3.DatabaseError as exc:
            if _cannot_write(exc):
                return self._in_memory(f"cannot be opened ({exc})")
            aside = f"{path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}"
            try:
                os.replace(path, aside)
                conn = self._connect(path)
            except (OSError, sqlite3.Error) as again:
                return self._in_memory(f"is damaged ({exc}) and cannot be replaced ({again})")
            _warn(f"embedding cache {path} was damaged ({exc}); moved to {aside}, started afresh")
            return conn
        except OSError as exc:
            return self._in_memory(f"cannot be opened ({exc})")

    def _in_memory(self, why: str) -> sqlite3.Connection:
        _warn(f"embedding cache {self.path} {why}; caching in memory for this process")
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(_SCHEMA)
        return conn

    def _degrade(self, exc: sqlite3.Error) -> None:
        """Move an owned cache to memory after its file failed mid-use (a full disk)."""
        if not self._owned:
            raise exc
        with self._lock:
            broken, self.conn = self.conn, self._in_memory(f"failed ({exc})")
            with contextlib.suppress(sqlite3.Error):
                broken.close()

    def close(self) -> None:
        """Close the connection if this cache opened it."""
        if self._owned:
            with self._lock:
                self.conn.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        with self._lock:
            (count,) = self.conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
        return int(count)

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, FloatArray]:
        """Return the cached vectors of those ``keys`` that are present."""
        found: dict[bytes, FloatArray] = {}
        with self._lock:
            try:
                for chunk in chunked(list(dict.fromkeys(keys))):
                    marks = ", ".join("?" * len(chunk))
                    rows = self.conn.execute(
                        f"SELECT key, vector FROM {TABLE} WHERE key IN ({marks})", list(chunk)
                    )
                    for key, blob in rows:
                        found[bytes(key)] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
            except sqlite3.DatabaseError as exc:
                self._degrade(exc)
                return {}
        return found

    def discard(self, texts: Iterable[str]) -> int:
        """Remove the vectors of ``texts`` under every fingerprint the cache holds.

        Forgetting a subject calls it with the subject's texts while they can still be read
        (ADR 0045), so no vector and no text hash of them outlives the forget. Texts are
        keyed as :meth:`CachedEmbedder.embed` keys them (truncated the same way). Returns
        how many vectors were removed; a cache that cannot be written warns and removes none.
        """
        items = truncate([t for t in dict.fromkeys(texts) if isinstance(t, str) and t])
        if not items:
            return 0
        removed = 0
        with self._writing() as written:
            fingerprints = [
                str(f) for (f,) in self.conn.execute(f"SELECT DISTINCT fingerprint FROM {TABLE}")
            ]
            keys = [(cache_key(f, text),) for f in fingerprints for text in items]
            self.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not kept
            before = self.conn.total_changes
            self.conn.executemany(f"DELETE FROM {TABLE} WHERE key = ?", keys)
            removed = self.conn.total_changes - before
        return removed if written.ok else 0

    def put_many(
        self, fingerprint: Fingerprint | str, items: Iterable[tuple[bytes, FloatArray]]
    ) -> None:
        """Store ``(key, vector)`` pairs embedded under ``fingerprint``, replacing those keys."""
        canonical = fingerprint.text if isinstance(fingerprint, Fingerprint) else fingerprint
        rows = [
            (key, canonical, np.ascontiguousarray(vector, dtype="<f4").tobytes())
            for key, vector in items
        ]
        with self._writing():
            self.conn.executemany(
                f"INSERT OR REPLACE INTO {TABLE} (key, fingerprint, vector) VALUES (?, ?, ?)",
                rows,
            )

    @contextlib.contextmanager
    def _writing(self) -> Iterator[_Written]:
        """Run a write: committed here unless it joins the caller's transaction; on a
        database error rolled back (an owned cache), the cache moved to memory and the
        error swallowed. What it yields says whether the write went through.
        """
        written = _Written()
        with self._lock:
            started = not self.conn.in_transaction
            try:
                yield written
                if started:
                    self.conn.commit()
                written.ok = True
            except sqlite3.DatabaseError as exc:
                if self._owned and started:
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.rollback()
                self._degrade(exc)


class _Written:
    """Whether a write of :meth:`EmbeddingCache._writing` went through."""

    ok = False


def _cannot_write(exc: sqlite3.DatabaseError) -> bool:
    """Tell a file that cannot be opened or written from one whose content is damaged."""
    text = str(exc).lower()
    return any(
        words in text
        for words in ("unable to open", "disk is full", "readonly", "read-only", "disk i/o")
    )


def _warn(message: str) -> None:
    warnings.warn(message, EmbeddingCacheWarning, stacklevel=4)


class CachedEmbedder(Embedder):
    """Wrap an embedder so that only texts missing from the cache reach it.

    Same fingerprint, dimension and vectors as the wrapped embedder. ``misses`` counts the
    distinct texts sent to the wrapped embedder over this wrapper's life, ``hits`` all other
    texts (a text repeated within one call is embedded once).
    """

    provider: ClassVar[str] = "cached"

    def __init__(self, embedder: Embedder, cache: EmbeddingCache) -> None:
        super().__init__(batch_size=embedder.batch_size)
        self.embedder = embedder
        self.cache = cache
        self.hits = 0
        self.misses = 0

    @property
    def fingerprint(self) -> Fingerprint:
        return self.embedder.fingerprint

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def window(self) -> TokenWindow | None:
        return self.embedder.window

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.embedder!r})"

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        return self.embedder.embed(texts)

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``, taking what the cache has and storing what it had not."""
        return self._embed(texts, store=True)

    def embed_transient(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``, taking what the cache has and storing nothing (a query, a task:
        the ledger may never hold them, so ``forget`` could not find them here)."""
        return self._embed(texts, store=False)

    def _embed(self, texts: Sequence[str], *, store: bool) -> FloatArray:
        items = truncate(check_texts(texts))
        fingerprint = self.fingerprint
        dimension = self.dimension
        keys = [cache_key(fingerprint, text) for text in items]
        vectors: dict[bytes, Any] = {
            key: vector
            for key, vector in self.cache.get_many(keys).items()
            if vector.shape == (dimension,)
        }
        missing = {key: text for key, text in zip(keys, items, strict=True) if key not in vectors}
        if missing:
            fresh = self.embedder.embed(list(missing.values()))
            if fresh.shape != (len(missing), dimension):
                raise EmbeddingProviderError(
                    f"{self.embedder.provider} provider returned shape {fresh.shape} "
                    f"for {len(missing)} texts of dimension {dimension}"
                )
            vectors.update(zip(missing, fresh, strict=True))
            if store:
                self.cache.put_many(fingerprint, zip(missing, fresh, strict=True))
        self.misses += len(missing)
        self.hits += len(items) - len(missing)
        out = np.empty((len(items), dimension), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = vectors[key]
        return out
