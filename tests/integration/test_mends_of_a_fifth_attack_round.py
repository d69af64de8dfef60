"""What a fifth attack round found, mended (ADR 0175): a projection store or a ledger folder
engram creates is its user's alone; a raw append refuses the names `observe` refuses (a
control character in a memory's agent, one that reorders the text in an actor); a resumed
step's rate counts only what it did; `pack show` says its manifest is not verified."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

import engram
from engram.cli import main
from engram.progress import ProgressBar
from engram.projections.errors import QueryError


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_the_folders_engram_creates_are_their_user_s_alone(tmp_path: Path) -> None:
    path = tmp_path / "new" / "ledger.db"
    with engram.open_memory(str(path), config="/dev/null") as memory:
        memory.agent("ana").observe("The door code is 4411.")
    for folder in (path.parent, Path(f"{path}.projections")):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    # A folder that exists keeps its mode: the user chose it.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    with engram.open_memory(str(shared / "ledger.db"), config="/dev/null") as memory:
        memory.agent("ana").observe("The door code is 4411.")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755


def _observed(agent: str, actor: str = "cli") -> str:
    return json.dumps({
        "stream": "agent:x", "kind": "memory.observed", "actor": actor,
        "payload": {"agent": agent, "text": "t", "type": "observation", "importance": 2,
                    "visibility": "public"},
    }) + "\n"  # fmt: skip


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (_observed("a\nb"), "payload agent holds a control character"),
        (_observed("ab", actor="\u202eevil"), "field `actor`"),
    ],
)
def test_a_raw_append_refuses_the_names_observe_refuses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str, said: str
) -> None:
    db = str(tmp_path / "ap.db")
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_text(line)
    good.write_text(_observed("ab"))
    code, _, err = run(capsys, "--ledger", db, "append", str(bad))
    assert code != 0
    assert said in err
    assert "line 1" in err
    code, out, _ = run(capsys, "--ledger", db, "append", str(good))
    assert code == 0, out
    assert "position 1" in out  # nothing of the refused line was written


def test_a_name_that_reorders_its_text_is_refused(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        with pytest.raises(QueryError, match="control character"):
            memory.agent("\u202eevil").observe("The door code is 4411.")
        assert memory.ledger.head() == 0


def test_a_resumed_step_s_rate_counts_only_what_it_did() -> None:
    bar = ProgressBar(stream=io.StringIO(), delay=0.0)
    bar.start("rebuild", 1_000_000)
    bar("rebuild", 900_000, 1_000_000)  # where the interrupted rebuild stopped
    line = bar._line("rebuild", 900_000, 1_000_000, 0.001)
    assert "900,000,000 events/s" not in line
    assert " 0 events/s" in line
    later = bar._line("rebuild", 950_000, 1_000_000, 2.0)
    assert "25,000 events/s" in later
    bar.close()
    fresh = ProgressBar(stream=io.StringIO(), delay=0.0)
    fresh.start("rebuild", 100)
    fresh("rebuild", 0, 100)
    assert "50 events/s" in fresh._line("rebuild", 50, 100, 1.0)
    fresh.close()
