"""Tenant settings: names validated, namespaces derived, precedence kept (ADR 0040)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from engram.config import Settings, check_tenant, resolve_settings, scope_to_tenant
from engram.ledger import ConfigError
from engram.tenancy import list_tenants

PG = "postgresql://127.0.0.1:5432/test"


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGRAM_LEDGER", "ENGRAM_CONFIG", "ENGRAM_TENANT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("name", ["acme", "a", "team_2", "a1_b2_c3", "x" * 24])
def test_good_tenant_names_pass(name: str) -> None:
    assert check_tenant(name) == name


@pytest.mark.parametrize(
    "name", ["", "Acme", "1team", "_a", "a__b", "a-b", "a.b", "a/b", "../a", "é", "x" * 25, "a b"]
)
def test_bad_tenant_names_are_refused_with_the_rule(name: str) -> None:
    with pytest.raises(ConfigError, match="lowercase letter"):
        check_tenant(name)


def test_a_tenant_name_must_be_a_string() -> None:
    with pytest.raises(ConfigError, match="must be a string, got int"):
        resolve_settings("/x/l.db", tenant=7)


def test_sqlite_tenants_get_their_own_file_store_and_cold_folder(tmp_path: Path) -> None:
    base = str(tmp_path / "l.db")
    a = resolve_settings(base, tenant="acme")
    b = resolve_settings(base, tenant="beta")
    assert a.ledger == str(tmp_path / "l.db.tenants" / "acme" / "ledger.db")
    assert a.tenant == "acme"
    assert a.projection_store == a.ledger + ".projections"
    assert a.cold_directory == a.ledger + ".cold"
    plain = resolve_settings(base)
    places = [(s.ledger, s.projection_store, s.cold_directory) for s in (a, b, plain)]
    assert len({p for triple in places for p in triple}) == 9


def test_postgres_tenants_get_their_own_schema_and_store() -> None:
    a = resolve_settings(PG, tenant="acme", pg_schema="shop")
    b = resolve_settings(PG, tenant="beta", pg_schema="shop")
    plain = resolve_settings(PG, pg_schema="shop")
    assert (a.ledger, a.pg_schema) == (PG, "shop__acme")
    assert b.pg_schema == "shop__beta"
    stores = {s.projection_store for s in (a, b, plain)}
    colds = {s.cold_directory for s in (a, b, plain)}
    assert len(stores) == len(colds) == 3


def test_an_explicit_projection_store_is_split_by_tenant(tmp_path: Path) -> None:
    store = str(tmp_path / "proj")
    a = resolve_settings(PG, tenant="acme", projections=store + "/")
    assert a.projection_store == os.path.join(store + ".tenants", "acme")


def test_a_base_schema_holding_the_separator_is_refused() -> None:
    with pytest.raises(ConfigError, match="separates a tenant"):
        resolve_settings(PG, tenant="acme", pg_schema="shop__beta")


def test_a_schema_too_long_for_postgres_is_refused() -> None:
    with pytest.raises(ConfigError, match="48 characters"):
        resolve_settings(PG, tenant="t" * 24, pg_schema="s" * 30)


def test_settings_cannot_claim_a_tenant_they_do_not_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="claim tenant 'acme'"):
        Settings(ledger=str(tmp_path / "l.db"), tenant="acme")
    with pytest.raises(ConfigError, match="claim tenant 'acme'"):
        Settings(ledger=PG, pg_schema="engram__beta", tenant="acme")
    scoped = resolve_settings(str(tmp_path / "l.db"), tenant="acme")
    with pytest.raises(ConfigError, match="claim tenant 'beta'"):
        dataclasses.replace(scoped, tenant="beta")


def test_a_tenant_has_no_tenants(tmp_path: Path) -> None:
    scoped = resolve_settings(str(tmp_path / "l.db"), tenant="acme")
    with pytest.raises(ConfigError, match="already scoped to tenant 'acme'"):
        scope_to_tenant(scoped, "beta")
    with pytest.raises(ConfigError, match="scoped to tenant 'acme'"):
        list_tenants(scoped)


def test_option_beats_environment_beats_config_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(f'ledger = "{tmp_path / "l.db"}"\ntenant = "fromfile"\n')
    assert resolve_settings().tenant == "fromfile"
    monkeypatch.setenv("ENGRAM_TENANT", "fromenv")
    assert resolve_settings().tenant == "fromenv"
    assert resolve_settings(tenant="fromoption").tenant == "fromoption"
    # An empty option is refused (a launcher building it from input must not reach the base
    # namespace); the base namespace, whatever the environment says, is asked for by name.
    with pytest.raises(ConfigError, match=r"from the tenant option\) '' is invalid"):
        resolve_settings(tenant="")
    plain = resolve_settings(untenanted=True)
    assert plain.tenant == ""
    assert plain.ledger == str(tmp_path / "l.db")


def test_a_bad_tenant_names_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "engram.toml"
    config.write_text('tenant = "Bad"\n')
    with pytest.raises(ConfigError, match=r"from config file engram\.toml\) 'Bad'"):
        resolve_settings()
    monkeypatch.setenv("ENGRAM_TENANT", "no way")
    with pytest.raises(ConfigError, match=r"from ENGRAM_TENANT\) 'no way'"):
        resolve_settings()
    config.write_text("tenant = 3\n")
    with pytest.raises(ConfigError, match="tenant has the wrong type"):
        resolve_settings()


def test_sqlite_tenants_are_listed_from_their_files(tmp_path: Path) -> None:
    base = resolve_settings(str(tmp_path / "l.db"))
    assert list_tenants(base) == []
    for name in ("beta", "acme"):
        Path(scope_to_tenant(base, name).ledger).parent.mkdir(parents=True)
        Path(scope_to_tenant(base, name).ledger).write_bytes(b"")
    (tmp_path / "l.db.tenants" / "Not_A_Tenant").mkdir()
    (tmp_path / "l.db.tenants" / "ghost").mkdir()  # no ledger file: not a tenant yet
    found = list_tenants(base)
    assert [t.name for t in found] == ["acme", "beta"]
    assert found[0].location == str(tmp_path / "l.db.tenants" / "acme" / "ledger.db")
    assert found[0].settings == scope_to_tenant(base, "acme")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u:p@h:5432/db", "postgresql://u:p@h:5432/db"),
        (
            "postgresql+psycopg://h/db?options=-c%20role%3Dacme_role",
            "postgresql://h/db?options=-c%20role%3Dacme_role",
        ),
        (
            "postgresql://h/db?sslmode=require&application_name=a%20b",
            "postgresql://h/db?sslmode=require&application_name=a%20b",
        ),
    ],
)
def test_the_libpq_uri_keeps_a_role_option_percent_encoded(url: str, expected: str) -> None:
    from sqlalchemy.engine import make_url

    from engram.ledger.postgres_server import libpq_uri

    assert libpq_uri(make_url(url)) == expected


def test_spellings_of_one_postgresql_url_share_one_projection_store() -> None:
    spellings = [
        "postgresql://127.0.0.1/test",
        "postgres://127.0.0.1:5432/test",
        "postgresql+psycopg://127.0.0.1:5432/test",
    ]
    stores = {resolve_settings(url).projection_store for url in spellings}
    colds = {resolve_settings(url).cold_directory for url in spellings}
    assert len(stores) == len(colds) == 1
    other = resolve_settings("postgresql://127.0.0.1:5433/test")
    assert other.projection_store not in stores  # another server is another ledger


def test_a_store_made_under_an_earlier_spelling_is_kept(tmp_path: Path) -> None:
    import hashlib

    url = "postgresql://127.0.0.1/test"
    legacy = hashlib.sha256(f"{url}|engram".encode()).hexdigest()[:16]
    kept = tmp_path / "data" / "engram" / "projections" / legacy
    kept.mkdir(parents=True)
    assert resolve_settings(url).projection_store == str(kept)


def test_no_two_tenants_or_server_ledgers_share_a_lessons_home(tmp_path: Path) -> None:
    db = str(tmp_path / "shared.db")
    explicit = str(tmp_path / "proj")
    homes = [
        resolve_settings(db).lessons_home,
        resolve_settings(db, tenant="acme").lessons_home,
        resolve_settings(db, tenant="beta").lessons_home,
        resolve_settings(db, projections=explicit, tenant="acme").lessons_home,
        resolve_settings(db, projections=explicit, tenant="beta").lessons_home,
        resolve_settings(PG).lessons_home,
        resolve_settings(PG, tenant="acme").lessons_home,
        resolve_settings(PG, pg_schema="other").lessons_home,
    ]
    assert len(set(homes)) == len(homes), homes
    # Where the folder is the ledger's own, the lessons stay where they always were.
    assert homes[0] == str(tmp_path / "lessons")
    assert homes[1] == os.path.join(db + ".tenants", "acme", "lessons")
    assert homes[3] == os.path.join(explicit + ".tenants", "acme.lessons")
