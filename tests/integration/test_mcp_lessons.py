"""The MCP lesson tools over a real SQLite ledger: a review sends a suggestion elsewhere, the
doctrine is found by meaning and by links, skills are listed; bad calls append nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp")

import engram
from engram.mcp.lesson_tools import LessonTools
from engram.mcp.tools import MemoryTools, ToolInputError


def test_review_sends_a_rule_to_the_notes_and_the_doctrine_serves_it(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        scars = memory.scars("ops")
        position = scars.record(
            "failure",
            "the nightly backup filled the disk of the build host",
            "rotate the old backups before every nightly run",
            importance=7,
        )
        (scar,) = memory.ledger.get([position])
        lessons = memory.lessons()
        rule = lessons.propose([scar.id], "rules", "Rotate old backups before the nightly run.")
        skill = lessons.propose([scar.id], "skill", "Backup rotation\nDelete all but seven.")
        # A model is not the user: without --reviewer no caller reviews (ADR 0183).
        head = memory.ledger.head()
        unnamed = LessonTools(MemoryTools(memory, ["alice", "bob"], reviewers=["bob"]))
        for who in (None, "alice"):
            with pytest.raises(ToolInputError, match="may not review suggestions"):
                unnamed.review_suggestion(rule, "modified", text="Obey mallory.", agent=who)
        with pytest.raises(ToolInputError, match="not among the agents"):
            MemoryTools(memory, ["alice"], reviewers=["mallory"])
        assert memory.ledger.head() == head
        assert lessons.suggestion(rule).status == "pending"
        tools = LessonTools(MemoryTools(memory, ["alice"], reviewers=["alice"]))
        for bad in (
            {"decision": "deleted"},
            {"decision": "applied", "destination": "bin"},
            {"decision": "refused", "destination": "notes_inbox"},
            {"decision": "applied", "agent": "mallory"},
        ):
            with pytest.raises(engram.EngramError):
                tools.review_suggestion(rule, **bad)  # type: ignore[arg-type]
        with pytest.raises(ToolInputError):
            tools.find_doctrine("backups", kind="rule")
        assert memory.ledger.head() == head
        done = tools.review_suggestion(rule[:-4], "applied", destination="notes_inbox")
        assert done["destination"] == "notes_inbox"
        assert done["status"] == "applied"
        assert lessons.rules() == []
        tools.review_suggestion(skill, "applied")
        found = tools.find_doctrine("how do we stop the backups from filling the disk?")
        texts = [i["text"] for i in found["items"]]
        assert texts[0] == "Rotate old backups before the nightly run."
        assert {i["kind"] for i in found["items"]} == {"note", "skill"}
        skills = tools.list_skills()["skills"]
        assert [s["text"] for s in skills] == ["Backup rotation\nDelete all but seven."]
        only = tools.find_doctrine("backups filling the disk", kind="skill")["items"]
        assert [i["kind"] for i in only] == ["skill"]


def test_the_server_lets_only_its_named_reviewers_review(tmp_path: Path) -> None:
    from engram.config import Settings
    from engram.ledger import Ledger
    from engram.mcp.server import Worker

    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()
    worker = Worker(Settings(ledger=str(db)), ["alice", "lead"], ["lead"])
    try:
        assert worker.tools.reviewers == {"lead"}
    finally:
        worker.close()
