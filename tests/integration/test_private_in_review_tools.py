"""The review tools read another agent's private memories as [private], as engram log does:
``engram hygiene``, ``engram supersessions list`` and the hub's review page used to print
them to whoever ran them; ``--as AGENT`` shows that agent's own."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.hub import views

SECRET = "ZQXPRIV my pin is 9911"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    out = io.StringIO()
    code = main(list(argv), out=out)
    err = capsys.readouterr().err
    assert code == 0, err
    return out.getvalue() + err


def test_review_tools_hide_another_agents_private_memories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    path = str(tmp_path / "l.db")
    with engram.open_memory(path, config=os.devnull) as memory:
        alice = memory.agent("alice")
        first = alice.observe(SECRET, visibility="private")
        alice.observe(SECRET, visibility="private")  # a copy: hygiene lists the group
        alice.observe("ZQXPRIV my pin is now 2222", visibility="private", supersedes=[first])
        memory.engine.catch_up()
        page = repr(views.supersessions(memory))
        assert "ZQXPRIV" not in page
        assert "[private]" in page
    hidden = [
        run(capsys, "--ledger", path, "hygiene", "--format", "json"),
        run(capsys, "--ledger", path, "supersessions", "list", "--status", "applied"),
        run(capsys, "--ledger", path, "hygiene", "--as", "bob"),
    ]
    for shown in hidden:
        assert "ZQXPRIV" not in shown
        assert "[private]" in shown
    mine = run(capsys, "--ledger", path, "hygiene", "--as", "alice", "--format", "json")
    assert json.loads(mine.split("\n]")[0] + "\n]")[0]["text"] == SECRET
    mine = run(capsys, "--ledger", path, "supersessions", "list", "--status", "applied",
               "--as", "alice")  # fmt: skip
    assert "ZQXPRIV my pin is now 2222" in mine
