"""Keys belong to a tenant (issue 26 item 3, ADR 0047): a subject is (tenant, name).

Forgetting ``alice`` in tenant acme leaves tenant beta's ``alice`` readable, and a tenant's
``keys`` lists its own subjects only. A store that tenants shared before is split on the
first write: every tenant's data written before still opens afterwards.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engram.cli import main
from engram.config import TENANTS_SUFFIX
from engram.ledger import KeyStore, Ledger, NewEvent, Sealer
from engram.ledger.catalog import MemoryObserved


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv("ENGRAM_TENANT", raising=False)
    config = tmp_path / "engram.toml"
    config.write_text(f'keys = "{tmp_path / "keys.db"}"\n')
    return ["--ledger", str(tmp_path / "ledger.db"), "--config", str(config)]


def engram(options: list[str], *argv: str, tenant: str | None = None) -> str:
    out = io.StringIO()
    scope = ["--tenant", tenant] if tenant else []
    code = main([*options, *scope, *argv], out=out)
    assert code == 0, argv
    return out.getvalue()


def texts(options: list[str], tenant: str | None) -> dict[str, str]:
    shown = engram(options, "log", "--kind", "memory.observed", "--format", "json", tenant=tenant)
    return {e["payload"]["agent"]: e["payload"]["text"] for e in json.loads(shown)}


def subjects(options: list[str], tenant: str | None) -> dict[str, bool]:
    shown = engram(options, "keys", "--format", "json", tenant=tenant)
    return {s["subject"]: s["live"] for s in json.loads(shown)}


def test_forgetting_in_one_tenant_leaves_the_other_tenants_subject(options: list[str]) -> None:
    engram(options, "observe", "alice", "acme's alice note", tenant="acme")
    engram(options, "observe", "alice", "beta's alice note", tenant="beta")
    engram(options, "observe", "carol", "beta's carol note", tenant="beta")
    engram(options, "forget", "alice", "--yes", tenant="acme")
    assert texts(options, "acme") == {"alice": "[forgotten]"}
    assert texts(options, "beta") == {"alice": "beta's alice note", "carol": "beta's carol note"}
    assert subjects(options, "acme") == {"alice": False}
    assert subjects(options, "beta") == {"alice": True, "carol": True}


def _observe(ledger: Path, keys: Path, agent: str, text: str) -> None:
    """Append as engram did before tenants had keys of their own: under the shared store."""
    with Ledger.open(str(ledger), sealer=Sealer(KeyStore(keys))) as led:
        payload = MemoryObserved(agent=agent, text=text)
        led.append(NewEvent.of(payload, stream=f"agent:{agent}", actor=agent))


def test_a_store_tenants_shared_is_split_and_every_tenant_still_reads(
    options: list[str], tmp_path: Path
) -> None:
    keys, base = tmp_path / "keys.db", tmp_path / "ledger.db"
    tenant = {
        t: base.with_name(f"ledger.db{TENANTS_SUFFIX}") / t / "ledger.db" for t in ("acme", "beta")
    }
    _observe(base, keys, "bob", "the base's bob note")
    _observe(tenant["acme"], keys, "alice", "acme's alice note")
    _observe(tenant["acme"], keys, "dave", "acme's dave note")
    _observe(tenant["beta"], keys, "alice", "beta's alice note")
    _observe(tenant["beta"], keys, "erin", "beta's erin note")
    with KeyStore(keys) as shared:
        assert {s.subject for s in shared.subjects()} == {"alice", "bob", "dave", "erin"}

    # Before any write, readers read the shared store as they always did.
    assert texts(options, "acme") == {"alice": "acme's alice note", "dave": "acme's dave note"}
    engram(options, "forget", "alice", "--yes", tenant="acme")  # the first write splits

    assert texts(options, "acme") == {"alice": "[forgotten]", "dave": "acme's dave note"}
    assert texts(options, "beta") == {"alice": "beta's alice note", "erin": "beta's erin note"}
    assert texts(options, None) == {"bob": "the base's bob note"}
    assert subjects(options, "acme") == {"alice": False, "dave": True}
    assert subjects(options, "beta") == {"alice": True, "erin": True}
    with KeyStore(keys, create=False) as shared:  # the keys only tenants used are gone from it
        live = {s.subject for s in shared.subjects() if s.live}
    assert live == {"bob"}

    engram(options, "observe", "frank", "beta's new note", tenant="beta")
    engram(options, "forget", "erin", "--yes", tenant="beta")
    assert texts(options, "beta")["frank"] == "beta's new note"
    assert texts(options, "beta")["erin"] == "[forgotten]"
    assert texts(options, "acme")["dave"] == "acme's dave note"
    assert "frank" not in subjects(options, "acme")


def test_the_split_refuses_a_folder_others_can_write_and_follows_no_planted_link(
    options: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engram(options, "observe", "root", "a base note")  # the shared store exists
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    folder = Path(f"{tmp_path / 'keys.db'}{TENANTS_SUFFIX}")
    folder.mkdir()
    folder.chmod(0o777)  # made by another user before the first tenant's write
    (folder / ".split.tmp").symlink_to(victim)
    code = main([*options, "--tenant", "acme", "observe", "alice", "a note"], out=io.StringIO())
    assert code != 0
    assert "writable by other users" in capsys.readouterr().err
    assert victim.read_text() == "kept\n"
    assert sorted(p.name for p in folder.iterdir()) == [".split.tmp"]
    # A private folder: the mark is written through a fresh file, never the planted name.
    folder.chmod(0o700)
    engram(options, "observe", "alice", "a note", tenant="acme")
    assert victim.read_text() == "kept\n"
    assert (folder / ".split").is_file()
    assert not (folder / ".split").is_symlink()
    assert texts(options, "acme") == {"alice": "a note"}
