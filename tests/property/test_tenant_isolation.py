"""Two tenants on one ledger location never see each other's events, by any path (ADR 0040).

Each example writes two tenants' memories, signals, scars, memo notes and concepts under one
base ledger (a SQLite file, or one PostgreSQL database), then reads every path from each
tenant's side:
the ledger (read, follow, get, versions, verify), every projection table's rows, recall in
every scope, ``engram log``, ``engram sql``, and a signed checkpoint. The other tenant's
event ids and its marker word must never appear; the reader's own must (so a path that
returns nothing at all cannot pass for isolated).
"""

from __future__ import annotations

import io
import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.cli import main
from engram.ledger import ConfigError, Ledger
from engram.ledger.checkpoints import (
    generate_key,
    load_checkpoints,
    load_private_key,
    load_public_key,
    sign,
    verify_checkpoints,
)
from engram.runtime import Memory, open_memory

WORDS = ["database", "outage", "lunch", "deploy", "rollback", "coffee"]
SCOPES = ("memories", "scars", "victories", "reflections", "all")
_COUNTER = itertools.count()

notes_st = st.lists(
    st.tuples(
        st.sampled_from(["ann", "ben"]),
        st.sampled_from(["public", "private"]),
        st.sampled_from(WORDS),
    ),
    min_size=1,
    max_size=6,
)


class Base:
    """Where both tenants live: the --ledger (and --pg-schema) they share."""

    def __init__(self, ledger: str, pg_schema: str | None = None) -> None:
        self.ledger = ledger
        self.pg_schema = pg_schema

    @property
    def options(self) -> dict[str, Any]:
        return {"pg_schema": self.pg_schema} if self.pg_schema else {}

    def argv(self, tenant: str) -> list[str]:
        schema = ["--pg-schema", self.pg_schema] if self.pg_schema else []
        return ["--ledger", self.ledger, *schema, "--tenant", tenant]


@pytest.fixture
def quiet_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep config files, the environment and derived projection stores out of the test."""
    for name in ("ENGRAM_LEDGER", "ENGRAM_CONFIG", "ENGRAM_TENANT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def base(request: pytest.FixtureRequest, quiet_home: Path) -> Iterator[Base]:
    if request.param == "sqlite":
        yield Base(str(quiet_home / "shared.db"))
        return
    dsn: str = request.getfixturevalue("pg_dsn")
    schema = f"engram_iso_{next(_COUNTER)}_{quiet_home.name[-6:].lower()}"
    schema = "".join(c if c.isalnum() or c == "_" else "_" for c in schema)
    try:
        yield Base(dsn, schema)
    finally:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
            rows = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                (schema.replace("_", "\\_") + "\\_\\_%",),
            ).fetchall()
            for (name,) in rows:
                conn.execute(f'DROP SCHEMA "{name}" CASCADE')


def write(memory: Memory, marker: str, notes: list[tuple[str, str, str]]) -> None:
    """Give a tenant memories, a signal, a scar, a memo note and a concept with its marker."""
    for agent, visibility, word in notes:
        memory.agent(agent).observe(f"{word} {marker}", visibility=visibility)  # type: ignore[arg-type]
    memory.mailbox("ann").send("ben", f"topic {marker}", f"deploy {marker}")
    memory.scars("ben").record("failure", f"rollback {marker}", f"lesson {marker}")
    memory.memo("standup").post("ann", f"coffee {marker}")
    memory.concepts("ann").upsert("skill.deploy", "skill", f"deploy {marker}")
    memory.engine.catch_up()


def projection_text(memory: Memory) -> tuple[list[str], str]:
    """Return the tables of the tenant's projection store and all their rows, as text."""
    with memory.engine.read() as conn:
        raw: sqlite3.Connection = conn.connection if hasattr(conn, "connection") else conn
        tables = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = "\n".join(repr(raw.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
        return tables, rows


def cli(*argv: str) -> str:
    out = io.StringIO()
    code = main(list(argv), out=out)
    assert code == 0, argv
    return out.getvalue()


def check_isolated(
    base: Base, reader: str, own: str, other_marker: str, other_ids: set[str], tmp: Path
) -> None:
    """Read every path of ``reader``'s tenant; none may carry the other tenant's events."""
    with open_memory(base.ledger, tenant=reader, **base.options) as memory:
        ledger: Ledger = memory.ledger
        events = list(ledger.read())
        ids = {str(e.id) for e in events}
        assert ids
        assert not ids & other_ids
        assert all(other_marker not in repr(e.payload) for e in events)
        assert any(own in repr(e.payload) for e in events)
        head = ledger.head()
        assert head == len(events)
        assert {str(e.id) for e in ledger.get(list(range(1, head + 1)))} == ids
        with pytest.raises(ConfigError, match=f"no event at position.*{head + 1}"):
            ledger.get([head + 1])  # the other tenant's positions go on; this ledger ends
        followed = {str(e.id) for e in ledger.follow(0, timeout=0.05)}
        assert followed == ids
        streams = sorted({e.stream for e in events})
        mine: dict[str, int] = {}
        for e in events:
            mine[e.stream] = max(mine.get(e.stream, 0), e.version)
        assert ledger.versions(streams) == mine
        report = ledger.verify()
        assert report.ok
        assert report.checked == head
        tables, text = projection_text(memory)
        assert other_marker not in text
        assert own in text
        assert not any(i in text or i.replace("-", "") in text for i in other_ids)
        for agent in ("ann", "ben"):
            for scope in SCOPES:
                query = " ".join([*WORDS, other_marker, own])
                result = memory.agent(agent).recall(query, 50, scope=scope, record=False)
                assert other_marker not in repr(result.items), (agent, scope)
                assert not any(i in repr(result.items) for i in other_ids), (agent, scope)
        key = tmp / f"{reader}.key"
        generate_key(key)
        signed, _ = sign(ledger, load_private_key(key), tmp / reader)
        assert signed.position == head
        assert signed.hash == report.head_hash
        anchors = load_checkpoints(tmp / reader, load_public_key(f"{key}.pub"))
        assert verify_checkpoints(ledger, anchors).ok
    logged = [
        json.loads(line)
        for line in cli(*base.argv(reader), "log", "--format", "jsonl").splitlines()
    ]
    assert {row["id"] for row in logged} == ids
    assert other_marker not in json.dumps(logged)
    audit = cli(*base.argv(reader), "sql", "SELECT * FROM events", "--format", "json")
    assert other_marker not in audit
    assert own in audit
    assert not any(i in audit for i in other_ids)
    every_row = " UNION ALL ".join(
        f'SELECT CAST(to_json(t) AS VARCHAR) AS row FROM projections."{name}" AS t'
        for name in tables
        if not name.startswith("sqlite_")
    )
    store = cli(*base.argv(reader), "sql", every_row, "--format", "json")
    assert other_marker not in store
    assert own in store


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(notes_a=notes_st, notes_b=notes_st)
def test_no_path_of_one_tenant_serves_another_tenants_events(
    base: Base,
    tmp_path_factory: pytest.TempPathFactory,
    notes_a: list[tuple[str, str, str]],
    notes_b: list[tuple[str, str, str]],
) -> None:
    n = next(_COUNTER)
    tenants = {f"ta{n}": f"zqalpha{n}", f"tb{n}": f"zqbeta{n}"}
    ids: dict[str, set[str]] = {}
    for (tenant, marker), notes in zip(tenants.items(), (notes_a, notes_b), strict=True):
        with open_memory(base.ledger, tenant=tenant, **base.options) as memory:
            write(memory, marker, notes)
            ids[tenant] = {str(e.id) for e in memory.ledger.read()}
    (a, marker_a), (b, marker_b) = tenants.items()
    tmp = tmp_path_factory.mktemp("anchors")
    check_isolated(base, a, marker_a, marker_b, ids[b], tmp)
    check_isolated(base, b, marker_b, marker_a, ids[a], tmp)
    listed = cli("--ledger", base.ledger, *base.argv(a)[2:-2], "tenants", "--format", "json")
    assert {a, b} <= {row["tenant"] for row in json.loads(listed)}
