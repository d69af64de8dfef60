"""SQL audit over real ledger files and a real PostgreSQL schema, built here by hand."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import psycopg
import pytest
from psycopg import sql

from engram.ledger.audit import AuditSession, AuditTarget, open_audit
from engram.ledger.errors import AuditError, AuditQueryError, AuditUnavailableError, AuditWriteError


class Activated(msgspec.Struct):
    concept: str
    strength: float
    count: int


class Noted(msgspec.Struct, rename={"order_": "order"}):
    order_: int
    flag: bool
    seen: datetime
    tags: list[str]
    id: str
    note: str | None = None


KINDS: dict[str, type[msgspec.Struct]] = {"neuron.activated": Activated, "agent-probe.noted": Noted}
SAMPLE: list[tuple[str, str, dict[str, Any]]] = [
    ("neuron.created", "neuron:n1", {"concept": "perception", "type": "core"}),
    ("neuron.activated", "neuron:n1", {"concept": "perception", "strength": 0.75, "count": 3}),
    ("neuron.activated", "neuron:n1", {"concept": "perception", "strength": 0.25, "count": 4}),
    (
        "agent-probe.noted",
        "agent:inner",
        {"order": 7, "flag": True, "seen": "2026-11-20T10:00:00Z", "tags": ["a"], "id": "p1"},
    ),
    ("neuron.created", "neuron:n2", {"concept": "memory", "type": "episodic"}),
]

_SQLITE_DDL = """
CREATE TABLE events (
    position INTEGER PRIMARY KEY, id TEXT NOT NULL, stream TEXT NOT NULL,
    version INTEGER NOT NULL, kind TEXT NOT NULL, schema INTEGER NOT NULL, actor TEXT NOT NULL,
    at TEXT NOT NULL, payload BLOB NOT NULL, causation_id TEXT, correlation_id TEXT,
    hash BLOB NOT NULL);
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO ledger_meta VALUES ('format', '1');
"""
_PG_DDL = """
CREATE TABLE {schema}.events (
    position BIGINT PRIMARY KEY, id UUID NOT NULL, stream TEXT NOT NULL,
    version BIGINT NOT NULL, kind TEXT NOT NULL, schema INTEGER NOT NULL, actor TEXT NOT NULL,
    at TIMESTAMPTZ NOT NULL, payload BYTEA NOT NULL, causation_id UUID, correlation_id UUID,
    hash BYTEA NOT NULL);
CREATE TABLE {schema}.ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO {schema}.ledger_meta VALUES ('format', '1');
"""


def event_id(position: int) -> str:
    return str(uuid.UUID(int=position))


def at(position: int) -> str:
    return f"2026-11-21T02:49:{position:02d}.123456+00:00"


def make_rows(
    first: int, events: Sequence[tuple[str, str, dict[str, Any]]]
) -> list[tuple[Any, ...]]:
    """Return storage rows for ``events``, numbered from position ``first``."""
    rows = []
    for position, (kind, stream, payload) in enumerate(events, first):
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        cause = event_id(position - 1) if position > 1 else None
        rows.append(
            (
                position,
                event_id(position),
                stream,
                position,
                kind,
                1,
                "tester",
                at(position),
                body,
                cause,
                None,
                hashlib.sha256(body).digest(),
            )
        )
    return rows


class SqliteLedger:
    """A ledger file written with the sqlite3 module."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.target = AuditTarget("sqlite", str(path))
        with sqlite3.connect(path) as conn:
            conn.executescript(_SQLITE_DDL)
        conn.close()

    def append(self, events: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        with sqlite3.connect(self.path) as conn:
            first = conn.execute("SELECT coalesce(max(position), 0) + 1 FROM events").fetchone()[0]
            conn.executemany(
                f"INSERT INTO events VALUES ({', '.join('?' * 12)})", make_rows(first, events)
            )
        conn.close()

    def snapshot(self) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.path) as conn:
            rows = conn.execute("SELECT * FROM events ORDER BY position").fetchall()
        conn.close()
        return rows


class PostgresLedger:
    """A ledger in a fresh PostgreSQL schema written with psycopg."""

    def __init__(self, dsn: str, schema: str) -> None:
        self.dsn = dsn
        self.schema = sql.Identifier(schema)
        self.target = AuditTarget("postgresql", dsn, schema)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(self.schema))
            conn.execute(sql.SQL(_PG_DDL).format(schema=self.schema))

    def append(self, events: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        with psycopg.connect(self.dsn) as conn:
            query = sql.SQL("SELECT coalesce(max(position), 0) + 1 FROM {}.events")
            row = conn.execute(query.format(self.schema)).fetchone()
            assert row is not None
            insert = sql.SQL("INSERT INTO {}.events VALUES ({})").format(
                self.schema, sql.SQL(", ").join([sql.Placeholder()] * 12)
            )
            conn.cursor().executemany(insert, make_rows(row[0], events))

    def snapshot(self) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn) as conn:
            query = sql.SQL("SELECT * FROM {}.events ORDER BY position").format(self.schema)
            return conn.execute(query).fetchall()


Ledger = SqliteLedger | PostgresLedger


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Ledger:
    """Return a ledger holding SAMPLE, on each backend."""
    store: Ledger
    if request.param == "sqlite":
        store = SqliteLedger(tmp_path / "ledger.db")
    else:
        pg_dsn: str = request.getfixturevalue("pg_dsn")
        store = PostgresLedger(pg_dsn, request.getfixturevalue("pg_schema"))
    store.append(SAMPLE)
    return store


@pytest.fixture
def session(ledger: Ledger) -> Iterator[AuditSession]:
    with AuditSession(ledger.target, KINDS) as opened:
        yield opened


def test_counts_events_by_kind(session: AuditSession) -> None:
    result = session.query("SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind")

    assert result.columns == ["kind", "n"]
    assert result.rows == [("agent-probe.noted", 1), ("neuron.activated", 2), ("neuron.created", 2)]


def test_events_view_has_portable_types(session: AuditSession) -> None:
    result = session.query("SELECT * FROM events WHERE position = 2")

    assert dict(zip(result.columns, result.types, strict=True)) == {
        "position": "BIGINT",
        "id": "VARCHAR",
        "stream": "VARCHAR",
        "version": "BIGINT",
        "kind": "VARCHAR",
        "schema": "INTEGER",
        "actor": "VARCHAR",
        "at": "TIMESTAMP WITH TIME ZONE",
        "payload": "JSON",
        "causation_id": "VARCHAR",
        "correlation_id": "VARCHAR",
        "hash": "VARCHAR",
    }
    (row,) = result.rows
    body = json.dumps(SAMPLE[1][2], separators=(",", ":"), sort_keys=True).encode()
    assert row[1] == event_id(2)
    assert row[7] == datetime(2026, 11, 21, 2, 49, 2, 123456, tzinfo=UTC)
    assert json.loads(row[8]) == SAMPLE[1][2]
    assert row[9:] == (event_id(1), None, hashlib.sha256(body).hexdigest())


def test_reads_a_payload_field_through_json(session: AuditSession) -> None:
    result = session.query(
        "SELECT position, payload->>'$.concept' AS concept FROM events "
        "WHERE kind = ? ORDER BY position",
        ["neuron.activated"],
    )

    assert result.rows == [(2, "perception"), (3, "perception")]


def test_kind_view_types_payload_fields(session: AuditSession) -> None:
    result = session.query("SELECT * FROM neuron_activated ORDER BY position")

    assert result.columns == [
        "position",
        "event_id",
        "stream",
        "version",
        "actor",
        "at",
        "concept",
        "strength",
        "count",
    ]
    assert result.types[6:] == ["VARCHAR", "DOUBLE", "BIGINT"]
    assert [row[6:] for row in result.rows] == [("perception", 0.75, 3), ("perception", 0.25, 4)]
    assert session.query("SELECT sum(count), avg(strength) FROM neuron_activated").rows == [
        (7, 0.5)
    ]


def test_kind_view_quotes_names_renames_clashes_and_keeps_json(session: AuditSession) -> None:
    result = session.query('SELECT "order", flag, seen, tags, id, note FROM agent_probe_noted')

    assert result.types == [
        "BIGINT",
        "BOOLEAN",
        "TIMESTAMP WITH TIME ZONE",
        "JSON",
        "VARCHAR",
        "VARCHAR",
    ]
    assert result.rows == [(7, True, datetime(2026, 11, 20, 10, tzinfo=UTC), '["a"]', "p1", None)]


def test_head_is_fixed_until_refresh(ledger: Ledger, session: AuditSession) -> None:
    assert session.head == 5
    ledger.append(
        [("neuron.activated", "neuron:n2", {"concept": "memory", "strength": 1.0, "count": 1})]
    )

    assert session.query("SELECT max(position), count(*) FROM events").rows == [(5, 5)]
    assert session.query("SELECT count(*) FROM neuron_activated").rows == [(2,)]
    assert session.refresh() == 6
    assert session.head == 6
    assert session.query("SELECT max(position), count(*) FROM events").rows == [(6, 6)]
    assert session.query("SELECT count(*) FROM neuron_activated").rows == [(3,)]


def test_empty_ledger_has_head_zero(tmp_path: Path) -> None:
    empty = SqliteLedger(tmp_path / "empty.db")
    with open_audit(empty.target) as audit:
        assert audit.head == 0
        assert audit.query("SELECT count(*) FROM events").rows == [(0,)]
        assert audit.query("SELECT * FROM ledger_meta").rows == [("format", "1")]


@pytest.mark.parametrize(
    ("statement", "refused"),
    [
        ("INSERT INTO ledger.events (position) VALUES (99)", "statement 1 is INSERT"),
        ("UPDATE ledger.events SET actor = 'mallory'", "statement 1 is UPDATE"),
        ("DELETE FROM ledger.events", "statement 1 is DELETE"),
        ("CREATE TABLE copied AS SELECT * FROM events", "statement 1 is CREATE"),
        ("CREATE OR REPLACE VIEW events AS SELECT 1", "statement 1 is CREATE"),
        ("DROP VIEW events", "statement 1 is DROP"),
        ("COPY (SELECT * FROM events) TO '{out}'", "statement 1 is COPY"),
        ("ATTACH '{out}' AS other", "statement 1 is ATTACH"),
        ("SET enable_external_access = true", "statement 1 is SET"),
        ("LOAD sqlite_scanner", "statement 1 is LOAD"),
        ("CALL postgres_execute('ledger', 'DELETE FROM events')", "statement 1 is CALL"),
        ("EXPLAIN ANALYZE DELETE FROM ledger.events", "statement 1 is EXPLAIN of DELETE"),
        (
            "SELECT * FROM sqlite_scan('{out}', 'events')",
            "statement 1 calls the table function sqlite_scan",
        ),
        (
            "SELECT * FROM postgres_query('ledger', 'SELECT 1')",
            "statement 1 calls the table function postgres_query",
        ),
        (
            "SELECT * FROM query('SELECT * FROM postgres_' || 'execute(''ledger'', ''DELETE'')')",
            "statement 1 calls the table function query",
        ),
        ("SELECT * FROM \"query\"/**/('SELECT 1')", "statement 1 calls the table function query"),
        ("SELECT 1; DELETE FROM ledger.events", "statement 2 is DELETE"),
        # DuckDB rewrites a PRAGMA into a SELECT before it can be checked (ADR 0124).
        ("PRAGMA database_list", "a PRAGMA"),
        ("SELECT 1; /* then */ pragma import_database('{out}')", "a PRAGMA"),
    ],
)
def test_refuses_every_write_and_changes_nothing(
    ledger: Ledger, session: AuditSession, tmp_path: Path, statement: str, refused: str
) -> None:
    out = tmp_path / "out.db"
    before = ledger.snapshot()

    with pytest.raises(AuditWriteError, match=f"audit is read-only: {refused}"):
        session.query(statement.format(out=out))

    assert ledger.snapshot() == before
    assert not out.exists()
    assert session.query("SELECT count(*) FROM events").rows == [(5,)]


def test_lower_layers_refuse_writes_without_the_statement_check(
    ledger: Ledger, session: AuditSession
) -> None:
    # Reach past query() on purpose: the attachment and the lock must hold on their own.
    con = session._connection()
    before = ledger.snapshot()

    with pytest.raises(duckdb.Error, match="read-only"):
        con.execute("DELETE FROM ledger.events")
    with pytest.raises(duckdb.Error, match="configuration has been locked"):
        con.execute("SET enable_external_access = true")
    assert ledger.snapshot() == before


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
    ],
)
def test_refuses_to_read_files(session: AuditSession, statement: str) -> None:
    # Refused by the table-function check; the external-access lock would refuse it too.
    with pytest.raises(AuditWriteError, match="calls the table function"):
        session.query(statement)
    with pytest.raises(duckdb.Error, match="disabled by configuration"):
        session._connection().execute(statement)


def test_missing_sqlite_file_is_unavailable_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"

    with pytest.raises(AuditUnavailableError, match="no SQLite database file"):
        AuditSession(AuditTarget("sqlite", str(missing)))
    assert not missing.exists()


def test_file_without_a_ledger_is_unavailable(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()

    with pytest.raises(AuditUnavailableError, match="no ledger events table"):
        AuditSession(AuditTarget("sqlite", str(other)))


def test_mismatched_extension_wheel_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = SqliteLedger(tmp_path / "ledger.db").target
    monkeypatch.setattr(duckdb, "__version__", "0.0.1")

    with pytest.raises(AuditUnavailableError, match=r"built for v\d.*but DuckDB is v0\.0\.1"):
        AuditSession(target)


def test_attaches_extra_sqlite_files_read_only(tmp_path: Path) -> None:
    target = SqliteLedger(tmp_path / "ledger.db").target
    projections = tmp_path / "projections.db"
    with sqlite3.connect(projections) as conn:
        conn.execute("CREATE TABLE neurons (id TEXT, concept TEXT)")
        conn.execute("INSERT INTO neurons VALUES ('n1', 'perception')")
    conn.close()

    with AuditSession(target, extra_attachments={"proj": str(projections)}) as audit:
        assert audit.query("SELECT * FROM proj.neurons").rows == [("n1", "perception")]
        with pytest.raises(duckdb.Error, match="read-only"):
            audit._connection().execute("DELETE FROM proj.neurons")

    with pytest.raises(AuditUnavailableError, match="no SQLite database file"):
        AuditSession(target, extra_attachments={"proj": str(tmp_path / "missing.db")})
    with pytest.raises(AuditError, match="bad attachment alias"):
        AuditSession(target, extra_attachments={"ledger": str(projections)})


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELEC 1", "syntax error"),
        ("SELECT no_such_column FROM events", "no_such_column"),
        ("", "no SQL statement"),
    ],
)
def test_duckdb_errors_become_query_errors(
    session: AuditSession, statement: str, message: str
) -> None:
    with pytest.raises(AuditQueryError, match=message):
        session.query(statement)


def test_allows_explain_and_runs_every_statement(session: AuditSession) -> None:
    assert session.query("EXPLAIN SELECT * FROM events").columns[0] == "explain_key"
    assert session.query("SELECT 1; SELECT 2 AS two").rows == [(2,)]


def test_closed_session_refuses_queries(ledger: Ledger) -> None:
    audit = AuditSession(ledger.target)
    audit.close()
    audit.close()

    with pytest.raises(AuditError, match="closed"):
        audit.query("SELECT 1")


def test_renders_table_csv_and_json(session: AuditSession) -> None:
    result = session.query(
        'SELECT position, kind, "at", payload, hash IS NULL AS missing, NULL AS nothing, '
        "'\\x01'::BLOB AS raw FROM events WHERE position = 2"
    )
    payload = '{"concept":"perception","count":3,"strength":0.75}'

    assert result.to_csv().splitlines() == [
        "position,kind,at,payload,missing,nothing,raw",
        f'2,neuron.activated,{at(2)},"{payload.replace(chr(34), 2 * chr(34))}",false,,01',
    ]
    assert json.loads(result.to_json()) == [
        {
            "position": 2,
            "kind": "neuron.activated",
            "at": at(2),
            "payload": SAMPLE[1][2],
            "missing": False,
            "nothing": None,
            "raw": "01",
        }
    ]
    table = result.to_table(max_width=20).splitlines()
    assert table[0] == table[2] == table[4]
    assert table[0].startswith("+----------+------------------+")
    assert table[1].split("|")[1:3] == [" position ", " kind             "]
    assert table[3].split("|")[1:8] == [
        " 2        ",
        " neuron.activated ",
        " " + at(2)[:19] + "… ",
        " " + payload[:19] + "… ",
        " false   ",
        " NULL    ",
        " 01  ",
    ]
    assert table[5] == "(1 row)"


def test_a_query_past_its_time_limit_is_stopped_and_spills_stay_private(
    session: AuditSession,
) -> None:
    # ADR 0130: "SELECT count(*) FROM range(100000000000)" ran until killed, and what a
    # query spilled went to ".tmp" in the caller's working directory.
    import time

    started = time.monotonic()
    with pytest.raises(AuditQueryError, match=r"ran past 0\.5 s and was stopped"):
        session.query("SELECT count(*) FROM range(100000000000)", timeout=0.5)
    assert time.monotonic() - started < 30
    assert session.query("SELECT 1 AS one", timeout=5).rows == [(1,)]  # the session goes on
    for bad in (0, -1, float("nan"), float("inf"), True, "5"):
        with pytest.raises(AuditError, match="timeout must be a positive number"):
            session.query("SELECT 1", timeout=bad)  # type: ignore[arg-type]
    ((spill,),) = session.query("SELECT current_setting('temp_directory')").rows
    assert Path(spill).is_dir()
    assert "engram-audit-spill-" in spill
    session.close()
    assert not Path(spill).exists()
