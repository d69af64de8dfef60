"""SQLite adapter: the embedded default. One file in WAL mode, one writer at a time.

Writers take the database lock up front (``BEGIN IMMEDIATE``) and wait for it up to the busy
timeout, so they never fail with "database is locked" mid-transaction. Readers never block
writers (WAL).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.pool import QueuePool

from engram.ledger.backend import (
    AuditTarget,
    Backend,
    InsertConflictError,
    Row,
    StoredContent,
    WriteTransaction,
    check_format,
)
from engram.ledger.chunks import chunked
from engram.ledger.codec import GENESIS_HASH
from engram.ledger.errors import (
    AppendOnlyError,
    ConfigError,
    LedgerNotFoundError,
    NotALedgerError,
    ReadOnlyLedgerError,
    StoreError,
)
from engram.ledger.files import create_private
from engram.ledger.schema import (
    APPEND_ONLY_MESSAGE,
    COLUMNS,
    FORMAT_VERSION,
    HASH_ALGORITHM,
    build_metadata,
)

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM events"
_INSERT = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
REPLACE_REFUSED = f"UNIQUE constraint failed: events ({APPEND_ONLY_MESSAGE}: no row is replaced)"
_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END",
    f"CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events "
    f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY_MESSAGE}'); END",
    # REPLACE (and INSERT OR REPLACE) deletes the row it collides with without firing the
    # delete trigger, so an insert that would collide is refused before it runs. The message
    # starts like SQLite's own UNIQUE failure so the append path still treats a collision of
    # its own (a retried id, a stale cached version) as a conflict to re-plan.
    f"CREATE TRIGGER IF NOT EXISTS events_no_replace BEFORE INSERT ON events "
    f"WHEN EXISTS (SELECT 1 FROM events WHERE position = NEW.position) "
    f"OR EXISTS (SELECT 1 FROM events WHERE id = NEW.id) "
    f"OR EXISTS (SELECT 1 FROM events WHERE stream = NEW.stream AND version = NEW.version) "
    f"BEGIN SELECT RAISE(ABORT, '{REPLACE_REFUSED}'); END",
)


_HEAD = "SELECT position, hash FROM events ORDER BY position DESC LIMIT 1"


def _store_error(action: str, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if APPEND_ONLY_MESSAGE in text:
        return AppendOnlyError(f"{action}: {APPEND_ONLY_MESSAGE}")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreError(
            f"{action}: the SQLite database stayed locked past the busy timeout ({text})"
        )
    return StoreError(f"{action}: {text}")


#: SQLite's primary result codes for a file that is not a database, or a damaged one.
_NOT_A_DATABASE = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


def _not_a_ledger(path: str, exc: BaseException) -> NotALedgerError | None:
    """Return the error to raise when ``exc`` says ``path`` is no database, else None."""
    while exc is not None and not isinstance(exc, sqlite3.Error):
        exc = exc.__cause__  # type: ignore[assignment]
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _NOT_A_DATABASE:
        return None
    return NotALedgerError(f"{path} is not an engram ledger: {exc}")


def into_wal(conn: Any, timeout: float) -> None:
    """Put the SQLite database of ``conn`` in WAL mode, waiting up to ``timeout`` seconds.

    Processes that open a new database at the same moment each switch it to WAL: the switch
    upgrades a shared lock to an exclusive one, and where another connection holds the lock
    SQLite answers "database is locked" at once, without its busy handler (waiting there
    could deadlock). The loser tries again, with a growing pause, until the winner is done."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", sqlite3.SQLITE_BUSY) & 0xFF
            if code != sqlite3.SQLITE_BUSY or time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def readable_uri(path: str, timeout: float = 30.0) -> str:
    """Return a URI that opens the SQLite file at ``path`` for reading without writing.

    ``mode=ro`` when SQLite can share the file with writers (it needs to create the WAL
    index beside it); else ``immutable=1``, which reads the file as it stands: exact on
    read-only media, where nothing can change it, unless un-checkpointed WAL content waits
    beside it, which is then an error rather than silently left out.
    """
    base = "file:" + urllib.parse.quote(path)
    # Opening a damaged file in WAL mode leaves a WAL and its index beside it: a reader that
    # refuses the file takes away what its probe created.
    absent = [p for p in (path + "-wal", path + "-shm") if not os.path.lexists(p)]
    try:
        probe = sqlite3.connect(f"{base}?mode=ro", uri=True, timeout=timeout)
        try:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            probe.close()
        return f"{base}?mode=ro"
    except sqlite3.DatabaseError as exc:  # also "file is not a database": not an open failure
        wrong = _not_a_ledger(path, exc)
        if wrong is not None:
            for leftover in absent:
                with contextlib.suppress(OSError):
                    os.remove(leftover)
            raise wrong from None
        if not isinstance(exc, sqlite3.OperationalError) or "unable to open" not in str(exc):
            raise _store_error(f"read {path}", exc) from exc
    wal = path + "-wal"
    if os.path.exists(wal) and os.path.getsize(wal) > 0:
        raise StoreError(
            f"cannot read {path}: it sits on read-only media with un-checkpointed changes in "
            f"{wal}; copy its files to writable storage and read the copy"
        )
    return f"{base}?immutable=1"


@contextmanager
def _translate(action: str) -> Iterator[None]:
    try:
        yield
    except (sa.exc.DBAPIError, sqlite3.Error) as exc:
        orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
        if not isinstance(orig, sqlite3.Error):
            raise StoreError(f"{action}: {exc}") from exc
        error = _store_error(action, orig)
        if isinstance(error, AppendOnlyError):
            raise error from None
        raise error from exc


class _Tx(WriteTransaction):
    """The writer's connection as one reusable context manager: BEGIN IMMEDIATE .. COMMIT.

    The hot path speaks to the driver directly, through one cursor kept for the writer's
    life: SQLAlchemy's per-statement result setup, a generator-based context manager and a
    new cursor per statement cost more than SQLite itself spends on a one-row append.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cur = conn.cursor()

    def __enter__(self) -> _Tx:
        try:
            self._cur.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _store_error("append", exc) from exc
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: object
    ) -> None:
        if kind is None:
            try:
                self._cur.execute("COMMIT")
                return
            except sqlite3.Error as error:
                exc = error
        try:
            if self._conn.in_transaction:
                self._cur.execute("ROLLBACK")
        except sqlite3.Error as error:
            raise _store_error("roll back an append", error) from exc
        if isinstance(exc, sqlite3.Error):
            raise _store_error("append", exc) from exc

    def close(self) -> None:
        self._cur.close()

    def head(self) -> tuple[int, bytes]:
        row = self._cur.execute(_HEAD).fetchone()
        if row is None:
            return 0, GENESIS_HASH
        position, hash_ = row
        return position, hash_

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        # One indexed max() per stream: a GROUP BY would read every version of the stream.
        found: dict[str, int] = {}
        cur = self._cur
        for stream in streams:
            (version,) = cur.execute(
                "SELECT max(version) FROM events WHERE stream = ?", (stream,)
            ).fetchone()
            if version is not None:
                found[stream] = version
        return found

    def find(self, ids: Sequence[str]) -> dict[str, StoredContent]:
        found: dict[str, StoredContent] = {}
        for chunk in chunked(ids):
            marks = ", ".join("?" * len(chunk))
            for id_, *content in self._conn.execute(
                f"SELECT id, {', '.join(StoredContent._fields)} FROM events WHERE id IN ({marks})",
                chunk,
            ):
                found[id_] = StoredContent._make(content)
        return found

    def insert(self, rows: Sequence[Row]) -> None:
        try:
            if len(rows) == 1:
                self._cur.execute(_INSERT, rows[0])
            else:
                self._cur.executemany(_INSERT, rows)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise InsertConflictError(str(exc)) from None
            raise


class SQLiteBackend(Backend):
    """The ledger in one SQLite file."""

    name = "sqlite"
    #: A replay page whose events (about 1 KB each) stay in a core's own cache while they
    #: are built, handed out and freed, and whose memory the next page reuses; its query's
    #: setup is about 25 µs, 0.05 µs an event (ADR 0104).
    page_rows = 500

    def __init__(
        self,
        path: str,
        *,
        durability: str = "full",
        busy_timeout: float = 30.0,
        readonly: bool = False,
    ) -> None:
        if durability not in ("full", "fast"):
            raise ConfigError(f"durability must be 'full' or 'fast', got {durability!r}")
        self.path = os.path.abspath(os.path.expanduser(path))
        self.readonly = readonly
        # The stored text is canonical UTC ISO-8601 (format_at), which this parses as is.
        self.parse_at = datetime.fromisoformat
        if readonly:
            self._open_readonly(busy_timeout)
            return
        parent = os.path.dirname(self.path)
        if not os.path.isdir(parent):
            try:
                os.makedirs(parent, mode=0o700, exist_ok=True)  # its user's alone (ADR 0175)
            except OSError as exc:
                raise ConfigError(f"cannot create the ledger directory {parent}: {exc}") from None
        synchronous = "FULL" if durability == "full" else "NORMAL"
        busy_ms = int(busy_timeout * 1000)

        def on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # transactions are begun explicitly
            dbapi_conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            into_wal(dbapi_conn, busy_timeout)
            dbapi_conn.execute(f"PRAGMA synchronous = {synchronous}")

        def engine(pool_size: int) -> sa.Engine:
            eng = sa.create_engine(
                f"sqlite:///{self.path}",
                poolclass=QueuePool,
                pool_size=pool_size,
                max_overflow=8,
                connect_args={"check_same_thread": False, "timeout": busy_timeout},
            )
            # Created where SQLite would create it, at the first connection (an open refused
            # before it writes nothing), its user's alone (ADR 0183).
            sa_event.listen(eng, "do_connect", lambda *_: create_private(self.path))
            sa_event.listen(eng, "connect", on_connect)
            return eng

        self._writer = engine(1)
        self._reader = engine(4)
        self._write_conn: Any = None
        self._tx: _Tx | None = None

    def _open_readonly(self, busy_timeout: float) -> None:
        """Read the file without ever writing to it (ADR 0022).

        ``mode=ro`` shares the live file with writers; on read-only media it cannot create
        the WAL index (``-shm``), and then ``immutable=1`` reads the file as it stands, which
        is exact when nothing can change it and no un-checkpointed WAL content waits beside.
        """
        if not os.path.isfile(self.path):
            raise LedgerNotFoundError(f"no ledger at {self.path}")
        uri = readable_uri(self.path, busy_timeout)
        busy_ms = int(busy_timeout * 1000)

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=busy_timeout)
            conn.isolation_level = None
            conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
            return conn

        self._writer = sa.create_engine("sqlite://", creator=connect, poolclass=QueuePool)
        self._reader = sa.create_engine(
            "sqlite://", creator=connect, poolclass=QueuePool, pool_size=4, max_overflow=8
        )
        self._write_conn = None
        self._tx = None

    @contextmanager
    def _exclusive(self, action: str) -> Iterator[sa.Connection]:
        with _translate(action), self._writer.connect() as conn:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.rollback()
                raise
            conn.commit()

    def create(self) -> None:
        if not self.readonly:
            self._refuse_another_database()
        try:
            self._create()
        except StoreError as exc:
            wrong = _not_a_ledger(self.path, exc)
            if wrong is None:
                raise
            raise wrong from None

    def _refuse_another_database(self) -> None:
        """Refuse, before a writer touches it (WAL mode rewrites the header), a database
        that has tables but not a ledger's: another program's, or a ledger whose events
        table was removed. Starting a chain in it would hide either. A file SQLite cannot
        read here is left to the open, which names it."""
        if not os.path.isfile(self.path) or os.path.getsize(self.path) == 0:
            return
        try:
            # immutable: read the file as it stands, making no -wal or -shm beside it
            uri = f"{Path(self.path).resolve().as_uri()}?mode=ro&immutable=1"
            conn = sqlite3.connect(uri, uri=True)
            try:
                tables = {
                    row[0]
                    for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
                }
            finally:
                conn.close()
        except sqlite3.Error:
            return
        if tables and not {"events", "ledger_meta"} <= tables:
            why = "its events table was removed" if "ledger_meta" in tables else "another's"
            raise NotALedgerError(
                f"{self.path} is not an engram ledger (no events table: {why}); nothing was written"
            )

    def _create(self) -> None:
        if self.readonly:
            with _translate("open the ledger read-only"), self._reader.connect() as conn:
                self._check_format(conn)
            return
        with self._exclusive("create the ledger") as conn:
            tables = {
                row[0]
                for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if tables and not {"events", "ledger_meta"} <= tables:  # changed since the check
                raise NotALedgerError(f"{self.path} is not an engram ledger (no events table)")
            if not tables:
                build_metadata().create_all(conn)
                # Only a ledger made here is given its metadata: one missing from a ledger
                # that exists was taken out of it, which the check refuses (ADR 0160).
                conn.exec_driver_sql(
                    "INSERT INTO ledger_meta (key, value) VALUES (?, ?), (?, ?)",
                    ("format_version", FORMAT_VERSION, "hash_algorithm", HASH_ALGORITHM),
                )
            for ddl in _TRIGGERS:
                conn.exec_driver_sql(ddl)
            self._check_format(conn)

    def _check_format(self, conn: sa.Connection) -> None:
        names = {
            row[0]
            for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if not names:
            # An empty database: a creation killed before it committed leaves one (its
            # file, WAL mode set, no table). A writer makes the ledger in it.
            raise LedgerNotFoundError(
                f"no ledger at {self.path} (the database is empty: was its creation interrupted?)"
            )
        if not {"events", "ledger_meta"} <= names:
            raise NotALedgerError(f"{self.path} is not an engram ledger (no events table)")
        meta: dict[object, object] = dict(
            conn.exec_driver_sql(
                "SELECT key, value FROM ledger_meta"
                " WHERE key IN ('format_version', 'hash_algorithm')"
            ).all()
        )
        check_format(str(self.path), meta.get("format_version"), meta.get("hash_algorithm"))

    def ledger_id(self, create: bool) -> tuple[str, bool]:
        query = "SELECT value FROM ledger_meta WHERE key = 'ledger_id'"
        with _translate("read the ledger's identity"), self._reader.connect() as conn:
            found = conn.exec_driver_sql(query).scalar()
        if found or not create or self.readonly:
            return str(found or ""), False
        new = uuid.uuid4().hex
        with self._exclusive("name the ledger") as conn:
            conn.exec_driver_sql(
                "INSERT OR IGNORE INTO ledger_meta (key, value) VALUES ('ledger_id', ?)", (new,)
            )
            found = conn.exec_driver_sql(query).scalar()
        return str(found), found == new

    def write(self) -> _Tx:
        if self.readonly:
            raise ReadOnlyLedgerError(f"{self.path} is open read-only")
        # One write path per process: the store calls this under its write lock, so the
        # writer keeps one connection (and one cursor) checked out for its whole life.
        tx = self._tx
        if tx is None:
            with _translate("open the writer"):
                self._write_conn = self._writer.raw_connection()
                tx = self._tx = _Tx(self._write_conn.driver_connection)
        return tx

    def read_rows(
        self,
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> list[Row]:
        return self._fetch(*self._rows_query(after, upto, kinds, streams, limit))

    @staticmethod
    def _rows_query(
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> tuple[str, list[Any]]:
        sql = [_SELECT, " WHERE position > ?"]
        params: list[Any] = [after]
        if upto is not None:
            sql.append(" AND position <= ?")
            params.append(upto)
        for column, values in (("kind", kinds), ("stream", streams)):
            if values is not None:
                sql.append(f" AND {column} IN ({', '.join('?' * len(values))})")
                params.extend(values)
        sql.append(" ORDER BY position LIMIT ?")
        params.append(limit)
        return "".join(sql), params

    @contextmanager
    def scan_rows(
        self,
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> Iterator[Iterable[Row]]:
        # The replay's path (ADR 0059, ADR 0099): the driver's cursor itself, rows freed
        # once their events are built and no generator step between the cursor and the loop.
        sql, params = self._rows_query(after, upto, kinds, streams, limit)
        with _translate("read"):
            conn = self._reader.raw_connection()  # the pool's connection, no Connection around it
            try:
                yield conn.driver_connection.execute(sql, params)  # type: ignore[union-attr]
            finally:
                conn.close()

    def read_positions(self, positions: Sequence[int]) -> list[Row]:
        marks = ", ".join("?" * len(positions))
        return self._fetch(f"{_SELECT} WHERE position IN ({marks})", list(positions))

    def read_hashes(self, positions: Sequence[int]) -> dict[int, bytes]:
        marks = ", ".join("?" * len(positions))
        sql = f"SELECT position, hash FROM events WHERE position IN ({marks})"
        return {pos: bytes(h) for pos, h in self._fetch(sql, list(positions))}

    def read_stream_rows(self, stream: str, after_version: int, limit: int) -> list[Row]:
        return self._fetch(
            f"{_SELECT} WHERE stream = ? AND version > ? ORDER BY version LIMIT ?",
            [stream, after_version, limit],
        )

    def stream_heads(self, streams: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for stream in streams:  # one indexed max() each, as the write path does
            ((version,),) = self._fetch(
                "SELECT max(version) FROM events WHERE stream = ?", [stream]
            )
            if version is not None:
                found[stream] = version
        return found

    def _fetch(self, sql: str, params: list[Any]) -> list[Row]:
        # The driver's rows as they come: the store parses ``at`` while it builds each event,
        # so no second tuple is made per row.
        with _translate("read"), self._reader.connect() as conn:
            cursor = conn.connection.driver_connection.execute(sql, params)  # type: ignore[union-attr]
            return cursor.fetchall()  # type: ignore[no-any-return]

    def at_text(self, value: Any) -> str:
        # The stored text is what was hashed; a cell that is not text was tampered with.
        if not isinstance(value, str):
            raise TypeError(f"`at` holds {type(value).__name__}, not text")
        return value

    def head(self) -> int:
        ((value,),) = self._fetch("SELECT max(position) FROM events", [])
        return int(value or 0)

    def wait(self, after: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            head = self.head()
            remaining = deadline - time.monotonic()
            if head > after or remaining <= 0:
                return head
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, 0.05)

    def audit_target(self) -> AuditTarget:
        return AuditTarget("sqlite", self.path)

    def close(self) -> None:
        if self._tx is not None:
            self._tx.close()
            self._tx = None
        if self._write_conn is not None:
            self._write_conn.close()
            self._write_conn = None
        self._writer.dispose()
        self._reader.dispose()
