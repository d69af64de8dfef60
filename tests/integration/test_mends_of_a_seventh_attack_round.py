"""What a seventh attack round found, mended (ADR 0186): a writer chains nothing onto a head
planted or changed outside engram; `engram append` refuses a memory's text `observe` refuses;
PostgreSQL's own schemas hold no ledger; `verify` names a payload stored as text plainly (the
pack bomb and `graph export --out` are tested with the packs' format and the CLI's graph)."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.errors import ConfigError, DamagedEventError
from engram.ledger.postgres import PostgresBackend


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def _rows(path: Path) -> list[int]:
    with sqlite3.connect(path) as raw:
        return [p for (p,) in raw.execute("SELECT position FROM events ORDER BY position")]


def _tampered(path: Path, trigger: str, statement: str) -> None:
    """Drop one of the ledger's append-only triggers and run ``statement`` by hand."""
    with sqlite3.connect(path) as raw:
        raw.execute(f"DROP TRIGGER {trigger}")
        raw.execute(statement)
    raw.close()


def _observed(path: Path, *texts: str) -> None:
    with engram.open_memory(str(path), config="/dev/null") as memory:
        for text in texts:
            memory.agent("alice").observe(text)


def test_a_writer_appends_nothing_onto_a_planted_or_changed_head(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    _observed(path, "memory one", "memory two", "memory three")
    _tampered(
        path,
        "events_no_replace",
        "INSERT INTO events SELECT 10, '00000000-0000-0000-0000-0000000000aa', stream, 99, kind,"
        " schema, actor, at, payload, causation_id, correlation_id, hash FROM events"
        " WHERE position = 3",
    )
    planted = "position 9 is missing below the head 10"
    with (
        engram.open_memory(str(path), config="/dev/null") as memory,
        pytest.raises(DamagedEventError, match=planted),
    ):
        memory.agent("bob").observe("written after the planted row")
    assert _rows(path) == [1, 2, 3, 10]
    # The head changed in place: its hash no longer follows from its content.
    other = tmp_path / "other.db"
    _observed(other, "memory one", "memory two")
    _tampered(other, "events_no_update", "UPDATE events SET actor = 'mallory' WHERE position = 2")
    note = NewEvent(
        stream="agent:alice", kind="memory.observed", payload={"agent": "alice", "text": "x"}
    )
    with (
        Ledger.open(str(other), default_registry()) as ledger,
        pytest.raises(DamagedEventError, match="does not link to position 1"),
    ):
        ledger.append(note)
    assert _rows(other) == [1, 2]


def test_a_sound_ledger_is_written_after_its_head_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    _observed(path, "first")  # an empty ledger, then one of one row
    _observed(path, "second", "third")
    assert _rows(path) == [1, 2, 3]


def test_append_refuses_a_memory_text_observe_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.db"
    _observed(path, "seed")
    line = (
        '{"stream": "agent:alice", "kind": "memory.observed",'
        ' "payload": {"agent": "alice", "text": "nul\\u0000inside"}}\n'
    )
    source = tmp_path / "events.jsonl"
    source.write_text(line)
    code, _, err = run(capsys, "--ledger", str(path), "append", str(source))
    assert code == 1
    assert "line 1: payload text holds a NUL character" in err
    blank = line.replace("nul\\u0000inside", "\\u0007\\u0008 ")
    source.write_text(blank)
    code, _, err = run(capsys, "--ledger", str(path), "append", str(source))
    assert code == 1
    assert "holds nothing to remember" in err
    assert _rows(path) == [1]


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "pg_temp"])
def test_the_server_s_own_schemas_hold_no_ledger(schema: str) -> None:
    # Refused before any connection: no server is needed to say so.
    with pytest.raises(ConfigError, match="is the server's own"):
        PostgresBackend("postgresql://127.0.0.1:5432/test", schema=schema)


def test_verify_names_a_payload_stored_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ledger.db"
    _observed(path, "note one", "note two")
    _tampered(
        path,
        "events_no_update",
        "UPDATE events SET payload = CAST(payload AS TEXT) WHERE position = 1",
    )
    code, out, _ = run(capsys, "--ledger", str(path), "verify")
    assert code == 1
    assert "FAILED at position 1" in out
    assert "payload cell holds a str, not the bytes engram writes" in out
