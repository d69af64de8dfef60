"""A ledger opened read-only: read, verified and audited without writing, even on read-only media.

An archived copy handed to an auditor sits on media that cannot be written. Opening it used
to fail ("unable to open database file"): the ledger was always opened for writing (create,
``BEGIN IMMEDIATE``, the WAL pragma) and DuckDB's SQLite scanner needs to create the WAL
index beside the file. ``Ledger.open(..., readonly=True)`` writes nothing anywhere.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sandbox import needs_userns

from engram.ledger import (
    ConfigError,
    Ledger,
    LedgerNotFoundError,
    NewEvent,
    ReadOnlyLedgerError,
)
from engram.ledger.catalog import SignalSent

WORKER = Path(__file__).parent / "_workers" / "readonly_worker.py"


def signal(n: int) -> NewEvent:
    return NewEvent(stream="agent:a", kind="signal.sent", payload=SignalSent(to="b", topic=f"t{n}"))


def test_a_missing_ledger_is_not_created_by_a_read_only_open(tmp_path: Path) -> None:
    path = tmp_path / "typo" / "ledgr.db"
    with pytest.raises(LedgerNotFoundError, match="no ledger at"):
        Ledger.open(str(path), readonly=True)
    assert not path.parent.exists()


def test_a_read_only_ledger_reads_what_a_writer_appends_and_refuses_appends(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path) as writer, Ledger.open(path, readonly=True) as reader:
        writer.append([signal(1), signal(2)])
        assert reader.head() == 2
        writer.append(signal(3))  # a live file: the reader sees later commits too
        assert [e.payload.topic for e in reader.read()] == ["t1", "t2", "t3"]
        assert reader.verify().ok
        assert reader.readonly
        assert not writer.readonly
        with pytest.raises(ReadOnlyLedgerError):
            reader.append(signal(4))
        assert writer.head() == 3


def test_a_file_that_is_not_a_ledger_is_refused_read_only(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ConfigError, match="not an engram ledger"):
        Ledger.open(str(path), readonly=True)


@needs_userns
def test_a_ledger_on_read_only_media_is_read_verified_and_audited(tmp_path: Path) -> None:
    source, media = tmp_path / "source", tmp_path / "media"
    source.mkdir()
    media.mkdir()
    with Ledger.open(str(source / "ledger.db")) as ledger:
        ledger.append([signal(n) for n in range(5)])
    files_before = sorted(p.name for p in source.iterdir())
    script = (
        f'mount --bind "{source}" "{media}" && mount -o remount,bind,ro "{media}" && '
        f'exec "{sys.executable}" -W error "{WORKER}" "{media / "ledger.db"}"'
    )
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["events"] == 5
    assert out["verify"] is True
    assert out["head"] == 5
    assert out["append"].startswith("refused")
    assert out["sql"] == 5
    assert out["signals"] == 5
    assert sorted(p.name for p in source.iterdir()) == files_before


@pytest.mark.postgres
def test_a_read_only_postgres_ledger_refuses_writes_and_creates_nothing(
    pg_dsn: str, pg_schema: str
) -> None:
    with pytest.raises(LedgerNotFoundError, match="no ledger in schema"):
        Ledger.open(pg_dsn, pg_schema=pg_schema, readonly=True)
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as writer:
        writer.append([signal(1), signal(2)])
        with Ledger.open(pg_dsn, pg_schema=pg_schema, readonly=True) as reader:
            assert [e.position for e in reader.read()] == [1, 2]
            assert reader.verify().ok
            with pytest.raises(ReadOnlyLedgerError):
                reader.append(signal(3))
        assert writer.head() == 2


@needs_userns
def test_the_reading_commands_work_on_read_only_media(tmp_path: Path) -> None:
    source, media = tmp_path / "source", tmp_path / "media"
    source.mkdir()
    media.mkdir()
    ledger = str(source / "ledger.db")
    exe = Path(sys.executable).with_name("engram")
    subprocess.run([str(exe), "--ledger", ledger, "init"], check=True, capture_output=True)
    files_before = sorted(p.name for p in source.iterdir())
    on_media = media / "ledger.db"
    commands = [
        f'"{exe}" --ledger "{on_media}" log --format jsonl',
        f'"{exe}" --ledger "{on_media}" verify',
        f'"{exe}" --ledger "{on_media}" sql "SELECT count(*) AS n FROM events" --format json',
    ]
    script = (
        f'mount --bind "{source}" "{media}" && mount -o remount,bind,ro "{media}" && '
        + " && echo '--' && ".join(commands)
    )
    result = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    log, verify, sql_out = result.stdout.split("--\n")
    events = [json.loads(line) for line in log.splitlines()]
    assert events
    assert events[-1]["position"] == len(events)
    assert "ok" in verify
    assert json.loads(sql_out) == [{"n": len(events)}]
    assert sorted(p.name for p in source.iterdir()) == files_before
