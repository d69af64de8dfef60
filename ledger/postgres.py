"""PostgreSQL adapter: the shared ledger for agents on many processes and machines.

Every append transaction takes a transaction-scoped advisory lock before it reads the head
and assigns positions, and holds it to commit: positions are gap-free and commit-ordered,
so a reader that has seen position p never later finds an event below p (ADR 0004). New
heads are announced with NOTIFY; followers LISTEN instead of polling.
"""

from __future__ import annotations

import hashlib
import re
import select
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
import psycopg.errors
import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import URL, make_url

from engram.ledger.backend import (
    AuditTarget,
    Backend,
    InsertConflictError,
    Row,
    StoredContent,
    WriteTransaction,
    as_utc,
)
from engram.ledger.codec import GENESIS_HASH, format_at
from engram.ledger.errors import (
    AppendOnlyError,
    ConfigError,
    LedgerNotFoundError,
    NotALedgerError,
    ReadOnlyLedgerError,
    StoreError,
    driver_message,
)
from engram.ledger.schema import (
    APPEND_ONLY_MESSAGE,
    COLUMNS,
    FORMAT_VERSION,
    HASH_ALGORITHM,
    Column,
    build_metadata,
)

_PAYLOAD, _HASH = Column.PAYLOAD.value, Column.HASH.value
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,47}$")
_SELECT_COLUMNS = ", ".join(
    f"{c}::text" if c in ("id", "causation_id", "correlation_id") else c for c in COLUMNS
)
_INSERT_VALUES = ", ".join(
    "%s::uuid"
    if c in ("id", "causation_id", "correlation_id")
    else "%s::timestamptz"
    if c == "at"
    else "%s"
    for c in COLUMNS
)


def _head_sql(schema: str) -> str:
    return f"SELECT position, hash FROM {schema}.events ORDER BY position DESC LIMIT 1"


@contextmanager
def _translate(action: str) -> Iterator[None]:
    try:
        yield
    except sa.exc.DBAPIError as exc:
        text = driver_message(exc.orig or exc)
        if APPEND_ONLY_MESSAGE in text:
            raise AppendOnlyError(f"{action}: {APPEND_ONLY_MESSAGE}") from None
        raise StoreError(f"{action}: {text}") from exc
    except psycopg.Error as exc:
        raise StoreError(f"{action}: {driver_message(exc)}") from exc


class _Tx(WriteTransaction):
    # The hot path speaks to psycopg directly; SQLAlchemy's per-statement result setup
    # would cost more than these lookups. A transaction costs two round trips (ADR 0059):
    # the position lock with the head read after it, then the inserts, the notification and
    # the commit, each pair sent as one pipeline. When this process wrote the last commit it
    # knows (``own``), it costs one (ADR 0084): the plan starts from that head, and the lock,
    # a check that the head's row is still the one written, the inserts, the notification and
    # the commit go as one pipeline. A head that moved meanwhile makes the insert collide
    # with the row at the next position (positions are gap-free and never removed), and the
    # store plans the group again carefully, under the lock.
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        schema: str,
        head: tuple[int, bytes] | None = None,
        *,
        lock_key: int = 0,
        own: tuple[int, bytes] | None = None,
    ) -> None:
        self._conn = conn
        self._cur = conn.cursor()
        self._schema = schema
        self._head = head  # read under the lock in the same pipeline; used once
        self._lock_key = lock_key
        self._own = own  # the head as this process committed it; the lock is not held yet
        self.rows: Sequence[Row] = ()
        self.last: int | None = None

    def head_after(self) -> tuple[int, bytes] | None:
        """Return the head this transaction committed, or None when it does not know it."""
        if self.rows:
            row = self.rows[-1]
            return row[Column.POSITION], bytes(row[_HASH])
        return None

    def _head_sql(self) -> str:
        return _head_sql(self._schema)

    def _versions_sql(self) -> str:
        # One indexed max() per stream: a GROUP BY would read every version of the stream.
        return (
            f"SELECT s, (SELECT max(version) FROM {self._schema}.events WHERE stream = s) "
            "FROM unnest(%s::text[]) AS s"
        )

    def _find_sql(self) -> str:
        return (
            "SELECT id::text, position, stream, kind, schema, actor, payload, "
            f"causation_id::text, correlation_id::text FROM {self._schema}.events "
            "WHERE id = ANY(%s::uuid[])"
        )

    @staticmethod
    def _head_of(row: Any) -> tuple[int, bytes]:
        if row is None:
            return 0, GENESIS_HASH
        position, hash_ = row
        return position, bytes(hash_)

    @staticmethod
    def _versions_of(rows: list[Any]) -> dict[str, int]:
        return {stream: version for stream, version in rows if version is not None}

    @staticmethod
    def _found_of(rows: list[Any]) -> dict[str, StoredContent]:
        found = {}
        for id_, *content in rows:
            stored = StoredContent._make(content)
            found[id_] = stored._replace(payload=bytes(stored.payload))
        return found

    def head(self) -> tuple[int, bytes]:
        if self._own is not None:
            return self._own  # checked under the lock when the rows are sent (commit)
        head, self._head = self._head, None
        if head is not None:
            return head
        return self._head_of(self._cur.execute(self._head_sql()).fetchone())

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        return self._versions_of(
            self._cur.execute(self._versions_sql(), (list(streams),)).fetchall()
        )

    def find(self, ids: Sequence[str]) -> dict[str, StoredContent]:
        if self._own is not None:
            # Asked after a stream looked behind its expectation: versions cached since this
            # process's last commit may be stale, so the group is planned again under the lock.
            raise InsertConflictError("a stream's version was not read under the lock")
        return self._found_of(self._cur.execute(self._find_sql(), (list(ids),)).fetchall())

    def state(
        self, ids: Sequence[str], streams: Sequence[str]
    ) -> tuple[int, bytes, dict[str, int], dict[str, StoredContent]]:
        # Pipelined: the three lookups cost one network round trip.
        heads, versions, found = (self._conn.cursor() for _ in range(3))
        with self._conn.pipeline():
            if self._own is not None:  # the lookups must run under the position lock
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                self._own = None
            heads.execute(self._head_sql())
            versions.execute(self._versions_sql(), (list(streams),))
            found.execute(self._find_sql(), (list(ids),))
        head, last = self._head_of(heads.fetchone())
        return head, last, self._versions_of(versions.fetchall()), self._found_of(found.fetchall())

    def insert(self, rows: Sequence[Row]) -> None:
        # Sent with the commit (:meth:`commit`): a unique index refusing a row raises
        # InsertConflictError from there, before anything is committed.
        self.rows = rows
        self.last = rows[-1][Column.POSITION] if rows else None

    def commit(self, channel: str) -> None:
        """Send the inserts, the head's notification and the commit as one pipeline."""
        conn = self._conn
        own = self._own
        try:
            with conn.pipeline():
                if own is not None:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    # Fails (division by zero) unless the head's row is the one written.
                    conn.execute(
                        f"SELECT 1 / count(*) FROM {self._schema}.events "
                        "WHERE position = %s AND hash = %s",
                        own,
                    )
                if self.rows:
                    self._cur.executemany(
                        f"INSERT INTO {self._schema}.events ({', '.join(COLUMNS)}) "
                        f"VALUES ({_INSERT_VALUES})",
                        self.rows,
                    )
                if self.last is not None:
                    conn.execute("SELECT pg_notify(%s, %s)", (channel, str(self.last)))
                conn.commit()
        except psycopg.errors.UniqueViolation as exc:
            raise InsertConflictError(str(exc).strip()) from None
        except psycopg.errors.DivisionByZero:
            raise InsertConflictError("the ledger's head is not the one last written") from None


class PostgresBackend(Backend):
    """The ledger in a schema of a PostgreSQL database."""

    name = "postgresql"

    def __init__(
        self,
        url: str,
        *,
        schema: str = "engram",
        durability: str = "full",
        busy_timeout: float = 30.0,
        readonly: bool = False,
    ) -> None:
        if durability not in ("full", "fast"):
            raise ConfigError(f"durability must be 'full' or 'fast', got {durability!r}")
        self.readonly = readonly
        if not _SCHEMA_RE.match(schema):
            raise ConfigError(
                f"PostgreSQL schema {schema!r} is invalid: lowercase letters, digits and _, "
                "at most 48 characters"
            )
        try:
            parsed = make_url(url)
        except sa.exc.ArgumentError as exc:
            raise ConfigError(f"invalid PostgreSQL URL {url!r}: {exc}") from None
        self.schema = schema
        self.parse_at = as_utc
        self._libpq = _libpq_uri(parsed)
        self._display = parsed.render_as_string(hide_password=True)
        self._channel = f"engram_{schema}"
        self._lock_key = int.from_bytes(
            hashlib.sha256(schema.encode()).digest()[:8], "big", signed=True
        )
        lock_ms = int(busy_timeout * 1000)

        def on_connect(dbapi_conn: Any, _record: Any) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SET TIME ZONE 'UTC'")
                cur.execute(f"SET lock_timeout = {lock_ms}")
                if durability == "fast":
                    cur.execute("SET synchronous_commit = off")
                if readonly:  # the server refuses any write in these sessions
                    cur.execute("SET default_transaction_read_only = on")
            dbapi_conn.commit()

        self._engine = sa.create_engine(
            parsed.set(drivername="postgresql+psycopg"),
            pool_size=4,
            max_overflow=8,
            pool_pre_ping=True,
        )
        sa_event.listen(self._engine, "connect", on_connect)
        self._local = threading.local()
        self._listeners: list[psycopg.Connection[Any]] = []
        self._listeners_lock = threading.Lock()
        self._write_conn: Any = None
        # (position, hash) of the last row this process committed: the next append's head
        # unless another writer came in between, which its insert then finds (ADR 0084).
        self._own_head: tuple[int, bytes] | None = None

    _TRIGGERS = (
        ("events_no_update", "BEFORE UPDATE ON {s}.events FOR EACH ROW"),
        ("events_no_delete", "BEFORE DELETE ON {s}.events FOR EACH ROW"),
        ("events_no_truncate", "BEFORE TRUNCATE ON {s}.events FOR EACH STATEMENT"),
    )

    def _triggers(self, conn: sa.Connection) -> set[str]:
        rows = conn.exec_driver_sql(
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = 'events'",
            (self.schema,),
        )
        return {name for (name,) in rows}

    def create(self) -> None:
        s = self.schema
        action = "open the ledger read-only" if self.readonly else "create the ledger"
        with _translate(action), self._engine.begin() as conn:
            # Fast path, no locks: an existing ledger is only checked. Creating a trigger
            # locks the table against readers, so it happens only when one is missing.
            if {name for name, _ in self._TRIGGERS} <= self._triggers(conn):
                stored = self._format(conn)
            elif self._foreign(conn):
                raise NotALedgerError(
                    f"schema {s!r} of {self._display} is not an engram ledger: its events"
                    " table is another program's (no ledger_meta beside it)"
                )
            elif self.readonly:
                raise LedgerNotFoundError(f"no ledger in schema {s!r} of {self._display}")
            else:
                # Serialise concurrent creators; DDL is transactional in PostgreSQL.
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {s}")
                build_metadata(schema=s).create_all(conn)
                conn.exec_driver_sql(
                    f"""CREATE OR REPLACE FUNCTION {s}.refuse_change() RETURNS trigger
                    LANGUAGE plpgsql AS $$ BEGIN
                    RAISE EXCEPTION '{APPEND_ONLY_MESSAGE}' USING ERRCODE = 'restrict_violation';
                    END $$"""
                )
                present = self._triggers(conn)
                for name, when in self._TRIGGERS:
                    if name not in present:
                        conn.exec_driver_sql(
                            f"CREATE TRIGGER {name} {when.format(s=s)} "
                            f"EXECUTE FUNCTION {s}.refuse_change()"
                        )
                conn.exec_driver_sql(
                    f"INSERT INTO {s}.ledger_meta (key, value) VALUES (%s, %s), (%s, %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    ("format_version", FORMAT_VERSION, "hash_algorithm", HASH_ALGORITHM),
                )
                stored = self._format(conn)
        if stored != FORMAT_VERSION:
            raise ConfigError(
                f"schema {s} holds ledger format {stored}, this program reads {FORMAT_VERSION}"
            )

    def _foreign(self, conn: sa.Connection) -> bool:
        """Say whether the schema holds an ``events`` table that no ledger made."""
        tables = {
            name
            for (name,) in conn.exec_driver_sql(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,)
            )
        }
        return "events" in tables and "ledger_meta" not in tables

    def _format(self, conn: sa.Connection) -> object:
        return conn.exec_driver_sql(
            f"SELECT value FROM {self.schema}.ledger_meta WHERE key = 'format_version'"
        ).scalar()

    def ledger_id(self, create: bool) -> tuple[str, bool]:
        query = f"SELECT value FROM {self.schema}.ledger_meta WHERE key = 'ledger_id'"
        with _translate("read the ledger's identity"), self._engine.begin() as conn:
            found = conn.exec_driver_sql(query).scalar()
            if found or not create or self.readonly:
                return str(found or ""), False
            new = uuid.uuid4().hex
            conn.exec_driver_sql(
                f"INSERT INTO {self.schema}.ledger_meta (key, value) VALUES ('ledger_id', %s)"
                " ON CONFLICT (key) DO NOTHING",
                (new,),
            )
            found = conn.exec_driver_sql(query).scalar()
        return str(found), found == new

    @contextmanager
    def write(self) -> Iterator[WriteTransaction]:
        # Called under the store's write lock: one held connection is the process's write path.
        if self.readonly:
            raise ReadOnlyLedgerError(f"the ledger in schema {self.schema} is open read-only")
        with _translate("append"):
            own, self._own_head = self._own_head, None
            if own is None:
                conn, head = self._locked_writer()
                tx = _Tx(conn, self.schema, head, lock_key=self._lock_key)
            else:
                conn = self._writer_connection()
                tx = _Tx(conn, self.schema, lock_key=self._lock_key, own=own)
            try:
                yield tx
                tx.commit(self._channel)
            except psycopg.OperationalError:
                self._discard_writer(conn)
                if own is None or not (conn.broken or conn.closed):
                    raise
                # The first statements on a connection the server dropped while idle (the
                # lock's round trip used to find it): plan again carefully on a new one. A
                # commit that went through reads back as the same positions (idempotency).
                raise InsertConflictError("the write connection was lost") from None
            except BaseException:
                self._discard_writer(conn)
                raise
            self._own_head = tx.head_after()

    def _writer_connection(self) -> psycopg.Connection[Any]:
        if self._write_conn is None:
            self._write_conn = self._engine.raw_connection()
        conn: psycopg.Connection[Any] = self._write_conn.driver_connection
        return conn

    def _locked_writer(self) -> tuple[psycopg.Connection[Any], tuple[int, bytes]]:
        """Return the write connection holding the position lock and the head, reconnecting once.

        The head is read by a second statement of the same pipeline: it runs once the lock
        is granted and takes its own snapshot then (READ COMMITTED), so it sees every commit
        of the writer that held the lock before.
        """
        for attempt in (1, 2):
            if self._write_conn is None:
                self._write_conn = self._engine.raw_connection()
            conn: psycopg.Connection[Any] = self._write_conn.driver_connection
            try:
                heads = conn.cursor()
                with conn.pipeline():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    heads.execute(_head_sql(self.schema))
                return conn, _Tx._head_of(heads.fetchone())
            except psycopg.OperationalError:
                # A connection the server dropped while idle: nothing was sent yet, retry.
                self._discard_writer(conn)
                if attempt == 2 or self._write_conn is not None:
                    raise
        raise AssertionError("unreachable")

    def _discard_writer(self, conn: psycopg.Connection[Any]) -> None:
        with suppress(psycopg.Error):
            conn.rollback()
        if conn.closed or conn.broken:
            self._write_conn.invalidate()
            self._write_conn = None

    def read_rows(
        self,
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> list[Row]:
        sql = [f"SELECT {_SELECT_COLUMNS} FROM {self.schema}.events WHERE position > %s"]
        params: list[Any] = [after]
        if upto is not None:
            sql.append(" AND position <= %s")
            params.append(upto)
        for column, values in (("kind", kinds), ("stream", streams)):
            if values is not None:
                sql.append(f" AND {column} = ANY(%s)")
                params.append(list(values))
        sql.append(" ORDER BY position LIMIT %s")
        params.append(limit)
        return self._fetch("".join(sql), params)

    def read_positions(self, positions: Sequence[int]) -> list[Row]:
        return self._fetch(
            f"SELECT {_SELECT_COLUMNS} FROM {self.schema}.events WHERE position = ANY(%s)",
            [list(positions)],
        )

    def read_stream_rows(self, stream: str, after_version: int, limit: int) -> list[Row]:
        return self._fetch(
            f"SELECT {_SELECT_COLUMNS} FROM {self.schema}.events "
            "WHERE stream = %s AND version > %s ORDER BY version LIMIT %s",
            [stream, after_version, limit],
        )

    def stream_heads(self, streams: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        sql = f"SELECT max(version) FROM {self.schema}.events WHERE stream = %s"
        with _translate("read stream versions"), self._engine.connect() as conn:
            for stream in streams:
                version = conn.exec_driver_sql(sql, (stream,)).scalar()
                if version is not None:
                    found[stream] = int(version)
        return found

    def at_text(self, value: Any) -> str:
        return format_at(value)

    def _fetch(self, sql: str, params: list[Any]) -> list[Row]:
        with _translate("read"), self._engine.connect() as conn:
            rows = conn.exec_driver_sql(sql, tuple(params)).fetchall()
        # psycopg may hand bytea back as memoryview; the store compares and hashes bytes.
        return [
            (*r[:_PAYLOAD], bytes(r[_PAYLOAD]), *r[_PAYLOAD + 1 : _HASH], bytes(r[_HASH]))
            for r in rows
        ]

    def head(self) -> int:
        with _translate("read the head"), self._engine.connect() as conn:
            value = conn.exec_driver_sql(f"SELECT max(position) FROM {self.schema}.events").scalar()
        return int(value or 0)

    def _listening(self) -> psycopg.Connection[Any]:
        # One LISTEN connection per thread: a notification drained by one follower must not
        # leave another asleep.
        conn: psycopg.Connection[Any] | None = getattr(self._local, "listener", None)
        if conn is None or conn.closed:
            conn = psycopg.connect(self._libpq, autocommit=True)
            conn.execute(f"LISTEN {self._channel}")
            self._local.listener = conn
            with self._listeners_lock:
                self._listeners.append(conn)
        return conn

    def wait(self, after: int, timeout: float) -> int:
        with _translate("follow"):
            listener = self._listening()
            deadline = time.monotonic() + timeout
            while True:
                try:
                    # Drain, look, then sleep on the socket: a commit after the look wakes us.
                    for _ in listener.notifies(timeout=0, stop_after=1000):
                        pass
                    head = self.head()
                    remaining = deadline - time.monotonic()
                    if head > after or remaining <= 0:
                        return head
                    select.select([listener.fileno()], [], [], min(remaining, 1.0))
                except psycopg.OperationalError:
                    # The server dropped the listener (restart, failover, idle timeout): the
                    # next call listens again and re-reads the head, so nothing is missed.
                    self._drop_listener(listener)
                    return self.head()

    def _drop_listener(self, listener: psycopg.Connection[Any]) -> None:
        with suppress(psycopg.Error):
            listener.close()
        with self._listeners_lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
        self._local.listener = None

    def audit_target(self) -> AuditTarget:
        return AuditTarget("postgresql", self._libpq, self.schema)

    def close(self) -> None:
        if self._write_conn is not None:
            self._write_conn.close()
            self._write_conn = None
        with self._listeners_lock:
            for listener in self._listeners:
                listener.close()
            self._listeners.clear()
        self._engine.dispose()


def _libpq_uri(parsed: URL) -> str:
    """Return ``parsed`` as a libpq URI, its query percent-encoded.

    SQLAlchemy renders a space in a query value as ``+``, which libpq keeps as is, so
    ``?options=-c%20role%3Dacme`` (a tenant's role, ADR 0040) would reach the server as
    ``-c+role=acme``: psycopg's direct connections and DuckDB's scanner use this URI.
    """
    bare = parsed.set(drivername="postgresql", query={}).render_as_string(hide_password=False)
    pairs = [
        (key, value)
        for key, values in parsed.query.items()
        for value in ((values,) if isinstance(values, str) else values)
    ]
    if not pairs:
        return bare
    return f"{bare}?{urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)}"


@contextmanager
def advisory_lock(libpq: str, key: int) -> Iterator[bool]:
    """Yield True while this session holds the advisory lock ``key`` on the ledger's server.

    False when another session holds it. The lock is a session lock on a connection of its
    own, so it frees when this process dies (the server ends the session).

    Raises:
        StoreError: the server cannot be reached.
    """
    try:
        conn = psycopg.connect(libpq, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the ledger's server: {driver_message(exc)}") from None
    with conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        if not row or not row[0]:
            yield False
            return
        try:
            yield True
        finally:
            with suppress(psycopg.Error):
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))


def ledger_schemas(url: str, prefix: str) -> list[str]:
    """Return the schemas whose name starts with ``prefix`` and that hold a ledger's events.

    Raises:
        StoreError: the server cannot be reached.
    """
    pattern = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
    try:
        with psycopg.connect(_libpq(url), connect_timeout=10) as conn:
            rows = conn.execute(
                "SELECT table_schema FROM information_schema.tables"
                " WHERE table_name = 'events' AND table_schema LIKE %s",
                (pattern,),
            ).fetchall()
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the ledger's server: {driver_message(exc)}") from None
    return [str(schema) for (schema,) in rows]


def ledger_exists(url: str, schema: str) -> bool:
    """Return whether ``schema`` on the server at ``url`` holds a ledger's events table.

    Raises:
        StoreError: the server cannot be reached.
    """
    try:
        with psycopg.connect(_libpq(url), connect_timeout=10) as conn:
            row = conn.execute("SELECT to_regclass(%s)", (f"{schema}.events",)).fetchone()
    except psycopg.Error as exc:
        raise StoreError(f"cannot reach the ledger's server: {driver_message(exc)}") from None
    return row is not None and row[0] is not None


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1).replace(
        "postgres://", "postgresql://", 1
    )
