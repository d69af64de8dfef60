"""The jobs commands: run --once, jobs, sleep, sweep, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("ENGRAM_LEDGER", raising=False)
    monkeypatch.setenv("ENGRAM_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("", encoding="utf-8")
    return str(tmp_path / "ledger.db")


def test_sweep_dry_run_lists_and_appends_nothing_then_sweeps(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "init", "--ledger", db)[0] == 0
    for text in ("old note", "another old note"):
        code, _, err = run(
            capsys, "observe", "alice", text, "--at", "2025-01-01T00:00:00Z", "--ledger", db
        )
        assert code == 0, err
    head = Ledger.open(db, readonly=True)
    before = head.head()
    head.close()
    code, out, err = run(capsys, "sweep", "--dry-run", "--format", "json", "--ledger", db)
    assert code == 0, err
    items = json.loads(out)
    assert [i["item"] for i in items] == [f"alice@{before - 1}", f"alice@{before}"]
    assert "dry run: nothing appended" in err
    with Ledger.open(db, readonly=True) as ledger:
        assert ledger.head() == before
    code, out, _ = run(capsys, "sweep", "--ledger", db)
    assert code == 0
    assert out.startswith("archive: ok")
    assert "memories 2" in out
    code, out, _ = run(
        capsys, "recall", "alice", "note", "--no-record", "--format", "json", "--ledger", db
    )
    assert code == 0
    assert json.loads(out) == []
    code, out, _ = run(capsys, "jobs", "--format", "json", "--ledger", db)
    rows = {r["job"]: r for r in json.loads(out)}
    assert rows["archive"]["last_trigger"] == "hand"
    assert rows["archive"]["last_counts"]["memories"] == 2
    assert rows["sleep"]["last_window_end"] is None
    assert rows["sleep"]["daemon"].startswith("stopped")


def test_sleep_by_hand_and_run_once(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "init", "--ledger", db)[0] == 0
    code, out, err = run(capsys, "sleep", "--dry-run", "--ledger", db)
    assert code == 0, err
    assert "candidates 0" in err
    code, out, err = run(capsys, "run", "--once", "--ledger", db)
    assert code == 0, err
    assert {line.split(":")[0] for line in out.splitlines()} == {"sleep", "archive"}
    code, out, err = run(capsys, "run", "--once", "--ledger", db)
    assert out.splitlines() == ["sleep: idle", "archive: idle"]
    code, _, err = run(capsys, "status", "--ledger", db)
    assert code == 0
    assert "daemon" not in err  # no daemon ever ran on this store


def test_bad_job_settings_are_usage_errors_naming_the_key(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(capsys, "init", "--ledger", db)[0] == 0
    config = tmp_path / "engram.toml"
    config.write_text('[jobs.sleep]\nevery = "sometimes"\n', encoding="utf-8")
    monkeypatch.setenv("ENGRAM_CONFIG", str(config))
    code, _, err = run(capsys, "jobs", "--ledger", db)
    assert code == 2
    assert "[jobs.sleep] every" in err
    config.write_text("[jobs.sleep]\nthreshold = 70000\n", encoding="utf-8")
    code, _, err = run(capsys, "sleep", "--ledger", db)
    assert code == 2
    assert "threshold" in err


def test_readers_create_no_ledger(
    tmp_path: Path, db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["jobs"], ["cold", "list"], ["sleep", "--dry-run"], ["sweep", "--dry-run"]):
        code, _, err = run(capsys, *argv, "--ledger", db)
        assert code != 0, argv
        assert err.strip()
    assert not Path(db).exists()
