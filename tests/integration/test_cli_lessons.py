"""``engram learn``, ``engram suggestions ...`` and ``engram rules`` end to end on real files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from completion_stub import Reply, stub_server

from engram.cli import main

SCAR = {
    "stream": "scar:inner",
    "kind": "scar.recorded",
    "payload": {
        "agent": "inner",
        "kind": "failure",
        "what": "the deploy to 10.0.0.7 failed; ops@example.com was paged",
        "lesson": "Always run the migrations before the deploy. Prod broke.",
        "importance": 8,
    },
}
VICTORY = {
    "stream": "scar:inner",
    "kind": "scar.recorded",
    "payload": {
        "agent": "inner",
        "kind": "victory",
        "what": "bisect found it",
        "lesson": "Bisecting the lockfile found the bad pin in minutes",
        "importance": 4,
    },
}


# The routing file is shared: it keeps an [embedding] table (the embedders warn without one).
EMBEDDING = '[embedding.default]\nprovider = "hash"\n'


def run(
    capsys: pytest.CaptureFixture[str],
    *argv: str,
    stdin: str | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


@pytest.fixture
def setup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], Path]:
    config = tmp_path / "engram.toml"
    skills = tmp_path / "skills"
    config.write_text(
        f'routing = "{tmp_path / "routing.toml"}"\n[destinations]\nskill = "{skills}"\n'
    )
    (tmp_path / "routing.toml").write_text(EMBEDDING)
    base = ["--ledger", str(tmp_path / "l.db"), "--config", str(config)]
    events = tmp_path / "scars.jsonl"
    events.write_text(json.dumps(SCAR) + "\n" + json.dumps(VICTORY) + "\n")
    assert run(capsys, *base, "append", str(events))[0] == 0
    return base, tmp_path


def test_learn_review_and_rules(
    setup: tuple[list[str], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    base, tmp = setup
    code, out, err = run(capsys, *base, "learn", "--dry-run", "--format", "json")
    assert code == 0
    dry = json.loads(out)
    assert [(d["status"], d["destination"]) for d in dry] == [
        ("would draft", "rules"),
        ("would draft", "skill"),
    ]
    assert "would draft 2" in err
    assert "2 personal-data items scrubbed" in err
    # The tests run on hash vectors: the user is told paraphrases are not merged.
    assert "repeats of a mistake are merged by their lessons' shared words only" in err
    code, out, err = run(capsys, *base, "learn", "--format", "json")
    drafted = json.loads(out)
    assert [d["text"] for d in drafted] == [
        "Always run the migrations before the deploy. Prod broke.",
        "Bisecting the lockfile found the bad pin in minutes. (worked when: bisect found it)",
    ]
    rule_id, skill_id = drafted[0]["suggestion"], drafted[1]["suggestion"]
    code, out, _ = run(capsys, *base, "suggestions", "list", "--status", "pending")
    assert code == 0
    assert rule_id in out
    # modify from stdin, always-on (ADR 0133: modify had no --always, and a modified rule
    # could not be marked so after), then a second review is refused with exit 1
    code, out, _ = run(
        capsys,
        *base,
        "suggestions",
        "modify",
        rule_id[:8],
        "--reviewer",
        "ana",
        "--always",
        "--text-file",
        "-",
        stdin="Run the migrations before every deploy.\n",
        monkeypatch=monkeypatch,
    )
    assert code == 0, out
    assert out.startswith(f"modified {rule_id}")
    code, out, err = run(capsys, *base, "suggestions", "apply", rule_id, "--reviewer", "bo")
    assert code == 1
    assert "reviewed already (modified); nothing appended" in err
    code, out, _ = run(capsys, *base, "rules", "--format", "json")
    assert [(r["text"], r["always"]) for r in json.loads(out)] == [
        ("Run the migrations before every deploy.", True)
    ]
    code, out, _ = run(capsys, *base, "rules", "--query", "deploy migrations", "--format", "jsonl")
    assert json.loads(out)["suggestion"] == rule_id
    # the skill is written to its folder, the write recorded
    code, out, _ = run(capsys, *base, "suggestions", "apply", skill_id, "--reviewer", "ana")
    assert code == 0
    assert f"written to {tmp / 'skills' / (skill_id + '.md')}" in out
    code, out, _ = run(capsys, *base, "suggestions", "show", skill_id, "--format", "json")
    (shown,) = json.loads(out)
    assert shown["status"] == "applied"
    assert shown["written_position"] is not None
    # a reviewer reads each telling of the mistake: who told it, what happened, the lesson
    assert shown["tellings"] == 1
    assert [(t["agent"], t["what"]) for t in shown["told"]] == [("inner", "bisect found it")]
    code, out, _ = run(capsys, *base, "suggestions", "show", skill_id)
    assert code == 0
    assert "bisect found it" in out
    assert "Bisecting the lockfile" in out
    code, out, _ = run(capsys, *base, "suggestions", "list")
    assert "tellings" in out.splitlines()[0]


def test_usage_errors(setup: tuple[list[str], Path], capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = setup
    run(capsys, *base, "learn")
    code, _, err = run(capsys, *base, "suggestions", "modify", "0", "--reviewer", "ana")
    assert code == 2
    assert "exactly one of --text and --text-file" in err
    code, _, err = run(capsys, *base, "suggestions", "apply", "zzz", "--reviewer", "ana")
    assert code == 1
    assert "no suggestion has it" in err
    code, _, err = run(capsys, *base, "suggestions", "refuse", "zzz")
    assert code == 2
    assert "--reviewer" in err


def test_a_model_that_is_down_defers_and_exits_1(
    setup: tuple[list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, tmp = setup
    with stub_server() as server:
        (tmp / "routing.toml").write_text(
            EMBEDDING + f'[complete.learn]\nprovider = "http"\nbase_url = "{server.base_url}"\n'
            'model = "stub"\ntimeout = 5\nbackoff = 0\n'
        )
        server.script += [Reply(500, {})] * 3
        code, out, err = run(capsys, *base, "learn", "--format", "json")
        assert code == 1
        assert "no suggestion drafted: model unavailable" in err
        assert {d["status"] for d in json.loads(out)} == {"deferred"}
        code, out, err = run(capsys, *base, "learn", "--format", "json")  # back up
        assert code == 0
        assert [d["destination"] for d in json.loads(out)] == ["rules", "rules"]
        for seen in server.requests:
            assert "ops@example.com" not in seen.raw.decode()
            assert "10.0.0.7" not in seen.raw.decode()


def test_an_invalid_routing_file_warns_and_drafts_offline(
    setup: tuple[list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, tmp = setup
    (tmp / "routing.toml").write_text(EMBEDDING + '[complete.learn]\nprovider = "gpt"\n')
    code, out, err = run(capsys, *base, "learn", "--format", "json")
    assert code == 0
    assert "warning: completion routing file" in err
    assert {d["status"] for d in json.loads(out)} == {"drafted"}


def test_a_text_file_that_holds_no_text_is_refused_and_nothing_is_appended(
    setup: tuple[list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, tmp = setup
    run(capsys, *base, "learn")
    code, out, _ = run(capsys, *base, "suggestions", "list", "--format", "json")
    pending = json.loads(out)[0]["id"]
    latin1 = tmp / "latin1.md"
    latin1.write_bytes(b"Run the migrations before the caf\xe9 opens.\n")
    cases = {
        # /dev/zero read whole filled the memory until the process died
        "/dev/zero": "--text-file holds more than 1,048,576 characters: no payload holds it",
        str(latin1): "--text-file is not valid UTF-8",
    }
    for path, message in cases.items():
        code, out, err = run(
            capsys,
            *base,
            "suggestions",
            "modify",
            pending,
            "--reviewer",
            "ana",
            "--text-file",
            path,
        )
        assert (code, out) == (1, ""), err
        assert err.startswith(f"engram suggestions modify: error: {message}")
        assert len(err.splitlines()) == 1
    code, out, _ = run(capsys, *base, "suggestions", "show", pending, "--format", "json")
    assert json.loads(out)[0]["status"] == "pending"


def test_rules_by_query_print_the_score_they_are_ordered_by(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `engram rules --query` printed each rule's best match beside an order made by another
    # score: 0.298, 0.484, 0.495 read top to bottom.
    import engram

    ledger = str(tmp_path / "l.db")
    with engram.open_memory(ledger) as memory:
        lessons = memory.lessons()
        for what, lesson in (
            ("a night deploy locked the users table", "run migrations with a lock timeout"),
            ("the invoice run double charged a client", "make invoice runs idempotent"),
            ("a migration dropped a column still read", "deploy readers before dropping columns"),
        ):
            memory.scars("ana").record("failure", what, lesson)
        for drafted in lessons.learn().drafted:
            lessons.apply(drafted.suggestion, "reviewer")
    code, out, _ = run(
        capsys, "--ledger", ledger, "rules", "--query", "deploy a migration", "--format", "json"
    )
    assert code == 0
    scores = [r["score"] for r in json.loads(out)]
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
