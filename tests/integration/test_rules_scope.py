"""Recall with scope="rules": the applied rules, matched by their words, as of a time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import engram
from engram.agents.meaning import APPLIES
from engram.projections.errors import QueryError
from engram.runtime import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_applied_rules_are_recalled_by_their_words_and_only_after_they_apply(
    memory: Memory,
) -> None:
    position = memory.scars("ops").record(
        "failure", "the migration locked the users table", "run migrations with a lock timeout"
    )
    (scar,) = memory.ledger.get([position])
    lessons = memory.lessons()
    proposed = lessons.propose([scar.id], "rules", "Run every migration with a lock timeout.")
    other = lessons.propose([scar.id], "rules", "Page the on-call before a schema change.")
    before = datetime.now(UTC)
    applied = lessons.apply(proposed, "ana")
    lessons.refuse(other, "ana")
    agent = memory.agent("planner")
    result = agent.recall("migration lock timeout", 3, scope="rules")
    assert [r.event.position for r in result.items] == [applied]
    assert result.items[0].event.payload.text == "Run every migration with a lock timeout."
    assert 0 < result.items[0].match <= 1
    assert result.recorded_at is not None
    everything = agent.recall("migration lock timeout", 5, scope="all", record=False)
    assert applied in [r.event.position for r in everything.items]
    assert agent.recall("migration lock timeout", 3, scope="rules", as_of=before).items == []
    assert agent.recall("schema change on-call", 3, scope="rules", record=False).items == []


def test_rules_are_looked_up_by_meaning_not_by_shared_function_words(memory: Memory) -> None:
    # The lookup matched the rules' words by BM25: a rule sharing only "the" and "a" with the
    # query was listed (match 0.0) above one sharing what the query is about.
    lessons = memory.lessons()
    texts = {}
    for what, lesson in (
        (
            "The rep offered a discount to calm the upset user.",
            "Offer a refund only as the policy allows.",
        ),
        (
            "The rows of one customer were shuffled across the folds.",
            "Split the data by the customer id.",
        ),
    ):
        (scar,) = memory.ledger.get([memory.scars("ops").record("failure", what, lesson)])
        texts[lesson] = lessons.apply(lessons.propose([scar.id], "rules", lesson), "ana")
    query = "Answer the user who asks for a refund of the annual plan, as the policy says."
    found = lessons.rules_for_query(query, 5)
    assert [r.text for r in found][:1] == ["Offer a refund only as the policy allows."]
    assert all(0 < r.match <= 1 for r in found)
    assert [r.match for r in found] == sorted((r.match for r in found), reverse=True)
    result = memory.agent("planner").recall(query, 5, scope="rules", record=False)
    assert [r.event.position for r in result.items][:1] == [texts[found[0].text]]
    assert lessons.rules_for_query("Write a haiku about the sea.", 5) == []
    # Met by a stray shared word only, a rule was listed at score 0.0000 (ADR 0142).
    for far in ("Choose a colour palette for the executive dashboard.", "Split the bill."):
        assert all(r.match >= APPLIES for r in lessons.rules_for_query(far, 5)), far
    assert lessons.rules_for_query("Choose a colour palette for the executive dashboard.", 5) == []
    with pytest.raises(QueryError, match="query must be a non-empty string, got NoneType"):
        lessons.rules_for_query(None, 5)  # type: ignore[arg-type]
    for blank in ("", "   "):  # it used to answer [] (and the CLI listed every rule for "")
        with pytest.raises(QueryError, match="query must be a non-empty string"):
            lessons.rules_for_query(blank, 5)
