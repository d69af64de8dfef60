"""Tenants from the command line, and audit SQL that cannot reach past its tenant (ADR 0040)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from engram.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGRAM_LEDGER", "ENGRAM_CONFIG", "ENGRAM_TENANT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[str]]:
    """Yield the global options naming a base ledger with tenants acme and beta in it."""
    if request.param == "sqlite":
        yield ["--ledger", str(tmp_path / "shared.db")]
        return
    dsn: str = request.getfixturevalue("pg_dsn")
    schema: str = request.getfixturevalue("pg_schema")
    try:
        yield ["--ledger", dsn, "--pg-schema", schema]
    finally:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=3) as conn:
            for tenant in ("acme", "beta"):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}__{tenant}" CASCADE')


def probes(where: list[str], tmp_path: Path) -> list[str]:
    """Return queries that try to reach tenant beta's events from tenant acme's session."""
    if "--pg-schema" in where:
        beta = where[where.index("--pg-schema") + 1] + "__beta"
        return [
            f"SELECT * FROM ledger.{beta}.events",
            f"SELECT * FROM {beta}.events",
            f"SELECT * FROM postgres_query('ledger', 'SELECT * FROM {beta}.events')",
            f"SELECT * FROM postgres_scan('{where[1]}', '{beta}', 'events')",
            f"ATTACH '{where[1]}' AS other (TYPE postgres, SCHEMA '{beta}')",
            f"SELECT * FROM query_table('ledger.{beta}.events')",
            "SELECT * FROM ledger.pg_catalog.pg_tables",
            "SELECT * FROM duckdb_tables()",
        ]
    beta = str(tmp_path / "shared.db.tenants" / "beta" / "ledger.db")
    return [
        f"SELECT * FROM '{beta}'",
        f"SELECT * FROM sqlite_scan('{beta}', 'events')",
        f"ATTACH '{beta}' AS other (TYPE sqlite)",
        f"SELECT * FROM read_text('{beta}')",
        f"SELECT * FROM read_blob('{beta}')",
        "SELECT * FROM glob('*')",
    ]


def test_tenants_are_created_listed_and_kept_apart(
    capsys: pytest.CaptureFixture[str], where: list[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, *where, "--tenant", "acme", "observe", "ann", "acme zqalpha")
    assert code == 0, err
    code, _, err = run(capsys, *where, "observe", "ann", "beta zqbeta", "--tenant", "beta")
    assert code == 0, err
    code, out, _ = run(capsys, *where, "tenants", "--format", "json")
    assert [row["tenant"] for row in json.loads(out)] == ["acme", "beta"]
    code, out, _ = run(
        capsys, *where, "--tenant", "acme", "recall", "ann", "zqbeta zqalpha", "--min-score", "0"
    )
    assert code == 0
    assert "zqalpha" in out
    assert "zqbeta" not in out
    query = "SELECT string_agg(text, ' ') AS texts FROM memory_observed"  # ann's own: --as
    code, out, _ = run(
        capsys, *where, "--tenant", "beta", "sql", query, "--as", "ann", "--format", "json"
    )
    assert code == 0
    assert "zqbeta" in out
    assert "zqalpha" not in out
    own = "SELECT count(*) AS n FROM ledger.events"
    if "--pg-schema" in where:
        own = own.replace("ledger.", f"ledger.{where[where.index('--pg-schema') + 1]}__acme.")
    code, out, _ = run(capsys, *where, "--tenant", "acme", "sql", own, "--format", "json")
    assert json.loads(out) == [{"n": 2}]  # its observation and the recall: its own table
    for sql in probes(where, tmp_path):
        code, out, err = run(capsys, *where, "--tenant", "acme", "sql", sql)
        assert code == 1, (sql, out)
        assert out == ""
        assert "zqbeta" not in err
    visible = "SELECT table_schema, table_name FROM information_schema.tables ORDER BY ALL"
    code, out, _ = run(capsys, *where, "--tenant", "acme", "sql", visible, "--format", "json")
    schemas = {row["table_schema"] for row in json.loads(out)}
    assert not any("beta" in s for s in schemas)
    code, out, _ = run(capsys, *where, "--tenant", "beta", "verify")
    assert code == 0


def test_a_missing_tenant_names_itself_and_how_to_create_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "shared.db")
    code, _, err = run(capsys, "--ledger", db, "--tenant", "ghost", "log")
    assert code == 1
    assert "tenant 'ghost': no ledger at" in err
    assert "engram --tenant ghost init" in err
    assert not (tmp_path / "shared.db.tenants" / "ghost").exists()


def test_bad_tenants_are_usage_errors_that_create_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "shared.db")
    code, _, err = run(capsys, "--ledger", db, "--tenant", "../etc", "init")
    assert code == 2
    assert "'../etc' is invalid" in err
    monkeypatch.setenv("ENGRAM_TENANT", "Upper")
    code, _, err = run(capsys, "--ledger", db, "init")
    assert code == 2
    assert "from ENGRAM_TENANT" in err
    assert list(tmp_path.iterdir()) == []


def test_an_empty_tenant_given_is_refused_never_read_as_the_base_ledger(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engram
    from engram.ledger.errors import ConfigError

    db = str(tmp_path / "shared.db")
    assert run(capsys, "--ledger", db, "observe", "root", "a base-only note")[0] == 0
    assert run(capsys, "--ledger", db, "--tenant", "acme", "init")[0] == 0
    # A launcher that pins ENGRAM_TENANT and builds --tenant from its input: "" used to
    # open the base ledger, its notes included.
    monkeypatch.setenv("ENGRAM_TENANT", "acme")
    code, out, err = run(capsys, "--ledger", db, "--tenant", "", "log")
    assert code == 2, out
    assert "tenant (from the tenant option) '' is invalid" in err
    assert "base-only" not in out
    with pytest.raises(ConfigError, match="'' is invalid"):
        engram.open_memory(db, tenant="").__enter__()
    config = tmp_path / "elsewhere.toml"
    config.write_text(f'ledger = "{db}"\ntenant = ""\n')
    monkeypatch.delenv("ENGRAM_TENANT")
    code, _, err = run(capsys, "--config", str(config), "log")
    assert code == 2
    assert f"tenant (from config file {config}) '' is invalid" in err
    # An empty ENGRAM_TENANT is as good as unset: the base ledger.
    monkeypatch.setenv("ENGRAM_TENANT", "")
    code, out, _ = run(capsys, "--ledger", db, "log")
    assert code == 0
    assert "memory.observed" in out


def test_tenants_refuses_a_tenant_and_ignores_the_environment(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "shared.db")
    assert run(capsys, "--ledger", db, "--tenant", "acme", "init")[0] == 0
    code, _, err = run(capsys, "--ledger", db, "--tenant", "acme", "tenants")
    assert code == 2
    assert "drop --tenant" in err
    monkeypatch.setenv("ENGRAM_TENANT", "acme")
    code, out, _ = run(capsys, "--ledger", db, "tenants", "--format", "csv")
    assert out.splitlines()[1].startswith("acme,")


@pytest.mark.postgres
def test_a_tenant_role_makes_the_database_refuse_other_tenants(
    capsys: pytest.CaptureFixture[str], pg_dsn: str, pg_schema: str
) -> None:
    role = f"{pg_schema}_acme_role"
    base = ["--pg-schema", pg_schema]
    try:
        for tenant in ("acme", "beta"):
            code, _, err = run(
                capsys, "--ledger", pg_dsn, *base, "--tenant", tenant, "observe", "ann", tenant
            )
            assert code == 0, err
        acme = f'"{pg_schema}__acme"'
        with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'CREATE ROLE "{role}" NOLOGIN')
            conn.execute(f'GRANT USAGE ON SCHEMA {acme} TO "{role}"')
            conn.execute(f'GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA {acme} TO "{role}"')
        as_acme = f"{pg_dsn}?options=-c%20role%3D{role}"
        for argv in (
            ("--tenant", "acme", "observe", "ann", "acme again"),
            ("--tenant", "acme", "recall", "ann", "acme"),
            ("--tenant", "acme", "verify"),
        ):
            code, _, err = run(capsys, "--ledger", as_acme, *base, *argv)
            assert code == 0, (argv, err)
        count = ("sql", "SELECT count(*) AS n FROM events", "--format", "json")
        code, out, err = run(capsys, "--ledger", as_acme, *base, "--tenant", "acme", *count)
        assert code == 0, err
        assert json.loads(out) == [{"n": 3}]  # two observations and the recall, as the role
        code, out, err = run(capsys, "--ledger", as_acme, *base, "--tenant", "beta", "log")
        assert code == 1
        assert out == ""
        assert "permission denied for schema" in err
        with psycopg.connect(as_acme, connect_timeout=3) as conn:
            assert conn.execute("SELECT current_user").fetchone() == (role,)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True, connect_timeout=3) as conn:
            for tenant in ("acme", "beta"):
                conn.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}__{tenant}" CASCADE')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_a_relative_destination_is_each_tenant_s_own_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ADR 0126: `instructions_file = "team/AGENTS.md"` was read against the working
    # directory: two tenants' rules landed in one file, and another folder got a third.
    import engram

    config = tmp_path / "engram.toml"
    config.write_text(
        f'ledger = "{tmp_path / "l.db"}"\n[destinations]\ninstructions_file = "team/AGENTS.md"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    written = {}
    for tenant in ("acme", "beta"):
        with engram.open_memory(config=str(config), tenant=tenant) as memory:
            lesson = f"{tenant} rule: " + "always page the owner before a deploy " * 9
            memory.scars("ops").record("failure", f"{tenant} deploy broke", lesson)
            lessons = memory.lessons()
            (drafted,) = lessons.learn().drafted
            assert drafted.destination == "instructions_file"
            lessons.apply(drafted.suggestion, "ana")
            written[tenant] = Path(memory.settings.lessons_home, "team", "AGENTS.md")
    assert written["acme"] != written["beta"]
    assert "acme rule" in written["acme"].read_text()
    assert "beta rule" not in written["acme"].read_text()
    assert "beta rule" in written["beta"].read_text()
    assert not (elsewhere / "team").exists()
