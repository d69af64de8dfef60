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
    jobs = ["sleep", "archive", "dream", "hygiene", "skills", "postproject", "reflect"]
    assert [line.split(":")[0] for line in out.splitlines()] == jobs
    code, out, err = run(capsys, "run", "--once", "--ledger", db)
    assert out.splitlines() == [f"{job}: idle" for job in jobs]
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
    for argv in (
        ["jobs"],
        ["cold", "list"],
        ["sleep", "--dry-run"],
        ["sweep", "--dry-run"],
        ["dream"],
        ["hygiene"],
    ):
        code, _, err = run(capsys, *argv, "--ledger", db)
        assert code != 0, argv
        assert err.strip()
    assert not Path(db).exists()


def test_dream_is_a_dry_run_until_apply_and_proposes_once(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "init", "--ledger", db)[0] == 0
    lesson = "check the exit code of every backup step"
    for agent in ("alice", "bob", "alice"):
        code, _, err = run(
            capsys,
            "scars",
            "record",
            agent,
            "--outcome",
            "failure",
            "--what",
            "the nightly backup failed silently",
            "--lesson",
            lesson,
            "--ledger",
            db,
        )
        assert code == 0, err
    with Ledger.open(db, readonly=True) as ledger:
        head = ledger.head()
    code, out, err = run(capsys, "dream", "--format", "json", "--ledger", db)
    assert code == 0, err
    (line,) = json.loads(out)
    assert (line["kind"], line["detail"]) == ("suggestion.proposed", lesson)
    assert "dry run: nothing appended" in err
    with Ledger.open(db, readonly=True) as ledger:
        assert ledger.head() == head
    code, out, err = run(capsys, "dream", "--apply", "--ledger", db)
    assert code == 0, err
    assert "dream: ok" in out
    assert "clusters 1" in out
    code, out, _ = run(capsys, "suggestions", "list", "--format", "json", "--ledger", db)
    assert code == 0
    assert [s["drafter"] for s in json.loads(out)] == ["dream"]
    code, out, err = run(capsys, "dream", "--apply", "--ledger", db)
    assert code == 0, err
    assert "clusters 0" in out  # its scars are named by a suggestion now


def test_a_job_run_for_real_prints_only_records_under_a_machine_format(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The summary line went to stdout after the JSON array: stdout keeps records only.
    assert run(capsys, "init", "--ledger", db)[0] == 0
    for command in (["dream", "--apply"], ["skills", "--apply"], ["hygiene", "--record"]):
        code, out, err = run(capsys, *command, "--format", "json", "--ledger", db)
        assert code == 0, err
        assert isinstance(json.loads(out), list), out
        assert f"{command[0]}: ok" in err
    code, out, err = run(capsys, "sleep", "--format", "json", "--ledger", db)
    assert code == 0, err
    (record,) = json.loads(out)
    assert (record["job"], record["outcome"]) == ("sleep", "ok")
    code, out, _ = run(capsys, "sleep", "--ledger", db)
    assert out.startswith("sleep: ")  # the table format keeps its line


def test_hygiene_lists_groups_and_records_a_report_that_lists_again(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "init", "--ledger", db)[0] == 0
    for text in ("deploy at noon", "deploy at noon", "deploy at noon", "deploy at one"):
        assert run(capsys, "observe", "alice", text, "--ledger", db)[0] == 0
    code, out, err = run(capsys, "hygiene", "--format", "json", "--ledger", db)
    assert code == 0, err
    (group,) = json.loads(out)
    assert (group["agent"], group["copies"], group["text"]) == ("alice", 3, "deploy at noon")
    assert "1 group(s), 2 duplicate(s)" in err
    with Ledger.open(db, readonly=True) as ledger:
        head = ledger.head()
    code, out, err = run(capsys, "hygiene", "--record", "--ledger", db)
    assert code == 0, err
    with Ledger.open(db, readonly=True) as ledger:
        (done,) = ledger.read(head, kinds=["job.completed"])
        assert ledger.head() == head + 1  # the report only
    assert done.payload.counts["duplicates"] == 2
    end = done.payload.window_end.isoformat()
    code, out, err = run(capsys, "hygiene", "--as-of", end, "--format", "json", "--ledger", db)
    assert code == 0, err
    assert f"digest {done.payload.counts['digest']}" in err
    code, _, err = run(capsys, "hygiene", "--record", "--as-of", end, "--ledger", db)
    assert code == 2
    assert "--as-of" in err


def test_hygiene_rules_prints_the_rules_findings_and_appends_nothing(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A rule's findings (a dead link, a duplicate) were printed only by --record, which
    # appends the job's report: there was no way to look first (ADR 0133).
    import engram

    with engram.open_memory(db) as memory:
        lessons = memory.lessons()
        for what in ("the deploy broke", "a second deploy broke"):
            scar = memory.scars("ana").record("failure", what, "deploy with a lock timeout")
            (event,) = memory.ledger.get([scar])
            sid = lessons.propose([event.id], "rules", "Deploy with a lock timeout.")
            lessons.apply(sid, "carol")
    with Ledger.open(db, readonly=True) as ledger:
        head = ledger.head()
    code, out, err = run(capsys, "hygiene", "--rules", "--format", "json", "--ledger", db)
    assert code == 0, err
    assert [line["kind"] for line in json.loads(out)] == ["rule.duplicate"]
    assert "dry run: nothing appended" in err
    with Ledger.open(db, readonly=True) as ledger:
        assert ledger.head() == head
    code, _, err = run(capsys, "hygiene", "--rules", "--record", "--ledger", db)
    assert code == 2
    assert "give one" in err


def test_jobs_shows_the_node_that_ran_each_window_from_the_ledger(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import socket

    assert run(capsys, "init", "--ledger", db)[0] == 0
    code, _, err = run(capsys, "run", "--once", "--ledger", db)
    assert code == 0, err
    code, out, err = run(capsys, "jobs", "--format", "json", "--ledger", db)
    assert code == 0, err
    rows = {r["job"]: r for r in json.loads(out)}
    node = f"{socket.gethostname()} pid {os.getpid()}"
    assert rows["sleep"]["ran_by"] == node
    assert rows["sleep"]["windows"] == 1
    assert rows["sleep"]["nodes"] == f"{node} (1)"
    assert rows["sleep"]["ran_at"] > rows["sleep"]["last_window_end"]  # dated when appended
    assert rows["sleep"]["next_boundary"].endswith(":00:00+00:00")  # hourly, on the hour
    assert rows["sleep"]["daemon"].startswith("stopped")  # no daemon here: the ledger knows
    code, out, _ = run(capsys, "jobs", "--ledger", db)
    assert node in out


def test_catch_up_brings_projections_to_the_head_as_a_rebuild_would(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.ledger import NewEvent
    from engram.ledger.catalog import MemoryObserved

    assert run(capsys, "init", "--ledger", db)[0] == 0
    code, _, _ = run(capsys, "catch-up", "--ledger", db)
    assert code == 0
    with Ledger.open(db) as ledger:  # another node's writes: no projection follows them here
        head = ledger.append(
            [
                NewEvent.of(
                    MemoryObserved(agent="alice", text=f"note {i} on the shared ledger"),
                    stream="agent:alice",
                )
                for i in range(300)
            ]
        )[-1]
    code, out, err = run(capsys, "catch-up", "--digest", "--format", "json", "--ledger", db)
    assert code == 0, err
    caught = {r["name"]: r for r in json.loads(out)}
    assert {(r["checkpoint"], r["lag"], r["state"]) for r in caught.values()} == {(head, 0, "live")}
    assert f"caught up to position {head:,}" in err
    code, out, err = run(capsys, "rebuild", "--format", "json", "--ledger", db)
    assert code == 0, err
    rebuilt = {r["name"]: r["digest"] for r in json.loads(out)}
    assert rebuilt == {name: r["digest"] for name, r in caught.items()}


def test_catch_up_needs_a_ledger(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "catch-up", "--ledger", db)
    assert code != 0
    assert err.strip()
    assert not Path(db).exists()


def test_a_recorded_hygiene_report_shows_no_private_text(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # `engram hygiene` masked a private memory stored twice; `hygiene --record` printed its
    # text in the report's lines, to whoever ran it (ADR 0126).
    assert run(capsys, "init", "--ledger", db)[0] == 0
    for _ in range(2):
        code, _, err = run(capsys, "observe", "alice", "my locker code is 8642",
                           "--visibility", "private", "--ledger", db)  # fmt: skip
        assert code == 0, err
        assert run(capsys, "observe", "alice", "standup at ten", "--ledger", db)[0] == 0
    code, out, err = run(capsys, "hygiene", "--record", "--ledger", db)
    assert code == 0, err
    assert "8642" not in out + err
    assert "[private]" in out
    assert "standup at ten" in out
