"""The ledger's PostgreSQL server outside any one ledger: session locks and finding ledgers.

:func:`advisory_lock` holds a session advisory lock on a connection of its own (the jobs'
leases); :func:`ledger_schemas` and :func:`ledger_exists` find ledgers by their schema;
:func:`libpq_uri` renders a URL as the libpq URI that psycopg's direct connections and
DuckDB's scanner take.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import psycopg
from sqlalchemy.engine import URL

from engram.ledger.errors import StoreError, driver_message


def libpq_uri(parsed: URL) -> str:
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
