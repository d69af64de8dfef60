"""PostgreSQL adapter: the shared ledger for agents on many processes and machines.

Every append transaction takes a transaction-scoped advisory lock before it reads the head
and assigns positions, and holds it to commit: positions are gap-free and commit-ordered,
so a reader that has seen position p never later finds an event below p (ADR 0004). New
heads are announced with NOTIFY; followers LISTEN instead of polling. An append's
transaction is :mod:`engram.ledger.postgres_write`'s; what speaks to the server outside one
ledger (session locks, finding ledgers) is :mod:`engram.ledger.postgres_server`'s.
"""

from __future__ import annotations

import hashlib
import re
import select
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy.engine import make_url

from engram.ledger.backend import (
    AuditTarget,
    Backend,
    InsertConflictError,
    Row,
    WriteTransaction,
    as_utc,
    check_format,
)
from engram.ledger.codec import format_at
from engram.ledger.errors import (
    AppendOnlyError,
    ConfigError,
    LedgerNotFoundError,
    NotALedgerError,
    ReadOnlyLedgerError,
    StoreError,
    driver_message,
)

# Re-exported ("as"): the server's functions are named from the adapter's module too.
from engram.ledger.postgres_server import advisory_lock as advisory_lock
from engram.ledger.postgres_server import ledger_exists as ledger_exists
from engram.ledger.postgres_server import ledger_schemas as ledger_schemas
from engram.ledger.postgres_server import libpq_uri
from engram.ledger.postgres_write import PostgresTransaction, head_of, head_sql
from engram.ledger.schema import (
    APPEND_ONLY_MESSAGE,
    COLUMNS,
    FORMAT_VERSION,
    HASH_ALGORITHM,
    Column,
    build_metadata,
)

_PAYLOAD, _HASH = Column.PAYLOAD.value, Column.HASH.value


def _key(text: str) -> int:
    """Return a signed 64-bit advisory lock key for ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


_SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,47}\Z")
_SELECT_COLUMNS = ", ".join(
    f"{c}::text" if c in ("id", "causation_id", "correlation_id") else c for c in COLUMNS
)


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
        if schema == "information_schema" or schema.startswith("pg_"):
            # The server's own catalogs: a ledger's tables and triggers do not belong there
            # (ADR 0186).
            raise ConfigError(f"PostgreSQL schema {schema!r} is the server's own; choose another")
        try:
            parsed = make_url(url)
        except sa.exc.ArgumentError as exc:
            raise ConfigError(f"invalid PostgreSQL URL {url!r}: {exc}") from None
        self.schema = schema
        self.parse_at = as_utc
        self._libpq = libpq_uri(parsed)
        self._display = parsed.render_as_string(hide_password=True)
        # The creators' lock (no ledger id yet). Appends and followers use a lock key and a
        # channel derived from the ledger's id (:meth:`_name_locks`), which only a role that
        # can read the schema knows: another tenant's role cannot take the append lock by
        # name, nor LISTEN to the heads.
        self._creation_key = _key(f"engram-create|{schema}")
        self._channel = f"engram_{schema}"
        self._lock_key = _key(schema)
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
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (self._creation_key,))
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
        check_format(f"schema {s}", *stored)
        self._name_locks()

    def _name_locks(self) -> None:
        """Derive the append lock's key and the heads' channel from the ledger's id, naming
        the ledger first if a writer opens it unnamed. A reader of a ledger no writer has
        named since keeps the schema's (so it still hears writers of that time)."""
        ledger_id = self.ledger_id(create=not self.readonly)[0]
        if ledger_id:
            self._channel = f"engram_{hashlib.sha256(ledger_id.encode()).hexdigest()[:40]}"
            self._lock_key = _key(f"engram-append|{ledger_id}")

    def _foreign(self, conn: sa.Connection) -> bool:
        """Say whether the schema holds an ``events`` table that no ledger made."""
        tables = {
            name
            for (name,) in conn.exec_driver_sql(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,)
            )
        }
        return "events" in tables and "ledger_meta" not in tables

    def _format(self, conn: sa.Connection) -> tuple[object, object]:
        """Return the stored format version and hash algorithm (None where missing)."""
        meta: dict[object, object] = dict(
            conn.exec_driver_sql(
                f"SELECT key, value FROM {self.schema}.ledger_meta"
                " WHERE key IN ('format_version', 'hash_algorithm')"
            ).all()
        )
        return meta.get("format_version"), meta.get("hash_algorithm")

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
                tx = PostgresTransaction(conn, self.schema, head, lock_key=self._lock_key)
            else:
                conn = self._writer_connection()
                tx = PostgresTransaction(conn, self.schema, lock_key=self._lock_key, own=own)
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
                    heads.execute(head_sql(self.schema))
                return conn, head_of(heads.fetchone())
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

    def read_hashes(self, positions: Sequence[int]) -> dict[int, bytes]:
        sql = f"SELECT position, hash FROM {self.schema}.events WHERE position = ANY(%s)"
        with _translate("read"), self._engine.connect() as conn:
            rows = conn.exec_driver_sql(sql, (list(positions),)).fetchall()
        return {pos: bytes(h) for pos, h in rows}

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
