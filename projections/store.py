"""The local projection store: one SQLite file, its catalog of generations, and views.

Every projection's state lives in generation-prefixed tables (``_g7__neurons``). The catalog
row of a generation holds its identity (code version and config), its state (``live`` or
``building``) and its checkpoint, so state and checkpoint commit in one transaction. Readers
query stable views (``neurons``) that point at the live generation; a swap re-points the
views and drops the old tables in one transaction (ADR 0011).

Projections are caches of the ledger, so the file runs with ``synchronous=NORMAL``: a power
loss may lose the last batches, but never splits a batch from its checkpoint. Readers and the
writer each keep a page cache of :data:`CACHE_KIB` (ADR 0103).
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from engram.ledger.files import create_private
from engram.ledger.sqlite import into_wal
from engram.projections.base import Projection, Tables
from engram.projections.errors import (
    ProjectionConfigError,
    ProjectionStoreDamagedError,
    ProjectionStoreError,
)

STORE_FILE = "projections.db"
#: The page cache of each connection to the store, in KiB. A recall reads a few hundred rows
#: scattered over the salience, copies and vector tables and the FTS5 index of a large store:
#: SQLite's default 2 MB cache holds too few of their pages to keep them between recalls, a
#: 64 MB one keeps them (about 0.6 ms of a recall at 100k memories, ADR 0103). It is a
#: ceiling, filled only as pages are read. Memory mapping, which saves reads too, is left
#: off: it turns a file truncated under a reader into a SIGBUS, where a read is an error.
CACHE_KIB = 65_536

_CATALOG = """
CREATE TABLE IF NOT EXISTS engram_generations (
    generation      INTEGER PRIMARY KEY AUTOINCREMENT,
    name            TEXT NOT NULL,
    identity        TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('live', 'building')),
    checkpoint      INTEGER NOT NULL DEFAULT 0,
    failed_position INTEGER,
    failed_kind     TEXT,
    error           TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS engram_generations_live
    ON engram_generations (name) WHERE state = 'live';
CREATE TABLE IF NOT EXISTS engram_store (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Generation(NamedTuple):
    """One catalog row: a generation of a projection's tables."""

    generation: int
    name: str
    identity: str
    state: str
    checkpoint: int
    failed_position: int | None
    failed_kind: str | None
    error: str | None


def physical(generation: int, table: str) -> str:
    """Return the quoted physical name of a projection table in a generation."""
    return f'"_g{generation}__{table}"'


_PLAIN_VIEW = re.compile(
    r'CREATE VIEW "(?P<name>[^"]+)" AS SELECT \* FROM (?P<physical>"_g\d+__[^"]+")'
)


def _view_sql(conn: sqlite3.Connection, table: str, physical_name: str) -> str:
    """Return the statement that creates the stable view ``table`` over ``physical_name``.

    DuckDB's SQLite scanner (``engram sql``) counts rows by reading ROWID, which a WITHOUT
    ROWID table does not have; filtering on its first key column (never null there) makes
    ``count(*)`` read a real column instead, and costs SQLite nothing measurable.
    """
    plain = f'CREATE VIEW "{table}" AS SELECT * FROM {physical_name}'
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
        (physical_name.strip('"'),),
    ).fetchone()
    if row is None or not re.search(r"WITHOUT\s+ROWID\s*$", row[0] or "", re.IGNORECASE):
        return plain
    keys = sorted(
        (int(pk), str(name))
        for _, name, _, _, _, pk in conn.execute(f"PRAGMA table_info({physical_name})")
        if pk
    )
    return f'{plain} WHERE "{keys[0][1]}" IS NOT NULL' if keys else plain


class ProjectionStore:
    """The projection store directory: ``projections.db`` plus per-projection index files."""

    def __init__(self, directory: str | Path, *, busy_timeout: float = 30.0) -> None:
        if not isinstance(directory, str | Path) or not str(directory):
            raise ProjectionConfigError(f"store must be a directory path, got {directory!r}")
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ProjectionConfigError(f"store {self.directory} exists and is not a directory")
        try:
            # The store holds every memory's text in the clear: a folder it creates is its
            # user's alone, as the key store is (ADR 0175); one that exists keeps its mode.
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise ProjectionConfigError(f"cannot create store {self.directory}: {exc}") from exc
        self.path = self.directory / STORE_FILE
        create_private(self.path)  # every memory's text: its user's alone (ADR 0183)
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._conn = self._connect()
        self._readers = threading.local()
        try:
            with self.transaction() as conn:
                for statement in _CATALOG.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                self._repoint_rowless_views(conn)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if _corrupt(exc):
                raise self._damaged(exc) from exc
            raise

    def _damaged(self, exc: sqlite3.DatabaseError) -> ProjectionStoreDamagedError:
        return ProjectionStoreDamagedError(
            f"projection store {self.path} is damaged ({exc}); it is derived from the ledger:"
            " `engram rebuild` sets it aside and builds it again",
            str(self.directory),
        )

    def _connect(self, *, readonly: bool = False) -> sqlite3.Connection:
        try:
            if readonly:
                conn = sqlite3.connect(
                    f"file:{self.path}?mode=ro",
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self.busy_timeout,
                )
            else:
                conn = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self.busy_timeout,
                )
                try:  # several processes may open a new store at once (into_wal says why)
                    into_wal(conn, self.busy_timeout)
                except sqlite3.DatabaseError:
                    conn.close()
                    raise
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        except sqlite3.DatabaseError as exc:
            if _corrupt(exc):
                raise self._damaged(exc) from exc
            raise ProjectionStoreError(f"cannot open projection store {self.path}: {exc}") from exc
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the store's write lock (BEGIN IMMEDIATE) for a block; commit or roll back."""
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise ProjectionStoreError(
                    f"projection store {self.path} is busy or unusable: {exc}"
                ) from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def scrub(self) -> bool:
        """Copy the write-ahead log into the store file and truncate it; return whether it
        was truncated (False: a reader of another process held an old snapshot past the busy
        timeout, and the log is truncated at a later checkpoint).

        After a forgetting (ADR 0039) the log still holds the pages written before the
        deletes, and the store file the pages as they were, until SQLite checkpoints, which
        it does on its own only when the last connection closes: a daemon or a server holding
        the store open would keep the forgotten text on disk for as long as it runs.
        """
        with self._lock:
            try:
                row = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.Error as exc:
                raise ProjectionStoreError(f"projection store {self.path}: {exc}") from exc
        return row is not None and int(row[0]) == 0

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Yield a read-only connection inside one read transaction (a consistent view)."""
        conn = getattr(self._readers, "conn", None)
        if conn is None:
            conn = self._readers.conn = self._connect(readonly=True)
        if conn.in_transaction:  # nested in this thread's snapshot: share it
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    # -- catalog ---------------------------------------------------------------------------

    @staticmethod
    def generations(conn: sqlite3.Connection) -> list[Generation]:
        """Return every catalog row, oldest generation first."""
        rows = conn.execute(
            f"SELECT {', '.join(Generation._fields)} FROM engram_generations ORDER BY generation"
        ).fetchall()
        return [Generation._make(row) for row in rows]

    @staticmethod
    def tables(conn: sqlite3.Connection, projection: Projection, generation: int) -> Tables:
        """Return the handler's view of a generation's tables."""
        return Tables(conn, {t: physical(generation, t) for t in projection.tables})

    def create_generation(
        self, conn: sqlite3.Connection, projection: Projection, state: str
    ) -> Generation:
        """Create an empty generation of ``projection`` (its tables and its catalog row)."""
        cursor = conn.execute(
            "INSERT INTO engram_generations (name, identity, state) VALUES (?, ?, ?)",
            (projection.name, projection.identity(), state),
        )
        generation = cursor.lastrowid
        assert generation is not None
        projection.create(self.tables(conn, projection, generation))
        if state == "live":
            self._point_views(conn, projection, generation)
        return Generation(
            generation=generation,
            name=projection.name,
            identity=projection.identity(),
            state=state,
            checkpoint=0,
            failed_position=None,
            failed_kind=None,
            error=None,
        )

    @staticmethod
    def set_checkpoint(conn: sqlite3.Connection, generation: int, checkpoint: int) -> None:
        """Record that a generation has applied everything up to ``checkpoint``."""
        conn.execute(
            "UPDATE engram_generations SET checkpoint = ?, failed_position = NULL,"
            " failed_kind = NULL, error = NULL WHERE generation = ?",
            (checkpoint, generation),
        )

    @staticmethod
    def set_failure(
        conn: sqlite3.Connection,
        generation: int,
        checkpoint: int,
        position: int,
        kind: str,
        error: str,
    ) -> None:
        """Record that a generation stopped at a failing event."""
        conn.execute(
            "UPDATE engram_generations SET checkpoint = ?, failed_position = ?,"
            " failed_kind = ?, error = ? WHERE generation = ?",
            (checkpoint, position, kind, error, generation),
        )

    def promote(self, conn: sqlite3.Connection, projection: Projection, generation: int) -> None:
        """Make a built generation live: re-point the views, drop every other generation."""
        for old in self.generations(conn):
            if old.name == projection.name and old.generation != generation:
                self.drop_generation(conn, old.generation)
        conn.execute(
            "UPDATE engram_generations SET state = 'live' WHERE generation = ?", (generation,)
        )
        self._point_views(conn, projection, generation)

    def drop_generation(self, conn: sqlite3.Connection, generation: int) -> None:
        """Drop a generation's tables and catalog row."""
        for table in self._generation_tables(conn, generation):
            conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        conn.execute("DELETE FROM engram_generations WHERE generation = ?", (generation,))

    @staticmethod
    def _generation_tables(conn: sqlite3.Connection, generation: int) -> list[str]:
        prefix = f"_g{generation}__"
        return [
            name
            for (name,) in conn.execute(
                # Virtual tables first: dropping one drops its shadow tables with it.
                "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, ?) = ?"
                " ORDER BY coalesce(sql, '') LIKE 'CREATE VIRTUAL TABLE%' DESC, name",
                (len(prefix), prefix),
            )
        ]

    @staticmethod
    def mark_detached(conn: sqlite3.Connection, checkpoints: Mapping[str, int]) -> None:
        """Catalog a detached copy's plain tables as each projection's live state.

        A copy made for a read as of a past time (its tables named as the views are, not per
        generation) needs the catalog the projections' reads consult: one live row per
        projection, at its checkpoint.
        """
        conn.execute(
            "CREATE TABLE engram_generations (name TEXT, generation INTEGER, state TEXT,"
            " checkpoint INTEGER)"
        )
        conn.executemany(
            "INSERT INTO engram_generations VALUES (?, 0, 'live', ?)", list(checkpoints.items())
        )

    @staticmethod
    def count(conn: sqlite3.Connection, table: str) -> int:
        """Return the number of rows in projection table (view) ``table``; 0 if it is absent."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", table):
            raise ProjectionConfigError(f"not a projection table name: {table!r}")
        try:
            return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
        except sqlite3.OperationalError:  # the projection is not in this store
            return 0

    @staticmethod
    def live_generation(conn: sqlite3.Connection, name: str) -> int | None:
        """Return the live generation of projection ``name`` (None if it has none)."""
        row = conn.execute(
            "SELECT generation FROM engram_generations WHERE name = ? AND state = 'live'", (name,)
        ).fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    def _point_views(conn: sqlite3.Connection, projection: Projection, generation: int) -> None:
        for table in projection.tables:
            conn.execute(f'DROP VIEW IF EXISTS "{table}"')
            conn.execute(_view_sql(conn, table, physical(generation, table)))

    @staticmethod
    def _repoint_rowless_views(conn: sqlite3.Connection) -> None:
        # Stores written before views filtered on a key column get them re-pointed once.
        views = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'").fetchall()
        for name, sql in views:
            match = _PLAIN_VIEW.fullmatch(sql or "")
            if match is None or match["name"] != name:
                continue
            wanted = _view_sql(conn, name, match["physical"])
            if wanted != sql:
                conn.execute(f'DROP VIEW "{name}"')
                conn.execute(wanted)

    @staticmethod
    def get(conn: sqlite3.Connection, key: str) -> str | None:
        """Return a store-level setting (such as the ledger this store was built from)."""
        row = conn.execute("SELECT value FROM engram_store WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @staticmethod
    def put(conn: sqlite3.Connection, key: str, value: str) -> None:
        """Set a store-level setting."""
        conn.execute("INSERT OR REPLACE INTO engram_store (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        """Close the store's connections (this thread's reader and the writer)."""
        reader = getattr(self._readers, "conn", None)
        if reader is not None:
            reader.close()
            self._readers.conn = None
        with self._lock:
            self._conn.close()


#: SQLite's result codes for a damaged file: SQLITE_CORRUPT, SQLITE_NOTADB.
_CORRUPT_CODES = (11, 26)


def _corrupt(exc: sqlite3.DatabaseError) -> bool:
    """Say whether ``exc`` reports a damaged database file, not a busy or locked one."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def set_aside(directory: str | Path) -> Path | None:
    """Move a damaged ``projections.db`` (and its WAL and shared-memory files) out of the way
    in ``directory``, renamed with the time; return its new path (None: no file was there).

    The store is derived from the ledger, so nothing is lost: the next open starts an empty
    store and a rebuild fills it. The damaged file is kept for whoever wants to look at it,
    until a forgetting deletes it (:func:`drop_set_aside`).
    """
    path = Path(directory) / STORE_FILE
    if not path.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    aside = path.with_name(f"{STORE_FILE}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            part.rename(f"{aside}{suffix}")
    return aside


def drop_set_aside(directory: str | Path) -> int:
    """Delete the damaged stores :func:`set_aside` kept in ``directory``; return how many
    files went. A forgetting calls it: a damaged copy holds the indexes' text as it was, and
    no forgetting can reach into a file SQLite cannot read (ADR 0146)."""
    gone = 0
    for part in Path(directory).glob(f"{STORE_FILE}.damaged-*"):
        part.unlink(missing_ok=True)
        gone += 1
    return gone
