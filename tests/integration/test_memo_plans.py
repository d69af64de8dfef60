"""The addressed memo, plans and the observer role (ADR 0066)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents.roles import observer_agent
from engram.agents.runner import AgentSpec, Plan, Runner, Situation, memo_addressed
from engram.projections.errors import QueryError
from engram.runtime import Memory

SESSION = "s1"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def test_memo_notes_carry_from_to_and_a_type(memory: Memory) -> None:
    memo = memory.memo(SESSION)
    memo.post("inner", "plain note")
    memo.post("inner", "please fetch the logs", to="outer", type="request")
    memo.post("outer", "fetched", to="inner", type="answer")
    notes = memo.read()
    assert [(n.agent, n.to, n.type) for n in notes] == [
        ("inner", "*", "note"),
        ("inner", "outer", "request"),
        ("outer", "inner", "answer"),
    ]
    assert [n.text for n in memo.read(to="outer")] == ["plain note", "please fetch the logs"]
    kinds = [e.kind for e in memory.ledger.read(streams=[f"memo:{SESSION}"])]
    assert kinds == ["memo.posted", "memo.addressed", "memo.addressed"]


def test_a_plan_moves_on_by_events_and_never_back(memory: Memory) -> None:
    memo = memory.memo(SESSION)
    plan = memo.propose("inner", "ship the fix", ["write", "test", "ship"])
    assert (memo.plan(plan).status, memo.plan(plan).done) == ("PROPOSED", 0)  # type: ignore[union-attr]
    memo.update("outer", plan, "IN_PROGRESS", done=1, note="written")
    memo.update("outer", plan, "IN_PROGRESS", done=2)
    state = memo.plan(plan)
    assert state is not None
    assert (state.status, state.done, state.updated_by) == ("IN_PROGRESS", 2, "outer")
    # Backward moves and moves past the steps are ignored by the projection...
    memory.ledger.append(memo.progress("someone", plan, "PROPOSED"))
    memory.ledger.append(memo.progress("someone", plan, "IN_PROGRESS", done=9))
    memory.ledger.append(memo.progress("someone", "no-such-plan", "DONE"))
    assert memo.plan(plan) == state
    # ... and refused by the API, which names the reason and appends nothing.
    with pytest.raises(QueryError, match=r"done must be in 0\.\.3"):
        memo.update("outer", plan, "IN_PROGRESS", done=4)
    with pytest.raises(QueryError, match="no plan"):
        memo.update("outer", "no-such-plan", "DONE")
    memo.update("inner", plan, "DONE", done=3)
    head = memory.ledger.head()
    with pytest.raises(QueryError, match="DONE already"):
        memo.update("inner", plan, "ABANDONED")
    assert memory.ledger.head() == head
    assert [p.status for p in memo.plans()] == ["DONE"]


def test_the_observer_reflects_over_inner_and_outer(memory: Memory) -> None:
    memo = memory.memo(SESSION)

    def inner(situation: Situation) -> Plan | None:
        answers = [n for n in situation.memo if n.to == "inner" and n.type == "answer"]
        if answers:
            (plan,) = memo.plans()
            return Plan(events=[memo.progress("inner", plan.plan, "DONE", done=2)])
        return Plan(
            events=[
                memo.proposal("inner", "answer the user", ["look up", "reply"], plan="p1"),
                memo.note("inner", "look up the outage", to="outer", type="request"),
            ]
        )

    def outer(situation: Situation) -> Plan:
        return Plan(
            events=[
                memo.progress("outer", "p1", "IN_PROGRESS", done=1),
                memo.note("outer", "the outage was a failover", to="inner", type="answer"),
            ]
        )

    started: list[bool] = []

    def inner_trigger(probe) -> str:  # type: ignore[no-untyped-def]
        if not started:
            started.append(True)
            return "a user asked"
        return memo_addressed(probe)

    runner = Runner(
        memory.ledger,
        memory.engine,
        [
            AgentSpec("inner", inner, trigger=inner_trigger, session=SESSION),
            AgentSpec("outer", outer, trigger=memo_addressed, session=SESSION),
            observer_agent(memo),
        ],
    )
    results = runner.run()
    assert [(r.agent, r.outcome) for r in results][:3] == [
        ("inner", "committed"),
        ("outer", "committed"),
        ("observer", "committed"),
    ]
    reflections = [n for n in memo.read() if n.type == "reflection"]
    assert reflections
    first = reflections[0].text
    assert "inner: proposal" not in first  # plans are not notes
    assert "inner: request to outer" in first
    assert "plan 'answer the user'" in first
    assert reflections[-1].agent == "observer"
    assert "DONE 2/2" in reflections[-1].text
    assert memo.plans()[0].status == "DONE"
    with pytest.raises(QueryError, match="never itself"):
        observer_agent(memo, watched=("observer",))
