"""``engram scars`` and ``engram recall --scope``, end to end on real SQLite files."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger


@pytest.fixture(autouse=True)
def _no_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_CONFIG", os.devnull)
    monkeypatch.delenv("ENGRAM_LEDGER", raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def _record(capsys: pytest.CaptureFixture[str], db: str, *extra: str) -> int:
    code, out, err = run(capsys, "--ledger", db, "scars", "record", *extra)
    assert code == 0, err
    return int(out.split("position ")[1].split()[0])


def test_record_list_show_recall_archive(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    failure = _record(
        capsys,
        db,
        "alice",
        "--outcome",
        "failure",
        "--what",
        "the nightly backup failed silently",
        "--lesson",
        "the job now checks exit codes",
        "--task",
        "backup",
        "--tag",
        "ops",
    )
    victory = _record(
        capsys,
        db,
        "bob",
        "--outcome",
        "victory",
        "--what",
        "the canary caught a bad build",
        "--lesson",
        "ship behind a canary",
        "--importance",
        "9",
        "--not-learnable",
    )
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--format", "json")
    assert code == 0
    listed = json.loads(out)
    assert [r["position"] for r in listed] == [victory, failure]
    assert listed[0]["importance"] == 9
    assert listed[0]["learnable"] is False
    assert listed[1]["sources"] == {"task": "backup"}
    code, out, _ = run(
        capsys, "--ledger", db, "scars", "list", "--outcome", "failure", "--format", "json"
    )
    assert [r["position"] for r in json.loads(out)] == [failure]
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--learnable", "--format", "json")
    assert [r["position"] for r in json.loads(out)] == [failure]
    code, out, err = run(
        capsys, "--ledger", db, "scars", "recall", "alice", "backup failed", "--format", "json"
    )
    assert code == 0, err
    served = json.loads(out)
    assert [r["position"] for r in served] == [failure]
    assert served[0]["type"] == "failure"
    assert "lesson: the job now checks exit codes" in served[0]["text"]
    assert "recorded as memory.recalled" in err
    code, out, _ = run(capsys, "--ledger", db, "scars", "show", str(failure), "--format", "json")
    (shown,) = json.loads(out)
    assert shown["recalls"] == 1
    assert shown["last_recalled"] is not None
    code, out, _ = run(capsys, "--ledger", db, "scars", "show", shown["id"], "--format", "json")
    assert json.loads(out)[0]["position"] == failure
    code, out, _ = run(
        capsys, "--ledger", db, "recall", "bob", "canary build", "--scope", "victories",
        "--no-record", "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert [r["position"] for r in json.loads(out)] == [victory]
    code, out, _ = run(capsys, "--ledger", db, "scars", "archive", "--agent", "alice", str(failure))
    assert code == 0
    assert "archived at position" in out
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--format", "json")
    assert [r["position"] for r in json.loads(out)] == [victory]
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--archived", "--format", "json")
    assert [r["position"] for r in json.loads(out)] == [failure]


def test_errors_are_one_line_and_change_nothing(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "--ledger", db, "scars", "list")
    assert code == 1
    assert "no ledger" in err
    assert not Path(db).exists()  # readers never create a ledger
    scar = _record(capsys, db, "alice", "--outcome", "failure", "--what", "w", "--lesson", "l")
    with Ledger.open(db) as ledger:
        head = ledger.head()
    cases = [
        (["scars", "show", "99"], 1, "no scar at '99'"),
        (["scars", "archive", "--agent", "alice", "99"], 1, "position 99 holds no event"),
        (
            ["scars", "record", "alice", "--outcome", "oops", "--what", "w", "--lesson", "l"],
            2,
            "oops",
        ),
        (["scars", "record", "alice", "--outcome", "failure", "--what", "w"], 2, "--lesson"),
        (
            ["scars", "record", "a", "--outcome", "failure", "--what", " ", "--lesson", "l"],
            1,
            "what",
        ),
        (["recall", "alice", "w", "--scope", "rule"], 2, "'rule' is not one of"),
        (["recall", "alice", "w", "--scope", "scars", "--type", "plan"], 1, "types filters"),
    ]
    for argv, expected, message in cases:
        code, _, err = run(capsys, "--ledger", db, *argv)
        assert code == expected, (argv, err)
        assert message in err
        # A run-time error is one line; a usage error is click's usage, then one error line.
        shown = err.strip().splitlines()
        assert len(shown) == 1 if expected == 1 else shown[-1].startswith("Error:")
    code, _, err = run(capsys, "--ledger", db, "scars", "archive", "--agent", "alice", str(scar))
    assert code == 0
    code, _, err = run(capsys, "--ledger", db, "scars", "archive", "--agent", "alice", str(scar))
    assert code == 1
    assert "archived already" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == head + 1


def test_the_scar_bench_part_runs_only_when_named() -> None:
    from engram import bench

    assert "scars" not in bench.recall_parts(None)
    assert bench.recall_parts(["scars"]) == ("scars",)
    assert bench.recall_parts(["scars,latency"]) == ("latency", "scars")


def test_a_private_scar_reads_private_unless_shown_as_its_agent(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    position = _record(
        capsys, db, "alice", "--outcome", "failure", "--what", "my migration wiped prod",
        "--lesson", "snapshot first", "--visibility", "private",
    )  # fmt: skip
    _record(capsys, db, "bob", "--outcome", "failure", "--what", "a public slip", "--lesson", "x")
    for argv in (["list"], ["show", str(position)], ["list", "--as", "bob"]):
        code, out, err = run(capsys, "--ledger", db, "scars", *argv, "--format", "json")
        assert code == 0, err
        rows = {r["agent"]: r for r in json.loads(out)}
        assert (rows["alice"]["what"], rows["alice"]["lesson"]) == ("[private]", "[private]")
        assert "wiped" not in out
    code, out, _ = run(capsys, "--ledger", db, "scars", "list", "--as", "alice", "--format", "json")
    rows = {r["agent"]: r for r in json.loads(out)}
    assert rows["alice"]["what"] == "my migration wiped prod"
    assert rows["bob"]["what"] == "a public slip"
    code, out, _ = run(
        capsys, "--ledger", db, "scars", "show", str(position), "--as", "alice", "--format", "json"
    )
    assert json.loads(out)[0]["lesson"] == "snapshot first"
