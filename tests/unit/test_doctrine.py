"""The doctrine (tier 2) over a real SQLite ledger: entries from applied notes and skills,
their links, and serving by meaning and by links (ADR 0079)."""

from __future__ import annotations

import pytest
from word_vectors import WordVectors

from engram.agents import doctrine as serving
from engram.ledger import NewEvent
from engram.ledger.catalog import SuggestionJoined
from engram.projections import doctrine
from engram.projections.errors import QueryError
from engram.runtime import Memory


def _scar(memory: Memory, what: str, lesson: str) -> str:
    position = memory.scars("ops").record("failure", what, lesson, importance=6)
    return memory.ledger.get([position])[0].id


def test_title_and_names() -> None:
    assert doctrine.title("\n  Backup   Rotation \nbody") == "backup rotation"
    eid = "01a218cf-9ed2-737f-a5ab-eb70333f72b0"
    assert doctrine.named(f"see [[Disks ]] and {eid}, [[disks]], [[]]") == [
        f"event:{eid}",
        "name:disks",
    ]


def test_only_applied_notes_and_skills_are_entries_with_their_links(memory: Memory) -> None:
    lessons = memory.lessons()
    a = _scar(memory, "the nightly backup filled the disk", "rotate backups first")
    b = _scar(memory, "the cache was cold", "warm the cache")
    note = lessons.propose([a], "notes_inbox", "Backups\nKeep seven days. See [[Disks]].")
    disks = lessons.propose([b], "rules", "Disks")
    refused = lessons.propose([b], "notes_inbox", "Refused note")
    rule = lessons.propose([b], "rules", "Warm the cache before a deploy.")
    lessons.apply(note, "ana")
    lessons.apply(disks, "ana", destination="notes_inbox")  # sent to the notes by its reviewer
    lessons.refuse(refused, "ana")
    lessons.apply(rule, "ana")
    late = _scar(memory, "the backup disk filled again", "rotate backups first")
    memory.ledger.append(
        NewEvent.of(SuggestionJoined(suggestion=note, scars=[late]), stream=f"suggestion:{note}")
    )
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        entries = doctrine.entries(conn)
        assert [(e.kind, e.suggestion) for e in entries] == [("note", note), ("note", disks)]
        first, second = entries
        assert first.scars == [a, late]
        assert doctrine.links(conn, [first.position])[first.position] == [
            (f"scar:{a}", "drawn_from"),
            (f"scar:{late}", "drawn_from"),
            (f"entry:{second.position}", "names"),
            ("name:disks", "names"),
        ]
        assert doctrine.linking(conn, [f"scar:{b}", "scar:nothing"]) == {
            f"scar:{b}": [second.position]
        }
        assert doctrine.entries(conn, "skill") == []
        with pytest.raises(QueryError, match="kind must be one of"):
            doctrine.entries(conn, "rule")
        hits = doctrine.search(conn, "backups seven days", 5)
        assert [h.position for h in hits] == [first.position]
        assert hits[0].match == 1.0


def test_served_by_meaning_and_by_links(memory: Memory) -> None:
    lessons = memory.lessons()
    a = _scar(memory, "the nightly backup filled the disk", "rotate the backups before the run")
    b = _scar(memory, "the certificate expired on the load balancer", "renew certificates early")
    backups = lessons.propose([a], "notes_inbox", "Backup rotation\nDelete all but seven days.")
    sibling = lessons.propose([a], "notes_inbox", "Storage budget\nThe build host has 200 GB.")
    certs = lessons.propose([b], "skill", "Certificate renewal\nRenew thirty days ahead.")
    for s in (backups, sibling, certs):
        lessons.apply(s, "ana")
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        found = serving.served(conn, "how many days of backups do we keep?", None, memory.embedder)
        by_text = {s.entry.text.splitlines()[0]: s for s in found}
        assert by_text["Backup rotation"].via == "meaning"
        # Drawn from the same scar as a note that matched: reached by the link, two hops.
        assert by_text["Storage budget"].via == "link"
        assert by_text["Storage budget"].score < by_text["Backup rotation"].score
        assert "Certificate renewal" not in by_text
        # A scar the frame holds pulls in what was drawn from it, whatever the words.
        held = serving.served(conn, "zzz unrelated words", {f"scar:{b}": 0.9}, memory.embedder)
        assert [(s.entry.kind, s.via) for s in held] == [("skill", "link")]
        assert held[0].score == pytest.approx(0.9 * serving.HOP_DECAY)
        weak = serving.served(conn, "zzz unrelated words", {f"scar:{b}": 0.3}, memory.embedder)
        assert weak == []  # below the floor
        only_notes = serving.served(conn, "x", {f"scar:{b}": 0.9}, kind="note")
        assert only_notes == []


_WORDS = ("backup", "disk", "rotate", "nightly", "certificate", "renew", "expired")


def test_an_entry_is_served_by_meaning_only_where_it_stands_clear_of_the_rules(
    memory: Memory,
) -> None:
    # One skill in the store: judged by the margin alone, it is served wherever one piece of
    # its evidence meets the task. Beside the rules in force (ADR 0142), a task a rule meets
    # far better than the skill is not given the skill; a task of its own still is.
    lessons = memory.lessons()
    backups = _scar(memory, "the nightly backup filled the disk", "rotate the backup disk")
    certs = _scar(
        memory, "the certificate expired", "renew the certificate before the nightly backup"
    )
    rule = lessons.propose([backups], "rules", "Rotate the backup disk.")
    skill = lessons.propose([certs], "skill", "Certificate renewal\nRenew the certificate early.")
    for s in (rule, skill):
        lessons.apply(s, "ana")
    memory.engine.catch_up()
    words = WordVectors(_WORDS)
    with memory.engine.read() as conn:
        task = "rotate the nightly backup disk"
        margin = serving.served(conn, task, None, words, clear=None)
        assert [s.entry.kind for s in margin] == ["skill"], "the margin serves it alone"
        assert serving.served(conn, task, None, words) == []
        own = serving.served(conn, "renew the expired certificate", None, words)
        assert [(s.entry.kind, s.via) for s in own] == [("skill", "meaning")]
