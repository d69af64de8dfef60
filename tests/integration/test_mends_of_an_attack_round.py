"""What an attack on the public surfaces found, mended (ADR 0160): a replacement told early
is not served before it is true; a valid time out of range, a NUL in tags or a source, a
control character in a name, a pack's memory of control characters are refused with nothing
written; a ledger whose metadata was changed outside engram (its identity taken out of a
sealed ledger, its hash algorithm, a newer format) is refused in one line, nothing written;
a raw append naming a position that holds nothing leaves the listings whole; two memories
differing in one number are no copies."""

from __future__ import annotations

import io
import json
import os
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

import engram
from engram.agents.folding import folds
from engram.agents.packs.format import Manifest, PackFormatError, decode_nodes
from engram.cli import main
from engram.ledger import DamagedLedgerError, Ledger, UnsupportedFormatError
from engram.projections.errors import QueryError


def _events(path: Path) -> int:
    with Ledger.open(str(path), readonly=True) as ledger:
        return ledger.head()


def test_a_replacement_told_early_is_not_served_before_it_is_true(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db")) as memory:
        ana = memory.agent("ana")
        old = ana.observe("The library closes at 5pm", at=datetime(2026, 1, 1, tzinfo=UTC))
        later = datetime.now(UTC) + timedelta(days=400)
        new = ana.observe("The library closes at 8pm", supersedes=[old], valid_from=later)

        def served(valid_at: datetime | None) -> dict[int, int | None]:
            found = ana.recall("When does the library close?", record=False, valid_at=valid_at)
            return {i.event.position: i.replaced_by for i in found.items}

        assert served(None) == {old: None}  # not yet true: the old one holds, unlabelled
        assert served(later - timedelta(days=1)) == {old: None}
        assert served(later + timedelta(days=1)) == {new: None, old: new}


def test_bad_values_at_the_write_path_are_refused_with_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with engram.open_memory(str(path)) as memory:
        ana = memory.agent("ana")
        old = ana.observe("The gate code is 1")
        head = memory.ledger.head()
        east = timezone(timedelta(hours=5))
        with pytest.raises(QueryError, match="out of range in UTC"):
            ana.observe(
                "The gate code is 2", supersedes=[old], valid_from=datetime(1, 1, 1, tzinfo=east)
            )
        with pytest.raises(QueryError, match=r"tags\[1\] holds a NUL"):
            ana.observe("The gate code is 2", tags=["gate", "a\x00b"])
        with pytest.raises(QueryError, match="source holds a NUL"):
            ana.observe("The gate code is 2", source="a\x00b")
        with pytest.raises(QueryError, match="agent holds a control character"):
            memory.agent("ev\x1b[31mil")
        assert memory.ledger.head() == head


def test_a_reviewer_named_with_a_control_character_is_refused(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db")) as memory:
        ana = memory.agent("ana")
        old = ana.observe("The gate code is 1")
        applied = ana.observe("The gate code is 2", supersedes=[old])  # its own event
        head = memory.ledger.head()
        with pytest.raises(QueryError, match="reviewer holds a control character"):
            ana.revert_supersession(applied, reviewer="r\x1b[31mX")
        assert memory.ledger.head() == head


@pytest.mark.parametrize("text", ["before\x00after", "\x01\x02 \x03"])
def test_a_pack_memory_observe_would_refuse_is_refused_on_import(text: str) -> None:
    line = json.dumps({"kind": "memory", "id": "m1", "text": text}).encode()
    manifest = Manifest(
        id="p", name="p", version="1", created_at=datetime.now(UTC), checksum="0" * 64, nodes=1
    )
    with pytest.raises(PackFormatError, match="line 1: node 'm1' text holds"):
        decode_nodes(line, manifest, "p.pack")


def test_a_raw_append_naming_no_event_leaves_the_listing_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "c.db")
    with engram.open_memory(path) as memory:
        first = memory.agent("alice").observe("The deploy failed at 3am")
    raw = {
        "stream": "agent:alice",
        "kind": "memory.observed",
        "payload": {
            "agent": "alice", "text": "x", "type": "observation", "importance": 3,
            "supersedes": [99999, first],
        },
    }  # fmt: skip
    source = tmp_path / "raw.jsonl"
    source.write_text(json.dumps(raw) + "\n")
    assert main(["--ledger", path, "append", str(source)], out=io.StringIO()) == 0
    capsys.readouterr()
    out = io.StringIO()
    assert main(["--ledger", path, "supersessions", "list", "--status", "applied"], out=out) == 0
    assert "#99999" in out.getvalue()


def test_a_sealed_ledger_whose_identity_was_taken_out_is_refused_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = tmp_path / "x.db"
    with engram.open_memory(str(path)) as memory:
        memory.agent("alice").observe("The deploy failed at 3am")
    stores = sorted((tmp_path / "data" / "engram-keys").iterdir())
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM ledger_meta WHERE key = 'ledger_id'")
    conn.commit()
    conn.close()
    code = main(["--ledger", str(path), "recall", "alice", "deploy", "--no-record"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "identity" in err, err
    assert "changed outside engram" in err, err
    with Ledger.open(str(path), readonly=True) as ledger:
        assert ledger.identity() == ("", False)  # no new identity was written
    assert sorted((tmp_path / "data" / "engram-keys").iterdir()) == stores


@pytest.mark.parametrize(
    ("key", "value", "error", "said"),
    [
        ("hash_algorithm", "sha256-chain-v0", DamagedLedgerError, "reads 'sha256-chain-v0'"),
        ("hash_algorithm", None, DamagedLedgerError, "is missing"),
        ("format_version", "2", UnsupportedFormatError, "holds ledger format 2"),
    ],
)
def test_ledger_metadata_changed_outside_engram_is_refused_in_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    key: str,
    value: str | None,
    error: type[Exception],
    said: str,
) -> None:
    path = tmp_path / "x.db"
    with Ledger.open(str(path)) as ledger:
        ledger.identity(create=True)
    conn = sqlite3.connect(path)
    if value is None:
        conn.execute("DELETE FROM ledger_meta WHERE key = ?", (key,))
    else:
        conn.execute("UPDATE ledger_meta SET value = ? WHERE key = ?", (value, key))
    conn.commit()
    conn.close()
    with pytest.raises(error, match=said):
        Ledger.open(str(path))
    code = main(["--ledger", str(path), "verify"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 1, err
    assert said in err, err
    assert "Usage:" not in err, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@pytest.mark.postgres
def test_a_postgresql_ledger_s_hash_algorithm_changed_is_refused(
    pg_dsn: str, pg_schema: str
) -> None:
    import psycopg
    from psycopg import sql

    with Ledger.open(pg_dsn, pg_schema=pg_schema) as ledger:
        ledger.identity(create=True)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("UPDATE {}.ledger_meta SET value = 'x' WHERE key = 'hash_algorithm'").format(
                sql.Identifier(pg_schema)
            )
        )
    with pytest.raises(DamagedLedgerError, match="hash algorithm"):
        Ledger.open(pg_dsn, pg_schema=pg_schema)


@pytest.mark.parametrize(
    ("a", "b", "copies"),
    [
        ("Locker 7 is on floor 7", "Locker 57 is on floor 7", False),
        ("Van 3 carries crate 3 today", "Van 33 carries crate 3 today", False),
        (
            "Emergency slots are held at 9am and 2pm daily.",
            "Emergency slots held daily at 09:00 and 14:00.",
            True,
        ),
        (
            "Emergency slots are held at 9am and 2pm daily.",
            "emergency slots are held at 9 am and 2 pm every day",
            True,
        ),
        (
            "Sheep graze between the rows from November to March.",
            "sheep graze between the rows from Nov to March",
            True,
        ),
        # A span of times written with a dash is "from ... to ..." (ADR 0162).
        (
            "Parents evening: 12 Feb, 15:30-18:30",
            "Parents' evening is on 12 February from 3:30pm to 6:30pm.",
            True,
        ),
    ],
)
def test_copies_hold_the_same_numbers(a: str, b: str, copies: bool) -> None:
    assert folds(a, b) is copies


def test_an_export_without_a_selection_names_the_argument_that_selects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mcp")
    from engram.mcp.tools import MemoryTools, ToolInputError

    packs = tmp_path / "packs"
    packs.mkdir()
    monkeypatch.setenv("ENGRAM_PACK_KEY", "ab" * 32)
    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        tools = MemoryTools(memory, ["alice"], pack_dir=str(packs))
        with pytest.raises(ToolInputError, match="from_agent"):
            tools.export_pack("out.pack", "p", "1", agent="alice")
    assert list(packs.iterdir()) == []


def test_a_note_is_held_to_one_length_on_every_surface(tmp_path: Path) -> None:
    from engram.agents.supersession import MAX_NOTE

    with engram.open_memory(str(tmp_path / "m.db")) as memory:
        ana = memory.agent("ana")
        old = ana.observe("The gate code is 1")
        applied = ana.observe("The gate code is 2", supersedes=[old])
        head = memory.ledger.head()
        with pytest.raises(QueryError, match=f"at most {MAX_NOTE:,}"):
            ana.revert_supersession(applied, reviewer="lead", note="x" * (MAX_NOTE + 1))
        assert memory.ledger.head() == head
        ana.revert_supersession(applied, reviewer="lead", note="x" * MAX_NOTE)


def test_a_bad_value_in_the_config_file_names_the_file(tmp_path: Path) -> None:
    from engram.config import resolve_settings
    from engram.ledger import ConfigError

    config = tmp_path / "engram.toml"
    config.write_text("decay_rate = 7\n")
    with pytest.raises(ConfigError, match=f"config file {config}: decay_rate must be"):
        resolve_settings(str(tmp_path / "l.db"), config=str(config))
    with pytest.raises(ConfigError, match=r"^decay_rate must be"):  # given as an option
        resolve_settings(str(tmp_path / "l.db"), config=os.devnull, decay_rate=7)


def test_a_session_note_for_another_agent_is_not_the_caller_s_task(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from engram.mcp.tools import MemoryTools

    with engram.open_memory(str(tmp_path / "m.db")) as memory:
        memo = memory.memo("s1")
        memo.post("alice", "zebra vault note for alice only 4711", to="alice")
        memo.post("alice", "the vault review is on Friday", to="*")
        tools = MemoryTools(memory, ["alice", "bob"])
        seen = json.dumps(
            tools.recall_context("zebra vault code", scope="session", session="s1", agent="bob")
        )
        assert "4711" not in seen
        assert "vault review is on Friday" in seen
        mine = tools.recall_context("zebra vault", scope="session", session="s1", agent="alice")
        assert "4711" in json.dumps(mine)


def test_keys_no_store_could_hold_are_refused_as_the_api_s_own_errors(tmp_path: Path) -> None:
    # ADR 0160: a lone surrogate, a NUL, a 70,000-character id reached the store's driver
    # and came back as UnicodeEncodeError, ValueError or sqlite3.OperationalError.
    from engram.agents.context import build_context
    from engram.agents.errors import SuggestionInputError
    from engram.agents.lessons import Lessons
    from engram.agents.packs import PackError, import_pack

    with engram.open_memory(str(tmp_path / "m.db")) as memory:
        head = memory.ledger.head()
        book = memory.concepts("ana")
        for call in (
            lambda: book.get("\ud800"),
            lambda: book.tree("\ud800"),
            lambda: book.neighbours("x" * 600),
            lambda: book.upsert("\ud800", "skill", "x"),
            lambda: memory.memo("\ud800"),
            lambda: memory.memo("s1").plan("\ud800"),
            lambda: memory.memo("s1").update("ana", "\ud800", "DONE"),
        ):
            with pytest.raises(QueryError):
                call()
        lessons = Lessons(memory.ledger, memory.engine)
        for bad in ("\ud800", "a" * 70_000):
            with pytest.raises(SuggestionInputError):
                lessons.suggestion(bad)
        for path in ("\x00", "\ud800"):
            with pytest.raises(PackError):
                import_pack(memory.agent("ana"), path, b"k" * 32)
        with pytest.raises(QueryError, match="counter must be a TokenCounter"):
            build_context(memory.agent("ana"), "deploys", counter="x")  # type: ignore[arg-type]
        assert memory.ledger.head() == head
        # links=None is no links.
        book.upsert("skill.deploy", "skill", "Deploying", links=None)  # type: ignore[arg-type]
