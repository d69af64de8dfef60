"""One append's transaction on PostgreSQL, sent in as few round trips as it can.

:class:`PostgresTransaction` is the :class:`~engram.ledger.backend.WriteTransaction` of
:class:`~engram.ledger.postgres.PostgresBackend`: the position lock, the head, the stream
versions and the stored ids it is asked for, then the inserts, the head's notification and
the commit, pipelined (ADR 0059, ADR 0084). It is a hot path, tuned on purpose.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg
import psycopg.errors

from engram.ledger.backend import InsertConflictError, Row, StoredContent, WriteTransaction
from engram.ledger.codec import GENESIS_HASH
from engram.ledger.schema import COLUMNS, Column


class QuietAbortedPipeline(logging.Filter):
    """Drop psycopg's warning that a pipeline ended aborted after the statement that failed
    in it raised: the write path expects that failure (a stale head, a unique row taken by
    another writer) and retries; the warning printed one line per writer under load."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        aborted = len(args) == 2 and isinstance(args[1], psycopg.errors.PipelineAborted)
        return not (aborted and str(record.msg).startswith("error ignored terminating"))


logging.getLogger("psycopg").addFilter(QuietAbortedPipeline())

_HASH = Column.HASH.value
_INSERT_VALUES = ", ".join(
    "%s::uuid"
    if c in ("id", "causation_id", "correlation_id")
    else "%s::timestamptz"
    if c == "at"
    else "%s"
    for c in COLUMNS
)


def head_sql(schema: str) -> str:
    """Return the query of the head: the last position and its hash."""
    return f"SELECT position, hash FROM {schema}.events ORDER BY position DESC LIMIT 1"


def head_of(row: Any) -> tuple[int, bytes]:
    """Return the head a ``(position, hash)`` row names: the genesis for an empty ledger."""
    if row is None:
        return 0, GENESIS_HASH
    position, hash_ = row
    return position, bytes(hash_)


class PostgresTransaction(WriteTransaction):
    """One append on the write connection: lookups under the position lock, then the commit."""

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
        return head_sql(self._schema)

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
        return head_of(self._cur.execute(self._head_sql()).fetchone())

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
        head, last = head_of(heads.fetchone())
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
