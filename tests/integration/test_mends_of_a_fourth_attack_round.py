"""What a fourth attack round found, mended (ADR 0171): by hand, an agent replaces only its
own memories (one call had buried 300 of other agents'); detection's reason quotes no word
of another agent's memory; the agent whose memory was replaced may revert it; 0, False or
"" are refused as `supersedes`; a lesson applied to a file keeps the file's mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import engram
from engram.agents.errors import MemoryOwnerError
from engram.agents.lessons import Lessons
from engram.projections.errors import QueryError


def test_one_agent_cannot_bury_another_s_memories_by_hand(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        alice, bob = memory.agent("alice"), memory.agent("bob")
        theirs = [alice.observe(f"The billing service runs on port {8000 + i}.") for i in range(3)]
        lol = bob.observe("lol")
        head = memory.ledger.head()
        with pytest.raises(MemoryOwnerError, match="supersedes only its own"):
            bob.supersede(lol, theirs)
        with pytest.raises(MemoryOwnerError, match="supersedes only its own"):
            bob.observe("lol again", supersedes=theirs)
        assert memory.ledger.head() == head


@pytest.mark.parametrize("bad", [0, False, "", None])
def test_a_supersedes_that_is_no_list_is_refused(tmp_path: Path, bad: object) -> None:
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        ana = memory.agent("ana")
        ana.observe("Alice lives in Paris.")
        head = memory.ledger.head()
        with pytest.raises(QueryError, match="non-empty sequence of ints"):
            ana.observe("Alice moved to Berlin.", supersedes=bad)  # type: ignore[arg-type]
        assert memory.ledger.head() == head
        assert ana.observe("Alice likes tea.", supersedes=[]) == head + 1


def test_a_lesson_applied_to_a_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "AGENTS.md"
    target.write_text("# Team rules\n")
    os.chmod(target, 0o644)
    with engram.open_memory(str(tmp_path / "m.db"), config="/dev/null") as memory:
        scar = memory.scars("ops").record("failure", "the deploy broke", "Read the runbook.")
        (event,) = memory.ledger.get([scar])
        lessons = Lessons(
            memory.ledger, memory.engine, places={"instructions_file": str(target)},
            home=str(tmp_path / "home"),
        )  # fmt: skip
        suggestion = lessons.propose([event.id], "instructions_file", "Read the runbook first.")
        lessons.apply(suggestion, "ana")
    assert target.read_text().endswith("Read the runbook first.\n")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
