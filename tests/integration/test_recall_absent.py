"""A question about something no memory holds scores low, whatever its order (ADR 0090)."""

from __future__ import annotations

import pytest

from engram.agents import matching
from engram.agents.memory import AgentMemory


def test_every_shipped_fit_with_vectors_weighs_absent_names_down() -> None:
    assert matching.CALIBRATIONS["neural"].absent_names < 0
    assert matching.CALIBRATIONS["hash"].absent_names < 0


@pytest.mark.parametrize(
    ("held", "absent"),
    [
        ("Where does Chen Wei live?", "Where does Zoltan Varga live?"),
        ("Which instrument does Eva Lindqvist play?", "Which instrument does Ingrid play?"),
        ("Does Bilal Haddad drive a Volvo?", "Does Bilal Okafor drive a Volvo?"),
    ],
)
def test_a_question_about_a_name_no_memory_holds_is_served_nothing_by_default(
    people: AgentMemory, held: str, absent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered = people.recall(held, 5, record=False, min_score=0).items
    unanswered = people.recall(absent, 5, record=False, min_score=0).items
    assert answered
    assert unanswered
    assert unanswered[0].relevance < answered[0].relevance
    assert people.recall(held, 5, record=False).items
    assert people.recall(absent, 5, record=False).items == []
    # The names term is what lowers it: without it, the same question scores higher.
    shipped = matching.CALIBRATIONS["hash"]
    monkeypatch.setitem(matching.CALIBRATIONS, "hash", shipped._replace(absent_names=0.0))
    plain = people.recall(absent, 5, record=False, min_score=0).items
    assert plain[0].relevance > unanswered[0].relevance


@pytest.mark.parametrize(
    "query",
    [
        "Where does Zoltan Varga live?",
        "What is Eva Lindqvist's blood type?",
        "Which bank employs Chen Okafor?",
        "zzzz cello",
    ],
)
def test_the_absent_term_lowers_every_item_and_never_changes_the_order_by_relevance(
    people: AgentMemory, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One logit added to every item: relevance keeps its order (the score's order moves
    # only where recency or importance weigh against a relevance near certainty).
    by = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
    weighed = people.recall(query, 20, record=False, min_score=0, weights=by).items
    shipped = matching.CALIBRATIONS["hash"]
    monkeypatch.setitem(matching.CALIBRATIONS, "hash", shipped._replace(absent_names=0.0))
    plain = people.recall(query, 20, record=False, min_score=0, weights=by).items
    assert [i.event.position for i in weighed] == [i.event.position for i in plain]
    lowered = [w.relevance <= p.relevance for w, p in zip(weighed, plain, strict=True)]
    assert all(lowered)
