"""The ``engram`` command line, end to end on real SQLite files."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def lines(*objs: object) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


GOOD = {
    "stream": "neuron:n1",
    "kind": "neuron.created",
    "payload": {"id": "n1", "concept": "perception", "type": "core"},
}
ACT = {"stream": "neuron:n1", "kind": "neuron.activated", "payload": {"id": "n1", "strength": 0.5}}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def test_init_creates_the_ledger_and_bootstraps_the_network_once(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--ledger", db, "init")
    assert code == 0
    assert db in out
    assert "bootstrapped the core network: positions 1..7" in out
    assert "head: 7" in out
    assert Path(db).exists()
    assert Path(db + ".projections", "projections.db").exists()
    code, out, _ = run(capsys, "--ledger", db, "init")
    assert code == 0
    assert "nothing appended" in out
    assert "head: 7" in out


def test_append_file_then_log_json(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "events.jsonl"
    src.write_text(lines(GOOD, ACT))
    code, out, _ = run(capsys, "--ledger", db, "append", str(src), "--expect", "no_stream")
    assert (code, out) == (0, "appended 2 events, positions 1..2\n")
    code, out, _ = run(
        capsys, "--ledger", db, "log", "--format", "jsonl", "--kind", "neuron.activated"
    )
    assert code == 0
    [event] = [json.loads(x) for x in out.splitlines()]
    assert event["position"] == 2
    assert event["payload"] == {"cause": "", "id": "n1", "strength": 0.5}
    assert event["actor"] == "cli"
    assert event["version"] == 2


def test_append_reports_the_bad_line_and_writes_nothing(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "bad.jsonl"
    bad = {
        "stream": "neuron:n1",
        "kind": "neuron.activated",
        "payload": {"id": "n1", "strength": "hot"},
    }
    src.write_text(lines(GOOD, ACT) + "\n" + lines(bad))  # the blank line keeps numbering honest
    code, _, err = run(capsys, "--ledger", db, "append", str(src))
    assert code == 1
    assert "engram append: error: line 4" in err
    assert "$.strength" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json}\n", "line 1"),
        (lines(GOOD) + '{"stream": "s", "kind": "neuron.created"}\n', "line 2"),
        (lines({**GOOD, "colour": "red"}), "line 1"),
        (lines({**GOOD, "at": "2026-01-01T00:00:00"}), "naive"),
        (lines({**GOOD, "kind": "no.such_kind"}), "not registered"),
        ("", "empty"),
    ],
)
def test_append_refuses_bad_input_with_a_clear_message(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(text)
    code, _, err = run(capsys, "--ledger", db, "append", str(src))
    assert code == 1
    assert expected in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 0


def test_append_expectation_conflict_is_an_error(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD))
    assert run(capsys, "--ledger", db, "append", str(src))[0] == 0
    src.write_text(lines(ACT))
    code, _, err = run(capsys, "--ledger", db, "append", str(src), "--expect", "5")
    assert code == 1
    assert "expected at version 5, but is at 1" in err


def test_verify_passes_then_names_the_tampered_position(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    code, out, _ = run(capsys, "--ledger", db, "verify")
    assert code == 0
    assert out.startswith("ok: 3 events")
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER events_no_update")
    con.execute(
        "UPDATE events SET payload = ? WHERE position = 2",
        (b'{"cause":"","id":"n1","strength":0.9}',),
    )
    con.commit()
    con.close()
    code, out, _ = run(capsys, "--ledger", db, "verify")
    assert code == 1
    assert "FAILED at position 2" in out


def test_a_row_changed_outside_engram_is_named_not_a_traceback(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER events_no_update")
    con.execute("UPDATE events SET at = 'yesterday' WHERE position = 2")
    con.commit()
    con.close()
    code, _, err = run(capsys, "--ledger", db, "log")
    assert code == 1
    assert "the event at position 2 cannot be read" in err
    assert "engram verify" in err
    assert "Traceback" not in err


def test_verify_names_a_row_put_below_position_one(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No trigger refuses it (it collides with nothing): the chain walk must read it.
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    con = sqlite3.connect(db)
    row = list(con.execute("SELECT * FROM events WHERE position = 1").fetchone())
    columns = [c[1] for c in con.execute("PRAGMA table_info(events)")]
    row[columns.index("position")] = 0
    row[columns.index("id")] = "01a21dd6-0000-7000-8000-000000000000"
    row[columns.index("stream")] = "forged"
    con.execute(f"INSERT INTO events VALUES ({', '.join('?' * len(row))})", row)
    con.commit()
    con.close()
    code, out, _ = run(capsys, "--ledger", db, "verify")
    assert code == 1
    assert "FAILED at position 0: a row at position 0, below 1" in out


def test_sql_formats_and_refuses_writes(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    query = "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind"
    code, out, _ = run(capsys, "--ledger", db, "sql", query, "--format", "csv")
    assert code == 0
    assert out.splitlines() == ["kind,n", "neuron.activated,2", "neuron.created,1"]
    code, out, _ = run(
        capsys,
        "--ledger",
        db,
        "sql",
        "SELECT sum(strength) AS s FROM neuron_activated",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out) == [{"s": 1.0}]
    code, _, err = run(capsys, "--ledger", db, "sql", "DELETE FROM events")
    assert code == 1
    assert "read-only" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 3


def test_ledger_location_from_environment_and_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "engram.toml").write_text(f'ledger = "{tmp_path / "from-config.db"}"\n')
    assert run(capsys, "init")[0] == 0
    assert (tmp_path / "from-config.db").exists()
    monkeypatch.setenv("ENGRAM_LEDGER", str(tmp_path / "from-env.db"))
    assert run(capsys, "init")[0] == 0
    assert (tmp_path / "from-env.db").exists()
    (tmp_path / "engram.toml").write_text('ledgr = "typo"\n')
    code, _, err = run(capsys, "init")
    assert code == 2
    assert "unknown key 'ledgr'" in err


def test_demo_runs_as_a_real_process(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("engram")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    proc = subprocess.run(
        [str(exe), "demo", "--dir", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "verify: ok" in proc.stdout
    assert "memory.observed" in proc.stdout
    with Ledger.open(str(tmp_path / "demo" / "ledger.db")) as ledger:
        assert ledger.verify().ok
        assert ledger.head() > 10


def test_verify_against_a_recorded_head_detects_a_truncated_tail(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    code, out, _ = run(capsys, "--ledger", db, "verify")
    recorded = out.split("hash ")[1].strip()
    code, out, _ = run(capsys, "--ledger", db, "verify", "--head", "3", "--hash", recorded)
    assert code == 0
    con = sqlite3.connect(db)
    con.execute("DROP TRIGGER events_no_delete")
    con.execute("DELETE FROM events WHERE position = 3")
    con.commit()
    con.close()
    code, out, _ = run(capsys, "--ledger", db, "verify")
    assert code == 0  # a shorter chain is still a valid chain...
    code, out, _ = run(capsys, "--ledger", db, "verify", "--head", "3", "--hash", recorded)
    assert code == 1  # ...but not the one recorded
    assert "removed from the tail" in out


def test_verify_refuses_a_hash_that_is_not_one_and_explains_a_rewritten_head(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "e.jsonl"
    src.write_text(lines(GOOD, ACT, ACT))
    run(capsys, "--ledger", db, "append", str(src))
    code, _, err = run(capsys, "--ledger", db, "verify", "--head", "2", "--hash", "abc")
    assert code == 2  # bad input, not a tampered ledger
    assert "64 hex digits" in err
    code, out, _ = run(capsys, "--ledger", db, "verify", "--head", "2", "--hash", "ab" * 32)
    assert code == 1
    assert "rewritten" in out
    assert "verified before it" not in out  # the chain held through the head: say so
    assert "the chain itself verifies through 3" in out
