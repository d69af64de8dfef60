"""Sealing by default (ADR 0086): the key store made with the ledger, where it lives, the opt-out.

Real SQLite files, the real PostgreSQL server; the data directory is the test's own folder.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.config import KEYS_FOLDER, default_key_store_path, resolve_settings
from engram.ledger import ConfigError, KeyStoreError, Ledger, PayloadError
from engram.ledger.shred import SEALED_PREFIX
from engram.runtime import open_settings

SECRET = "wombat"  # a word nothing else in these tests says


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


def observe(ledger: str, text: str, **options: object) -> None:
    with engram.open_memory(ledger, **options) as memory:  # type: ignore[arg-type]
        memory.agent("alice").observe(text)


def stored_texts(ledger: str) -> list[str]:
    """Return the observations' text as the ledger file stores it (no key store)."""
    with sqlite3.connect(ledger) as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'memory.observed'")
        return [json.loads(row[0])["text"] for row in rows]


def read_texts(ledger: str, **options: object) -> list[str]:
    with engram.open(ledger, **options) as led:  # type: ignore[arg-type]
        return [e.payload.text for e in led.read(kinds=["memory.observed"])]


def ledger_id(ledger: str) -> str:
    with sqlite3.connect(ledger) as conn:
        row = conn.execute("SELECT value FROM ledger_meta WHERE key = 'ledger_id'").fetchone()
    return str(row[0]) if row else ""


def test_the_suite_never_writes_keys_into_the_real_home(tmp_path: Path) -> None:
    data = os.environ["XDG_DATA_HOME"]
    assert not data.startswith(os.path.expanduser("~") + os.sep)
    ledger = str(tmp_path / "ledger.db")
    observe(ledger, "anything")
    assert os.path.isfile(os.path.join(data, KEYS_FOLDER, ledger_id(ledger) + ".db"))


def test_a_default_open_seals_under_a_key_store_in_the_data_directory(
    tmp_path: Path, data_home: Path
) -> None:
    ledger = str(tmp_path / "l" / "ledger.db")
    os.makedirs(os.path.dirname(ledger))
    observe(ledger, f"the {SECRET} plan")
    ident = ledger_id(ledger)
    assert len(ident) == 32
    keys = data_home / KEYS_FOLDER / f"{ident}.db"
    assert str(keys) == default_key_store_path(ident)
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.parent.stat().st_mode) == 0o700
    # Nothing in the ledger's folder holds a key: a copy of the folder leaves them behind.
    assert not [p for p in Path(ledger).parent.rglob("*") if "keys" in p.name]
    [text] = stored_texts(ledger)
    assert text.startswith(SEALED_PREFIX)
    assert SECRET.encode() not in Path(ledger).read_bytes()
    assert read_texts(ledger) == [f"the {SECRET} plan"]


def test_a_moved_ledger_finds_its_keys_and_two_ledgers_never_share_them(
    tmp_path: Path, data_home: Path
) -> None:
    first, second = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    observe(first, "first")
    observe(second, "second")
    assert ledger_id(first) != ledger_id(second)
    assert len(list((data_home / KEYS_FOLDER).iterdir())) == 2
    moved = str(tmp_path / "elsewhere" / "renamed.db")
    os.makedirs(os.path.dirname(moved))
    os.rename(first, moved)
    assert read_texts(moved) == ["first"]
    assert len(list((data_home / KEYS_FOLDER).iterdir())) == 2


def test_tenants_each_get_their_own_default_key_store(tmp_path: Path, data_home: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    observe(ledger, "base")
    observe(ledger, "acme's", tenant="acme")
    observe(ledger, "beta's", tenant="beta")
    assert len(list((data_home / KEYS_FOLDER).iterdir())) == 3
    with engram.open_memory(ledger, tenant="acme") as memory:
        memory.forget("alice")
    assert read_texts(ledger, tenant="acme") == ["[forgotten]"]
    assert read_texts(ledger, tenant="beta") == ["beta's"]
    assert read_texts(ledger) == ["base"]


def test_a_reader_never_creates_a_key_store_or_names_the_ledger(
    tmp_path: Path, data_home: Path
) -> None:
    ledger = str(tmp_path / "plain.db")
    observe(ledger, f"plain {SECRET}", seal=False)
    assert ledger_id(ledger) == ""
    with open_settings(resolve_settings(ledger), readonly=True) as led:
        assert led.sealer is None
        assert [e.payload.text for e in led.read()] == [f"plain {SECRET}"]
    assert ledger_id(ledger) == ""
    assert not (data_home / KEYS_FOLDER).exists()


def test_a_plain_ledger_then_sealed_reads_both(tmp_path: Path, data_home: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    observe(ledger, "written plain", seal=False)
    observe(ledger, f"written sealed {SECRET}")
    plain, sealed = stored_texts(ledger)
    assert plain == "written plain"
    assert sealed.startswith(SEALED_PREFIX)
    assert read_texts(ledger) == ["written plain", f"written sealed {SECRET}"]


def test_seal_false_writes_plain_text_and_is_validated(tmp_path: Path, data_home: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    config = tmp_path / "engram.toml"
    config.write_text(f'ledger = "{ledger}"\nseal = false\n')
    with engram.open_memory(config=str(config)) as memory:
        memory.agent("alice").observe(f"plain {SECRET}")
        with pytest.raises(ConfigError, match="seals no personal fields"):
            memory.forget("alice")
    assert stored_texts(ledger) == [f"plain {SECRET}"]
    assert not (data_home / KEYS_FOLDER).exists()

    config.write_text(f'ledger = "{ledger}"\nseal = "no"\n')
    with pytest.raises(ConfigError, match="seal has the wrong type"):
        resolve_settings(config=str(config))
    with pytest.raises(ConfigError, match="seal must be true or false"):
        resolve_settings(ledger, seal="no")
    with pytest.raises(ConfigError, match="contradict"):
        resolve_settings(ledger, seal=False, keys=str(tmp_path / "keys.db"))
    assert stored_texts(ledger) == [f"plain {SECRET}"]


def test_seal_false_refuses_to_write_to_a_ledger_that_seals(
    tmp_path: Path, data_home: Path
) -> None:
    ledger = str(tmp_path / "ledger.db")
    observe(ledger, "sealed")
    with pytest.raises(ConfigError, match="already seals personal fields"):
        engram.open(ledger, seal=False)
    with open_settings(resolve_settings(ledger, seal=False), readonly=True) as led:
        [event] = led.read()  # a reader with seal = false uses no key store
        assert event.payload.text.startswith(SEALED_PREFIX)


def test_an_explicit_keys_setting_still_wins(tmp_path: Path, data_home: Path) -> None:
    ledger, keys = str(tmp_path / "ledger.db"), tmp_path / "mine.db"
    observe(ledger, "mine", keys=str(keys))
    assert keys.is_file()
    assert ledger_id(ledger) == ""
    assert not (data_home / KEYS_FOLDER).exists()
    assert stored_texts(ledger)[0].startswith(SEALED_PREFIX)


def test_a_lost_key_store_is_refused_loudly_for_writing(tmp_path: Path, data_home: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    observe(ledger, f"the {SECRET}")
    keys = Path(default_key_store_path(ledger_id(ledger)))
    keys.unlink()
    with pytest.raises(KeyStoreError, match="is missing") as caught:
        engram.open(ledger)
    assert str(keys) in str(caught.value)
    assert "can never be read" in str(caught.value)
    assert not keys.exists()  # nothing was created
    with open_settings(resolve_settings(ledger), readonly=True) as led:
        [event] = led.read()  # readers still open it, sealed fields as stored
        assert event.payload.text.startswith(SEALED_PREFIX)


def test_a_named_ledger_with_nothing_sealed_gets_a_store_again(
    tmp_path: Path, data_home: Path
) -> None:
    ledger = str(tmp_path / "ledger.db")
    with engram.open(ledger) as led:  # named, and its store made: nothing sealed yet
        assert led.sealer is not None
        Path(led.sealer.keys.path).unlink()
    observe(ledger, f"the {SECRET}")
    assert read_texts(ledger) == [f"the {SECRET}"]


def test_no_data_directory_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", "")
    ledger = str(tmp_path / "ledger.db")
    with pytest.raises(ConfigError, match="no data directory for the ledger's key store"):
        engram.open(ledger)
    observe(ledger, "plain", seal=False)
    assert stored_texts(ledger) == ["plain"]


def test_postgresql_seals_only_when_asked(
    tmp_path: Path, data_home: Path, pg_dsn: str, pg_schema: str
) -> None:
    observe(pg_dsn, "plain on a shared ledger", pg_schema=pg_schema)
    assert not (data_home / KEYS_FOLDER).exists()
    observe(pg_dsn, f"sealed {SECRET}", pg_schema=pg_schema, seal=True)
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as led:  # no key store: as stored
        plain, sealed = [e.payload.text for e in led.read()]
        ident = led.identity()[0]
    assert plain == "plain on a shared ledger"
    assert sealed.startswith(SEALED_PREFIX)
    assert Path(default_key_store_path(ident)).is_file()
    assert read_texts(pg_dsn, pg_schema=pg_schema, seal=True)[1] == f"sealed {SECRET}"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def sql(capsys: pytest.CaptureFixture[str], query: str, *options: str) -> list[dict[str, object]]:
    code, out, err = cli(capsys, "sql", query, *options, "--format", "json")
    assert code == 0, err
    return list(json.loads(out))


def hub_page(path: str, status: int = 200) -> str:
    from starlette.testclient import TestClient

    from engram.hub import HubConfig, create_app

    config = HubConfig(settings=resolve_settings(), token="t" * 32)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        client.headers["Authorization"] = f"Bearer {'t' * 32}"
        response = client.get(path)
    assert response.status_code == status, response.text[-700:]
    return response.text


def test_forget_works_on_a_default_install(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    data_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ENGRAM_LEDGER", "ENGRAM_CONFIG", "ENGRAM_TENANT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)  # no engram.toml here: every setting is the default
    code, out, _ = cli(capsys, "init")
    assert code == 0
    ledger = data_home / "engram" / "ledger.db"
    assert ledger.is_file()
    keys = default_key_store_path(ledger_id(str(ledger)))
    assert f"personal fields sealed, keys at {keys}" in out
    assert cli(capsys, "observe", "alice", f"the {SECRET} hides in the shed")[0] == 0
    assert cli(capsys, "observe", "bob", "bob keeps the garden tidy")[0] == 0

    query = "SELECT agent, text FROM memory_observed ORDER BY position"
    assert sql(capsys, query) == [
        {"agent": "alice", "text": "[sealed]"},
        {"agent": "bob", "text": "[sealed]"},
    ]
    assert sql(capsys, query, "--as", "alice") == [
        {"agent": "alice", "text": f"the {SECRET} hides in the shed"},
        {"agent": "bob", "text": "[sealed]"},
    ]
    code, out, _ = cli(capsys, "recall", "alice", f"{SECRET} shed", "--format", "json")
    assert code == 0
    assert SECRET in out  # the checks below can fail
    assert cli(capsys, "catch-up")[0] == 0
    if importlib.util.find_spec("starlette") is not None:
        assert SECRET in hub_page("/memories?agent=alice&q=shed")

    code, out, err = cli(capsys, "forget", "alice", "--reason", "erasure request", "--yes")
    assert code == 0, err
    assert "1 key(s) destroyed" in out
    code, out, _ = cli(capsys, "keys", "--format", "json")
    assert code == 0
    assert json.loads(out) == [
        {"subject": "alice", "keys": 1, "forgotten": 1, "live": False},
        {"subject": "bob", "keys": 1, "forgotten": 0, "live": True},
    ]

    assert sql(capsys, query, "--as", "alice") == [
        {"agent": "alice", "text": "[forgotten]"},
        {"agent": "bob", "text": "[sealed]"},
    ]
    rows = sql(capsys, "SELECT CAST(payload AS VARCHAR) AS p FROM events")
    assert not [r for r in rows if SECRET in str(r["p"])]
    code, out, _ = cli(capsys, "recall", "alice", f"{SECRET} shed", "--format", "json")
    assert code == 0
    assert SECRET not in out
    if importlib.util.find_spec("starlette") is not None:
        # alice's memories are gone from the projections, so the hub knows no alice now
        assert SECRET not in hub_page("/memories?agent=alice&q=shed", status=400)
        assert SECRET not in hub_page("/memories?agent=bob&q=shed")
        assert SECRET not in hub_page("/ledger")
    assert cli(capsys, "rebuild")[0] == 0
    code, out, _ = cli(capsys, "recall", "alice", f"{SECRET} shed", "--format", "json")
    assert SECRET not in out
    store = Path(str(ledger) + ".projections")
    for path in store.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET.encode() not in ledger.read_bytes()
    assert cli(capsys, "verify")[0] == 0


def test_text_that_reads_as_a_sealed_value_is_refused_and_the_ledger_stays_readable(
    tmp_path: Path, data_home: Path
) -> None:
    # Written as if it were already sealed, such a text was stored unsealed, and every later
    # read of the ledger failed on it ("key 0000000000000000 is not in key store"): one
    # observe, or one recall's query, from any agent made the ledger unusable for good.
    ledger = str(tmp_path / "l.db")
    lookalike = f"{SEALED_PREFIX}0000000000000000:00"
    observe(ledger, "a normal memory about the wombat")
    with engram.open_memory(ledger) as memory:
        before = memory.ledger.head()
        with pytest.raises(PayloadError, match="marks a sealed value"):
            memory.agent("mallory").observe(lookalike)
        with pytest.raises(PayloadError, match="marks a sealed value"):
            memory.agent("bob").recall(f"{lookalike} {SECRET}", min_score=0.0)
        assert memory.ledger.head() == before, "nothing appended"
    observe(ledger, "another memory about the wombat")
    with engram.open_memory(ledger) as memory:
        found = memory.agent("alice").recall(SECRET, record=False).items
        assert sorted(i.event.payload.text for i in found) == [
            "a normal memory about the wombat",
            "another memory about the wombat",
        ]


def test_a_plain_ledger_refuses_a_sealed_lookalike_too(tmp_path: Path, data_home: Path) -> None:
    # ADR 0144: unsealed now, a ledger may be opened with a key store later ("a plain ledger
    # then sealed reads both"), and would then read the lookalike as ciphertext.
    ledger = str(tmp_path / "plain.db")
    observe(ledger, "a plain memory about the wombat", seal=False)
    with engram.open_memory(ledger, seal=False) as memory:
        before = memory.ledger.head()
        with pytest.raises(PayloadError, match="marks a sealed value"):
            memory.agent("mallory").observe(f"{SEALED_PREFIX}0000000000000000:00")
        assert memory.ledger.head() == before
