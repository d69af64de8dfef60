"""The query's detail, its words but its names, matched in meaning over the candidates
(ADR 0095): a query-level term that lowers a question no memory's meaning answers."""

from __future__ import annotations

import pytest

from engram.agents import matching
from engram.agents.memory import PATHS, AgentMemory


@pytest.mark.parametrize(
    ("query", "rest"),
    [
        ("What is Hana Sato's blood type?", "What is blood type?"),
        ("Where does Zoltan Varga live?", "Where does live?"),
        ("Do I have a note on Mr Ferreira and the key?", "Do I have a note on and the key?"),
        ("When did Melanie paint a sunrise?", "When did paint a sunrise?"),
        ("where does chen wei live", None),  # no names written
        ("Who is Bob?", None),  # nothing but function words left
        ("What did I say?", None),  # "I" is no name
    ],
)
def test_without_names_leaves_what_the_question_asks(query: str, rest: str | None) -> None:
    assert matching.without_names(query) == rest


def test_the_detail_term_moves_relevance_only_when_weighed() -> None:
    weighed = matching.Calibration(-6.0, 2.0, 4.0, 2.0, detail=6.0)
    assert weighed.relevance(0.5, 0.6, 1.0, detail=0.6) > weighed.relevance(
        0.5, 0.6, 1.0, detail=0.2
    )
    plain = matching.Calibration(-6.0, 2.0, 4.0, 2.0)
    assert plain.relevance(0.5, 0.6, 1.0, detail=0.6) == plain.relevance(0.5, 0.6, 1.0)


def _detail(agent: AgentMemory, query: str) -> matching.Matching:
    agent.engine.wait_for(agent.ledger.head())
    with agent.engine.read() as conn:
        ranked, _, found = agent._candidates(conn, conn, query, 30, None, frozenset(PATHS), None)
        assert found is not None
        matching.note_detail(ranked, sorted(ranked), found)
    return found


def test_a_held_subject_s_unheld_detail_matches_worse_than_a_held_one(
    people: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = matching.CALIBRATIONS["hash"]
    monkeypatch.setitem(matching.CALIBRATIONS, "hash", shipped._replace(detail=5.0))
    held = _detail(people, "Where does Eva Lindqvist live?")
    unheld = _detail(people, "What is Eva Lindqvist's blood type?")
    assert held.masked is not None
    assert unheld.masked is not None
    assert 0.0 <= unheld.detail < held.detail <= 1.0
    # A query that writes no names is its own detail: no second vector is embedded.
    plain = _detail(people, "cello")
    assert plain.masked is None
    assert plain.detail > 0


def test_no_masked_vector_is_embedded_where_the_calibration_does_not_weigh_it(
    people: AgentMemory,
) -> None:
    assert matching.CALIBRATIONS["hash"].detail == 0
    assert _detail(people, "What is Eva Lindqvist's blood type?").masked is None


@pytest.mark.parametrize(
    "query",
    [
        "What is Eva Lindqvist's blood type?",
        "Where does Chen Wei live?",
        "Which bank employs Chen Okafor?",
        "cello",
    ],
)
def test_the_detail_term_never_changes_the_order_by_relevance(
    people: AgentMemory, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    by = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
    plain = people.recall(query, 20, record=False, min_score=0, weights=by).items
    shipped = matching.CALIBRATIONS["hash"]
    monkeypatch.setitem(matching.CALIBRATIONS, "hash", shipped._replace(detail=5.0))
    weighed = people.recall(query, 20, record=False, min_score=0, weights=by).items
    assert [i.event.position for i in weighed] == [i.event.position for i in plain]
    raised = [w.relevance >= p.relevance for w, p in zip(weighed, plain, strict=True)]
    assert all(raised)  # a positive weight on a share in 0..1 only ever lifts


def test_a_weighed_detail_lowers_an_unheld_detail_and_keeps_a_held_one(
    people: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def tops() -> tuple[float, float]:
        held = people.recall("Where does Eva Lindqvist live?", 5, record=False, min_score=0)
        unheld = people.recall("What is Eva Lindqvist's blood type?", 5, record=False, min_score=0)
        return held.items[0].relevance, unheld.items[0].relevance

    plain = tops()
    shipped = matching.CALIBRATIONS["hash"]
    monkeypatch.setitem(
        matching.CALIBRATIONS, "hash", shipped._replace(detail=8.0, bias=shipped.bias - 1.5)
    )
    weighed = tops()
    assert weighed[0] >= plain[0]
    assert weighed[1] < plain[1] / 2
