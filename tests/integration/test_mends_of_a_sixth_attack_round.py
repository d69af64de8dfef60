"""What a sixth attack round found, mended (ADR 0183): the database files engram creates are
their user's alone; a lock wait that is no number of seconds, and a routing file that is not
there, are refused by name; `engram sql` holds a bounded share of memory; `catch-up` resumes a
rebuild a kill interrupted (the MCP server's review gate is tested with its tools)."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.ledger.files import create_private


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_the_database_files_engram_creates_are_their_user_s_alone(tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # a folder the user made, readable by others: it stays so
    shared.mkdir()
    shared.chmod(0o755)
    path = shared / "ledger.db"
    with engram.open_memory(str(path), config="/dev/null") as memory:
        memory.agent("ana").observe("The door code is 4411.")
        memory.engine.catch_up()
    store = Path(f"{path}.projections")
    for made in (path, store / "projections.db", store / "embeddings.db"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o600, made
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    # A file that exists keeps its mode: the user chose it.
    chosen = tmp_path / "chosen.db"
    chosen.write_bytes(b"")
    chosen.chmod(0o640)
    create_private(chosen)
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o640


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "-1"])
def test_a_lock_wait_that_is_no_number_of_seconds_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, value: str
) -> None:
    config = tmp_path / "engram.toml"
    config.write_text(f"busy_timeout = {value}\n")
    db = str(tmp_path / "l.db")
    code, _, err = run(capsys, "--ledger", db, "--config", str(config), "observe", "ana", "x")
    assert code == 2
    assert "busy_timeout must be a number of seconds in 0..86,400" in err
    assert "Traceback" not in err
    assert not Path(db).exists()


@pytest.mark.parametrize("where", ["missing.toml", "folder", "/dev/zero"])
def test_a_routing_file_that_is_not_there_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    (tmp_path / "folder").mkdir()
    routing = where if where.startswith("/") else str(tmp_path / where)
    config = tmp_path / "engram.toml"
    config.write_text(f'routing = "{routing}"\n')
    db = str(tmp_path / "l.db")
    code, _, err = run(capsys, "--ledger", db, "--config", str(config), "observe", "ana", "x")
    assert code == 2
    assert f"routing {routing!r} is not a file" in err
    assert not Path(db).exists()


def test_sql_holds_a_bounded_share_of_memory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "l.db")
    with engram.open_memory(db, config="/dev/null") as memory:
        memory.agent("ana").observe("The door code is 4411.")
    query = "SELECT current_setting('memory_limit') AS m"
    code, out, _ = run(capsys, "--ledger", db, "--config", "/dev/null", "sql", query)
    assert code == 0
    assert "GiB" in out
    assert float(out.split()[-2]) <= 2.0  # "1.8 GiB": DuckDB's 2GB, not 80% of the machine
    raise_it = "SET memory_limit = '100GB'; SELECT 1"
    code, _, err = run(capsys, "--ledger", db, "--config", "/dev/null", "sql", raise_it)
    assert code != 0
    assert "read-only" in err or "lock" in err.lower()


class _Killed(Exception):
    """Stands for a kill between a rebuild's batches."""


def _kill(label: str, done: int, total: int) -> None:
    if label == "rebuild" and done:
        raise _Killed


def test_catch_up_resumes_a_rebuild_a_kill_interrupted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = str(tmp_path / "l.db")
    with engram.open_memory(db, config="/dev/null") as memory:
        ana = memory.agent("ana")
        for i in range(30):
            ana.observe(f"Note {i}: the shed keeps tool {i}.")
        memory.engine.catch_up()
        with pytest.raises(_Killed):
            memory.engine.rebuild(progress=_kill)
        assert "rebuilding" in {s.state for s in memory.engine.status()}
    code, _, err = run(capsys, "--ledger", db, "--config", "/dev/null", "catch-up")
    assert code == 0, err
    assert "resumed the interrupted rebuild of" in err
    assert "need a rebuild" not in err
    with engram.open_memory(db, config="/dev/null") as memory:
        assert {s.state for s in memory.engine.status()} == {"live"}
