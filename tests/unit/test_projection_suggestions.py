"""The suggestions and rules projections on lifecycles that break the rules.

The API refuses illegal reviews, but the ledger takes raw appends too: the projections
must neither crash nor let a later event undo a decision, and they list what they ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    ScarArchived,
    ScarRecorded,
    SuggestionDeferred,
    SuggestionProposed,
    SuggestionReviewed,
    SuggestionWritten,
)
from engram.projections import rules, suggestions
from engram.projections.engine import ProjectionEngine
from engram.projections.rules import RuleBook
from engram.projections.suggestions import SuggestionQueue

SCAR = "00000000-0000-7000-8000-000000000001"
RULE = "00000000-0000-7000-8000-000000000002"
NOTE = "00000000-0000-7000-8000-000000000003"
UNKNOWN = "ffffffff-ffff-4fff-bfff-ffffffffffff"
SHA = "a" * 64


def scar(id: str, importance: int = 5) -> NewEvent:
    payload = ScarRecorded(agent="a", kind="failure", what="w", lesson="l", importance=importance)
    return NewEvent(stream="scar:a", kind="scar.recorded", payload=payload, id=id)


def proposed(id: str, destination: str, text: str) -> NewEvent:
    payload = SuggestionProposed(scars=[SCAR], destination=destination, text=text)  # type: ignore[arg-type]
    return NewEvent(stream=f"suggestion:{id}", kind="suggestion.proposed", payload=payload, id=id)


def reviewed(id: str, decision: str, reviewer: str = "ana", text: str | None = None) -> NewEvent:
    payload = SuggestionReviewed(suggestion=id, decision=decision, reviewer=reviewer, text=text)  # type: ignore[arg-type]
    return NewEvent(stream="raw", kind="suggestion.reviewed", payload=payload)


def written(id: str) -> NewEvent:
    payload = SuggestionWritten(
        suggestion=id, destination="notes_inbox", path="inbox/x.md", mode="created", sha256=SHA
    )
    return NewEvent(stream="raw", kind="suggestion.written", payload=payload)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ProjectionEngine]:
    with (
        Ledger.open(str(tmp_path / "ledger.db")) as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [SuggestionQueue(), RuleBook()]) as engine,
    ):
        yield engine


def test_illegal_reviews_are_ignored_and_listed(engine: ProjectionEngine) -> None:
    ledger = engine.ledger
    ledger.append(
        [
            scar(SCAR),
            proposed(RULE, "rules", "Pin it.\nreally"),
            proposed(NOTE, "notes_inbox", "A note."),
        ]
    )
    ledger.append(
        [
            written(RULE),  # 4: written while pending
            reviewed(RULE, "modified", text="  "),  # 5: modified without a text
            reviewed(RULE, "applied", "ana"),  # 6: the first legal review
            reviewed(RULE, "refused", "bo"),  # 7: reviewing twice
            reviewed(NOTE, "refused"),  # 8
            reviewed(NOTE, "applied", "bo"),  # 9: applying a refused one
            reviewed(UNKNOWN, "applied"),  # 10: no such suggestion
            written(NOTE),  # 11: written while refused
            written(UNKNOWN),  # 12
        ]
    )
    engine.catch_up()
    with engine.read() as conn:
        rule = suggestions.get(conn, RULE)
        note = suggestions.get(conn, NOTE)
        assert rule is not None
        assert note is not None
        assert (rule.status, rule.reviewer, rule.final_text, rule.reviewed_position) == (
            "applied",
            "ana",
            "Pin it.\nreally",
            6,
        )
        assert (note.status, note.final_text) == ("refused", None)
        assert suggestions.ignored(conn) == [
            (4, "suggestion.written", "written while pending"),
            (5, "suggestion.reviewed", "modified without a text"),
            (7, "suggestion.reviewed", "reviewed already (applied)"),
            (9, "suggestion.reviewed", "reviewed already (refused)"),
            (10, "suggestion.reviewed", "no such suggestion"),
            (11, "suggestion.written", "written while refused"),
            (12, "suggestion.written", "no such suggestion"),
        ]
        assert [p for p, _, _ in suggestions.ignored(conn, NOTE)] == [9, 11]
        (served,) = rules.active(conn)
        assert (served.text, served.position, served.reviewer) == ("Pin it. really", 6, "ana")


def test_the_learning_queue(engine: ProjectionEngine) -> None:
    ledger = engine.ledger
    ids = [f"00000000-0000-7000-8000-0000000001{i:02d}" for i in range(4)]
    ledger.append([scar(ids[0], 3), scar(ids[1], 9), scar(ids[2], 9), scar(ids[3], 1)])
    ledger.append(NewEvent(stream="s", kind="scar.archived", payload=ScarArchived(positions=[4])))
    ledger.append(
        NewEvent(
            stream="learning",
            kind="suggestion.deferred",
            payload=SuggestionDeferred(scars=[ids[0], UNKNOWN], reason="HTTP 503"),
        )
    )
    payload = SuggestionProposed(scars=[ids[2]], destination="rules", text="x")
    ledger.append(NewEvent(stream="s", kind="suggestion.proposed", payload=payload))
    engine.catch_up()
    with engine.read() as conn:
        waiting = suggestions.waiting(conn)
        assert [(w.id, w.deferrals, w.last_reason) for w in waiting] == [
            (ids[1], 0, None),
            (ids[0], 1, "HTTP 503"),
        ]
        assert suggestions.known_scars(conn, [ids[3], ids[0], UNKNOWN]) == {
            ids[3]: True,
            ids[0]: False,
        }
        assert len(suggestions.waiting(conn, 1)) == 1


def test_a_private_scar_never_enters_the_learning_queue(engine: ProjectionEngine) -> None:
    # A suggestion is the team's and its rule is served to every agent: a private scar is
    # its agent's own, so it is never drafted into one.
    shared, own = "00000000-0000-7000-8000-000000000201", "00000000-0000-7000-8000-000000000202"
    private = ScarRecorded(
        agent="a", kind="failure", what="leaked the export", lesson="never upload exports",
        importance=5, visibility="private",
    )  # fmt: skip
    engine.ledger.append(
        [scar(shared), NewEvent(stream="scars:a", kind="scar.recorded", payload=private, id=own)]
    )
    engine.catch_up()
    with engine.read() as conn:
        assert [w.id for w in suggestions.waiting(conn)] == [shared]
