"""The installed ``engram`` script as a shell sees it: exit codes, pipes, missing ledgers.

Every test here runs the real console script in a child process, with the user's data and
config directories pointed into the test's own folder.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from engram.cli import cli, main
from engram.ledger import Ledger, NewEvent

EXE = Path(sys.executable).with_name("engram")

# Every command that only reads (or appends to a ledger that must exist already).
READERS = [
    ["log"],
    ["verify"],
    ["sql", "SELECT 1"],
    ["status"],
    ["rebuild"],
    ["recall", "alice", "the deploy"],
    ["archive", "--agent", "alice", "1"],
    ["graph", "top"],
    ["graph", "export"],
    ["graph", "propagate", "n_perception_001"],
]


def environment(home: Path) -> dict[str, str]:
    # ENGRAM_EMBEDDER stays: these tests expect the quiet hash default, not MiniLM (ADR 0061).
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_") or k == "ENGRAM_EMBEDDER"
    }
    env.update(XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    return env


def engram(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), *args],
        cwd=home,
        env=environment(home),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("argv", READERS, ids=" ".join)
def test_a_reader_on_a_missing_path_creates_nothing(tmp_path: Path, argv: list[str]) -> None:
    before = tree(tmp_path)
    path = str(tmp_path / "typo" / "ledgr.db")
    result = CliRunner().invoke(cli, ["--ledger", path, *argv])
    assert result.exit_code == 1, result.output
    assert f"no ledger at {path}; run engram init" in result.stderr
    assert result.stdout == ""
    assert tree(tmp_path) == before
    assert not (tmp_path / "typo").exists()


def test_verify_on_a_typo_path_exits_1_and_creates_no_directory(tmp_path: Path) -> None:
    proc = engram(tmp_path, "--ledger", "typo/ledgr.db", "verify")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == "engram verify: error: no ledger at typo/ledgr.db; run engram init\n"
    assert tree(tmp_path) == set()


def test_the_default_ledger_is_not_created_by_a_reader(tmp_path: Path) -> None:
    proc = engram(tmp_path, "log")
    default = tmp_path / "data" / "engram" / "ledger.db"
    assert proc.returncode == 1
    assert f"no ledger at {default}; run engram init" in proc.stderr
    assert tree(tmp_path) == set()
    proc = engram(tmp_path, "init")
    assert proc.returncode == 0, proc.stderr
    assert default.is_file()


def test_a_postgres_reader_does_not_create_the_schema(pg_dsn: str, pg_schema: str) -> None:
    code = main(["--ledger", pg_dsn, "--pg-schema", pg_schema, "status"], out=io.StringIO())
    assert code == 1
    with psycopg.connect(pg_dsn, connect_timeout=3) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s", (pg_schema,)
        ).fetchone()
    assert found == (0,)
    assert main(["--ledger", pg_dsn, "--pg-schema", pg_schema, "init"], out=io.StringIO()) == 0
    out = io.StringIO()
    code = main(["log", "--ledger", pg_dsn, "--pg-schema", pg_schema, "--format", "jsonl"], out=out)
    assert code == 0
    assert len(out.getvalue().splitlines()) == 7


def test_exit_codes_0_1_2_from_a_real_process(tmp_path: Path) -> None:
    db = str(tmp_path / "x.db")
    assert engram(tmp_path, "--ledger", db, "init").returncode == 0
    ok = engram(tmp_path, "verify", "--ledger", db)  # a global option after the command
    assert (ok.returncode, ok.stdout.split(":")[0]) == (0, "ok")
    failed = engram(tmp_path, "--ledger", db, "sql", "SELECT * FROM no_such_table")
    assert failed.returncode == 1
    assert failed.stderr.startswith("engram sql: error: ")
    usage = engram(tmp_path, "--ledger", db, "log", "--format", "xml")
    assert usage.returncode == 2
    assert "'table', 'csv', 'json', 'jsonl'" in usage.stderr
    unknown = engram(tmp_path, "--ledger", db, "nosuchcommand")
    assert unknown.returncode == 2
    half = engram(tmp_path, "--ledger", db, "verify", "--head", "3")
    assert half.returncode == 2
    assert "--head and --hash go together" in half.stderr
    version = engram(tmp_path, "--version")
    assert version.returncode == 0
    assert version.stdout.split()[-2:] == ["engram", version.stdout.split()[-1]]
    module = subprocess.run(
        [sys.executable, "-m", "engram", "--ledger", db, "log", "--limit", "1"],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert module.returncode == 0, module.stderr
    assert "n_perception_001" in module.stdout


def _big_ledger(path: Path, neurons: int) -> None:
    with Ledger.open(str(path)) as ledger:
        ledger.append(
            [
                NewEvent(
                    stream=f"neuron:n{i}",
                    kind="neuron.created",
                    payload={"id": f"n{i}", "concept": f"concept number {i}", "type": "episodic"},
                )
                for i in range(neurons)
            ]
        )


def _piped_to_head(home: Path, *args: str, lines: int = 1) -> tuple[int, str, str]:
    """Run ``engram ARGS | head -LINES``; return engram's exit code and stderr, head's output."""
    producer = subprocess.Popen(
        [str(EXE), *args],
        cwd=home,
        env=environment(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert producer.stdout is not None
    assert producer.stderr is not None
    head = subprocess.run(
        ["head", f"-{lines}"], stdin=producer.stdout, capture_output=True, timeout=120, check=True
    )
    producer.stdout.close()  # head is gone: engram's next write meets a closed pipe
    code = producer.wait(timeout=120)
    err = producer.stderr.read().decode()
    producer.stderr.close()
    return code, head.stdout.decode(), err


def test_log_piped_to_head_exits_quietly(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    _big_ledger(db, 5000)  # far more than a pipe buffer holds
    for fmt in ("table", "jsonl", "csv"):
        code, out, err = _piped_to_head(tmp_path, "--ledger", str(db), "log", "--format", fmt)
        assert (code, err) == (0, ""), fmt
        assert len(out.splitlines()) == 1
    assert Ledger.open(str(db)).head() == 5000


def test_graph_export_piped_to_head_exits_quietly(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    _big_ledger(db, 3000)
    code, out, err = _piped_to_head(tmp_path, "--ledger", str(db), "graph", "export", lines=10)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == ["{", '  "neurons": [']


def test_quiet_and_verbose(tmp_path: Path) -> None:
    db = str(tmp_path / "q.db")
    assert engram(tmp_path, "--ledger", db, "observe", "alice", "the deploy failed").returncode == 0
    said = engram(tmp_path, "--ledger", db, "recall", "alice", "deploy")
    assert said.returncode == 0
    assert said.stderr == "recorded as memory.recalled at position 2\n"
    quiet = engram(tmp_path, "--ledger", db, "recall", "alice", "deploy", "-q")
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert quiet.stdout.splitlines()[0].split()[:2] == ["position", "score"]
    assert quiet.stdout.splitlines()[2].split()[0] == "1"
    both = engram(tmp_path, "--ledger", db, "-q", "status", "-v")
    assert both.returncode == 2
    assert "exclude each other" in both.stderr
    json.loads(engram(tmp_path, "--ledger", db, "-v", "status", "--format", "json").stdout)


def test_shell_completion_offers_commands_and_choices(tmp_path: Path) -> None:
    def complete(words: str, index: int) -> list[str]:
        env = environment(tmp_path)
        env.update(COMP_WORDS=words, COMP_CWORD=str(index), _ENGRAM_COMPLETE="bash_complete")
        proc = subprocess.run(
            [str(EXE)], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.split()

    assert complete("engram gr", 1) == ["plain,graph"]
    assert complete("engram log --format ", 3) == [
        "plain,table",
        "plain,csv",
        "plain,json",
        "plain,jsonl",
    ]
