"""Tenants on PostgreSQL with a role granted only its own schema (docs/tenants.md): another
tenant's role can neither hear a tenant's appends nor take its append lock or job leases by
name. The lock key and the heads' channel derive from the ledger's id, which only a role
that reads the schema knows; they used to derive from the schema's name."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from engram.jobs.lease import AdvisoryLease, lease_for
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import NeuronActivated

pytestmark = pytest.mark.postgres


def _event() -> NewEvent:
    return NewEvent.of(NeuronActivated(id="n1", strength=0.5), stream="s")


def _key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


@pytest.fixture
def intruder(pg_dsn: str, pg_schema: str) -> Iterator[tuple[psycopg.Connection, str]]:
    """Yield a connection as a role granted only its own tenant's schema, and that schema."""
    role = f"engram_t_role_{uuid.uuid4().hex[:8]}"
    own = f"{pg_schema}__acme"
    with Ledger.open(pg_dsn, pg_schema=own):
        pass
    admin = psycopg.connect(pg_dsn, autocommit=True)
    admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    admin.execute(
        sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(own), sql.Identifier(role))
    )
    admin.execute(
        sql.SQL("GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA {} TO {}").format(
            sql.Identifier(own), sql.Identifier(role)
        )
    )
    conn = psycopg.connect(pg_dsn, user=role, autocommit=True)
    try:
        yield conn, own
    finally:
        conn.close()
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(own)))
        admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        admin.close()


def test_another_tenants_role_neither_hears_appends_nor_blocks_them(
    pg_dsn: str, pg_schema: str, intruder: tuple[psycopg.Connection, str]
) -> None:
    conn, _own = intruder
    victim = f"{pg_schema}__beta"
    try:
        with Ledger.open(pg_dsn, pg_schema=victim, busy_timeout=2.0) as ledger:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(sql.SQL("SELECT 1 FROM {}.events").format(sql.Identifier(victim)))
            # What the schema's name gives: the channel and the lock key a name alone used to
            # be enough for.
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(f"engram_{victim}")))
            conn.execute("SELECT pg_advisory_lock(%s)", (_key(victim),))
            lease = lease_for(ledger)
            assert isinstance(lease, AdvisoryLease)
            conn.execute(
                "SELECT pg_advisory_lock(%s)", (AdvisoryLease(pg_dsn, victim).key("sleep"),)
            )
            started = time.monotonic()
            ledger.append([_event()])
            assert time.monotonic() - started < 1.5  # not held up by the intruder's lock
            assert list(conn.notifies(timeout=1.0, stop_after=1)) == []
            with lease.hold("sleep") as held:
                assert held  # the intruder's lock by the schema's name is not the lease
            assert ledger.wait(0, timeout=0.1) == 1
    finally:
        conn.execute("SELECT pg_advisory_unlock_all()")
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(victim))
            )


def test_a_writer_names_an_unnamed_postgresql_ledger_and_followers_hear_it(
    pg_dsn: str, pg_schema: str
) -> None:
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as writer:
        ledger_id, _ = writer.identity()
        assert ledger_id  # named at open, so its locks and channel derive from it
        with Ledger.open(pg_dsn, pg_schema=pg_schema, readonly=True) as reader:
            listener = reader.backend._listening()  # LISTEN before the append
            writer.append([_event()])
            heard = list(listener.notifies(timeout=5.0, stop_after=1))
            assert [n.payload for n in heard] == ["1"]
