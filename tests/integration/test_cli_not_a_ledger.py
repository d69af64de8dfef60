"""Every command that needs a ledger, pointed at something that is not one (issue 26 item 1).

A text file, a directory, an empty file and a truncated ledger: each command exits 2 with one
line on stderr, leaves the file as it was and creates nothing beside it. A mistyped path is
refused by the commands that used to create a ledger there (``mcp``, ``pack import``).
"""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger

PACK = Path(__file__).parents[2] / "packs" / "engram-adrs.pack"
KEY = Path(__file__).parents[2] / "packs" / "example.key"

#: Every command that reads (or writes into) an existing ledger, with arguments it accepts.
COMMANDS: list[list[str]] = [
    ["log"],
    ["verify"],
    ["sql", "select 1"],
    ["status"],
    ["rebuild"],
    ["recall", "alice", "deploy"],
    ["context", "deploy", "--agent", "alice"],
    ["reflect", "alice"],
    ["reflections", "show", "1"],
    ["rules"],
    ["hygiene"],
    ["dream"],
    ["learn"],
    ["sleep"],
    ["sweep"],
    ["jobs"],
    ["vitality"],
    ["archive", "1", "--agent", "alice"],
    ["graph", "top"],
    ["graph", "export"],
    ["graph", "propagate", "n1"],
    ["concepts", "tree", "alice", "skill"],
    ["concepts", "show", "alice", "skill.x"],
    ["memo", "read", "s1"],
    ["signals", "list", "alice"],
    ["scars", "list"],
    ["scars", "recall", "alice", "deploy"],
    ["scars", "show", "1"],
    ["scars", "archive", "1", "--agent", "alice"],
    ["suggestions", "list"],
    ["suggestions", "show", "1"],
    ["cold", "export", "--before", "10"],
    ["pack", "export", "o.pack", "--name=p", "--version=1", "--select=x", f"--key-file={KEY}"],
    ["pack", "import", str(PACK), "--as", "alice", "--key-file", str(KEY)],
    ["mcp", "--agent", "alice"],
    ["hub", "--port", "1"],
    ["run"],
]


def _text(folder: Path) -> Path:
    path = folder / "hostname"
    path.write_text("myhost\n")
    return path


def _directory(folder: Path) -> Path:
    path = folder / "ledger.db"
    path.mkdir()
    return path


def _empty(folder: Path) -> Path:
    path = folder / "ledger.db"
    path.touch()
    return path


def _truncated(folder: Path) -> Path:
    whole = folder.parent / f"{folder.name}-whole.db"
    with Ledger.open(str(whole)) as ledger:
        ledger.verify()
    data = whole.read_bytes()
    path = folder / "ledger.db"
    path.write_bytes(data[: len(data) // 3])
    for suffix in ("", "-wal", "-shm"):
        Path(f"{whole}{suffix}").unlink(missing_ok=True)
    return path


def _events_dropped(folder: Path) -> Path:
    path = folder / "ledger.db"
    with Ledger.open(str(path)) as ledger:
        ledger.verify()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE events")
    conn.commit()
    conn.close()  # the last connection: SQLite checkpoints the log into the file
    return path


def _another_programs(folder: Path) -> Path:
    path = folder / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    return path


TARGETS = {"text": _text, "directory": _directory, "empty": _empty, "truncated": _truncated}
#: Databases that are not ledgers: every command refuses them, the writers included (a writer
#: used to start a new chain in them).
DATABASES = {"events dropped": _events_dropped, "another program's": _another_programs}


def _snapshot(folder: Path) -> dict[str, tuple[bytes | None, int]]:
    found = {}
    for path in sorted(folder.rglob("*")):
        body = path.read_bytes() if path.is_file() else None
        found[str(path.relative_to(folder))] = (body, path.stat().st_mtime_ns)
    return found


@pytest.mark.parametrize("target", list(TARGETS))
def test_every_command_refuses_what_is_not_a_ledger_in_one_line_and_creates_nothing(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    ledger = TARGETS[target](folder)
    monkeypatch.chdir(folder)
    monkeypatch.delenv("ENGRAM_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user config file is read
    before = _snapshot(folder)
    failures = []
    for argv in COMMANDS:
        out = io.StringIO()
        code = main(["--ledger", str(ledger), *argv], out=out)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        name = " ".join(argv[:2])
        if code != 2 or len(lines) != 1 or "error:" not in lines[0] or "Traceback" in err:
            failures.append(f"{name}: exit {code}, stderr {err!r}")
        elif "not an engram ledger" not in lines[0]:
            failures.append(f"{name}: unclear message {lines[0]!r}")
        if _snapshot(folder) != before:
            failures.append(f"{name}: changed {sorted(set(_snapshot(folder)) ^ set(before))}")
            shutil.rmtree(folder)
            folder.mkdir()
            ledger = TARGETS[target](folder)
            before = _snapshot(folder)
    assert not failures, "\n".join(failures)
    assert not (tmp_path / ".local").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["mcp", "--agent", "alice"],
        ["pack", "import", str(PACK), "--as", "alice", "--key-file", str(KEY)],
    ],
    ids=["mcp", "pack-import"],
)
def test_a_mistyped_ledger_path_is_refused_not_created(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mistyped = tmp_path / "ledgr.db"
    code = main(["--ledger", str(mistyped), *argv], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 1, err
    assert "no ledger at" in err
    assert "run engram init" in err
    assert os.listdir(tmp_path) == []


def test_a_postgresql_schema_that_is_not_a_ledger_is_refused_and_left_alone(
    pg_dsn: str, pg_schema: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {pg_schema}")
        conn.execute(f"CREATE TABLE {pg_schema}.events (a int)")
    for argv in [["log"], ["verify"], ["sql", "select 1"], ["status"], ["observe", "a", "b"]]:
        code = main(["--ledger", pg_dsn, "--pg-schema", pg_schema, *argv], out=io.StringIO())
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert len(err.strip().splitlines()) == 1, err
        assert "is not an engram ledger" in err
    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (pg_schema,)
        ).fetchall()
        triggers = conn.execute(
            "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
            (pg_schema,),
        ).fetchone()
    assert tables == [("events",)]
    assert triggers == (0,)


def test_a_driver_error_that_escapes_a_layer_is_still_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()

    def refuse(*args: object, **kwargs: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed\nsecond line")

    monkeypatch.setattr(Ledger, "verify", refuse)
    code = main(["--ledger", str(db), "verify"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 1
    assert err == (
        "engram verify: error: the database refused: database disk image is malformed\\n"
        "second line\n"
    )


@pytest.mark.parametrize("target", list(DATABASES))
def test_a_database_that_is_no_ledger_is_refused_by_the_writers_too(
    target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    ledger = DATABASES[target](folder)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    events = folder / "e.jsonl"
    events.write_text(
        '{"stream": "s", "kind": "neuron.created", "payload": {"id": "n1", "kind": "x"}}\n'
    )
    before = _snapshot(folder)
    for argv in (["observe", "alice", "a new fact"], ["append", str(events)], ["init"]):
        code = main(["--ledger", str(ledger), *argv], out=io.StringIO())
        err = capsys.readouterr().err
        assert code == 2, (argv, err)
        assert "not an engram ledger (no events table" in err
        assert "Traceback" not in err
        assert _snapshot(folder) == before, argv


def test_a_ledger_whose_creation_was_killed_is_named_so_and_a_writer_makes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What a creation killed before its transaction committed leaves: the file, in WAL mode,
    # with no table. Readers used to call it "not an engram ledger".
    path = tmp_path / "ledger.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=wal")
    conn.close()
    code = main(["--ledger", str(path), "log"], out=io.StringIO())
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"no ledger at {path} (the database is empty: was its creation interrupted?)" in err
    assert "Traceback" not in err
    out = io.StringIO()
    assert main(["--ledger", str(path), "observe", "bob", "hello"], out=out) == 0
    with Ledger.open(str(path), readonly=True) as ledger:
        assert [e.kind for e in ledger.read()][-1] == "memory.observed"
        ledger.verify()


def test_a_ledger_whose_identity_was_changed_outside_engram_is_refused_as_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The identity names the default key store (ADR 0086): a damaged one read as the user's
    # mistake ("Usage: ... Try --help"), exit 2. It is the ledger's fault, said in one line.
    path = tmp_path / "ledger.db"
    with Ledger.open(str(path)) as ledger:
        ledger.identity(create=True)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE ledger_meta SET value = 'not-an-id!' WHERE key = 'ledger_id'")
    conn.commit()
    conn.close()
    monkeypatch.setenv("HOME", str(tmp_path))
    before = _snapshot(tmp_path)
    for argv in (["status"], ["log"], ["recall", "alice", "deploy"], ["observe", "alice", "x"]):
        code = main(["--ledger", str(path), *argv], out=io.StringIO())
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 1, (argv, err)
        assert len(lines) == 1, err
        assert "ledger_meta" in lines[0]
        assert "changed outside engram" in lines[0]
        assert "Usage:" not in err
    assert _snapshot(tmp_path) == before
