"""``engram reflect`` and ``engram reflections``, end to end on real SQLite files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engram.cli import main
from engram.ledger import Ledger

STORY = (
    "The parser failed on the nightly build",
    "Bob fixed the parser tokenizer after the nightly build",
    "The parser tokenizer failed again on unicode input",
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A ledger where alice observed a short story (positions 8..10, after the core network)."""
    path = str(tmp_path / "cli.db")
    assert run(capsys, "--ledger", path, "init")[0] == 0
    for text in STORY:
        assert run(capsys, "--ledger", path, "observe", "alice", text)[0] == 0
    return path


def test_reflect_appends_insights_once_and_a_dry_run_appends_nothing(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys, "--ledger", db, "reflect", "alice", "--dry-run", "--format", "json"
    )
    assert code == 0, err
    planned = json.loads(out)
    assert planned
    assert all(row["position"] is None for row in planned)
    assert "dry-run:" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 10
    code, out, err = run(capsys, "--ledger", db, "reflect", "alice", "--format", "json")
    assert code == 0, err
    done = json.loads(out)
    assert [(r["id"], r["text"]) for r in done] == [(r["id"], r["text"]) for r in planned]
    assert [r["position"] for r in done] == list(range(11, 11 + len(done)))
    for row in done:
        assert set(row["evidence"]) <= {8, 9, 10}
        assert row["depth"] == 1
    code, out, err = run(capsys, "--ledger", db, "reflect", "alice", "--format", "json")
    assert (code, json.loads(out)) == (0, [])
    assert "nothing-new: no memory visible to 'alice' since position" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 10 + len(done)


def test_reflect_if_due_follows_the_config_file(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "engram.toml"
    config.write_text("reflect_every = 4\nreflect_importance = 0\n")
    code, out, err = run(
        capsys, "--ledger", db, "--config", str(config), "reflect", "alice", "--if-due"
    )
    assert code == 0, err
    assert out.splitlines()[0].split() == ["position", "depth", "question", "text", "evidence"]
    assert "not-due: 3 visible memories" in err
    assert "due at 4 or importance 0 (off)" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == 10  # nothing appended
    config.write_text("reflect_every = 3\n")
    code, _, err = run(
        capsys, "--ledger", db, "--config", str(config), "reflect", "alice", "--if-due"
    )
    assert code == 0, err
    assert "reflected:" in err
    config.write_text("reflect_every = -1\n")
    code, _, err = run(capsys, "--ledger", db, "--config", str(config), "reflect", "alice")
    assert code == 2
    assert "reflect_every must be an int >= 0" in err


def test_reflections_lists_and_shows_the_evidence_resolved(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "--ledger", db, "reflect", "alice")[0] == 0
    code, out, err = run(capsys, "--ledger", db, "reflections", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert listed
    assert [r["position"] for r in listed] == sorted((r["position"] for r in listed), reverse=True)
    assert {r["agent"] for r in listed} == {"alice"}
    code, out, _ = run(capsys, "--ledger", db, "reflections", "--agent", "bob", "--format", "json")
    assert (code, json.loads(out)) == (0, [])
    newest = listed[0]
    for key in (str(newest["position"]), newest["id"]):
        code, out, err = run(
            capsys, "--ledger", db, "reflections", "show", key, "--format", "jsonl"
        )
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert rows[0]["role"] == "reflection"
        assert rows[0]["text"] == newest["text"]
        assert len(rows) >= 3  # the reflection and at least two memories it rests on
        for row in rows[1:]:
            assert row["role"] == "evidence"
            assert row["kind"] == "memory.observed"
            assert row["text"] in STORY
            assert row["depth"] == 0
    code, _, err = run(capsys, "--ledger", db, "reflections", "show", "999")
    assert code == 1
    assert "no reflection with id or position '999'" in err


def test_readers_never_create_a_ledger(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "none.db")
    for argv in (["reflections"], ["reflections", "show", "1"], ["reflect", "alice"]):
        code, _, err = run(capsys, "--ledger", missing, *argv)
        assert code == 1
        assert "no ledger at" in err
    assert not Path(missing).exists()
    code, _, err = run(capsys, "--ledger", missing, "reflections", "--agent", "")
    assert code == 2
    assert "--agent" in err


def test_provenance_is_an_audit_question_in_sql(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "--ledger", db, "reflect", "alice")[0] == 0
    query = (
        "SELECT r.position AS reflection, o.position AS memory, o.text"
        " FROM projections.reflections r"
        " JOIN projections.reflection_evidence e ON e.reflection = r.position"
        " JOIN memory_observed o ON o.event_id = e.evidence ORDER BY 1, 2"
    )
    # alice's texts are sealed (ADR 0086): she reads her own with --as
    code, out, err = run(capsys, "--ledger", db, "sql", query, "--as", "alice", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows
    assert {r["memory"] for r in rows} <= {8, 9, 10}
    assert {r["text"] for r in rows} <= set(STORY)


def test_reflect_refuses_an_agent_that_never_wrote(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Ledger.open(db) as ledger:
        before = ledger.head()
    code, _, err = run(capsys, "--ledger", db, "reflect", "nobody")
    assert code == 2
    assert "no agent 'nobody' has written to this ledger" in err
    with Ledger.open(db) as ledger:
        assert ledger.head() == before


def test_private_reflections_and_their_evidence_read_private_unless_shown_as_their_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "private.db")
    for text in STORY:
        run(capsys, "--ledger", path, "observe", "alice", text, "--visibility", "private")
    assert run(capsys, "--ledger", path, "reflect", "alice")[0] == 0
    code, out, _ = run(capsys, "--ledger", path, "reflections", "--format", "json")
    listed = json.loads(out)
    assert listed
    assert {(r["text"], r["question"]) for r in listed} == {("[private]", "[private]")}
    position = str(listed[0]["position"])
    code, out, err = run(
        capsys, "--ledger", path, "reflections", "show", position, "--format", "json"
    )
    assert code == 0, err
    assert {r["text"] for r in json.loads(out)} == {"[private]"}
    assert "question: [private]" in err
    code, out, _ = run(capsys, "--ledger", path, "reflections", "--as", "alice", "--format", "json")
    assert all(r["text"] != "[private]" for r in json.loads(out))
    code, out, _ = run(
        capsys,
        "--ledger",
        path,
        "reflections",
        "show",
        position,
        "--as",
        "alice",
        "--format",
        "json",
    )
    assert {r["text"] for r in json.loads(out)[1:]} <= set(STORY)
