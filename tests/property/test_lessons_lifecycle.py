"""A stateful property of the lessons loop: the queue and the rules follow a simple model.

Hypothesis drives the API on a real SQLite ledger with random proposals and reviews — legal
and illegal (second reviews, applying refused suggestions, unknown ids, modified without a
text) — and checks after every step that each suggestion's status and final text, and the
rules served, are what a plain dictionary model says; that a refused call appended nothing;
and, at the end, that a rebuild of both projections gives the same digests.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from engram.agents.errors import SuggestionError
from engram.agents.lessons import Lessons
from engram.ledger import NewEvent
from engram.ledger.catalog import ScarRecorded
from engram.runtime import open_memory

TEXTS = st.sampled_from(["Pin the parser.", "Run the tests first.", "Ünïcödé ✓ rule."])


class LessonsMachine(RuleBasedStateMachine):
    """The API against a model: id -> (destination, text, status, final text)."""

    @initialize()
    def open(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.context = open_memory(str(Path(self.tmp.name) / "l.db"), config="/dev/null")
        self.memory = self.context.__enter__()
        places = {"notes_inbox": str(Path(self.tmp.name) / "inbox")}
        self.lessons = Lessons(self.memory.ledger, self.memory.engine, places=places)
        payload = ScarRecorded(agent="a", kind="failure", what="w", lesson="l", importance=5)
        (position,) = self.memory.ledger.append(
            NewEvent(stream="scar:a", kind="scar.recorded", payload=payload)
        )
        self.scar = next(self.memory.ledger.read(position - 1, limit=1)).id
        self.model: dict[str, list[str | None]] = {}
        self.rules: list[str] = []

    def teardown(self) -> None:
        if hasattr(self, "context"):
            self.context.__exit__(None, None, None)
            self.tmp.cleanup()

    @rule(destination=st.sampled_from(["rules", "notes_inbox"]), text=TEXTS)
    def propose(self, destination: str, text: str) -> None:
        sid = self.lessons.propose([self.scar], destination, text)  # type: ignore[arg-type]
        self.model[sid] = [destination, text, "pending", None]

    @precondition(lambda self: bool(self.model))
    @rule(
        data=st.data(),
        decision=st.sampled_from(["applied", "refused", "modified"]),
        text=st.none() | TEXTS,
        reviewer=st.sampled_from(["ana", "bo"]),
    )
    def review(self, data: st.DataObject, decision: str, text: str | None, reviewer: str) -> None:
        sid = data.draw(st.sampled_from(sorted(self.model)), label="suggestion")
        destination, drafted, status, _ = self.model[sid]
        given = text if decision == "modified" else None
        legal = status == "pending" and (decision != "modified" or given is not None)
        head = self.memory.ledger.head()
        try:
            self.lessons.review(sid, decision, reviewer, text=given)
        except SuggestionError:
            assert not legal, (sid, decision, status)
            assert self.memory.ledger.head() == head, "a refused review appended something"
            return
        assert legal, (sid, decision, status)
        final = {"applied": drafted, "modified": given, "refused": None}[decision]
        self.model[sid] = [destination, drafted, decision, final]
        if destination == "rules" and final is not None:
            self.rules.append(final)

    @rule()
    def review_unknown(self) -> None:
        head = self.memory.ledger.head()
        try:
            self.lessons.review("ffffffff-ffff-4fff-bfff-ffffffffffff", "applied", "ana")
        except SuggestionError:
            assert self.memory.ledger.head() == head
        else:
            raise AssertionError("an unknown suggestion was reviewed")

    @invariant()
    def the_queue_and_the_rules_follow_the_model(self) -> None:
        if not hasattr(self, "lessons"):
            return
        shown = {
            s.id: [s.destination, s.text, s.status, s.final_text]
            for s in self.lessons.suggestions()
        }
        assert shown == self.model
        assert [r.text for r in self.lessons.rules()] == self.rules

    @invariant()
    def a_rebuild_gives_the_same_state(self) -> None:
        if not hasattr(self, "lessons") or len(self.model) % 3:
            return  # every few steps: a rebuild is the slow part
        engine = self.memory.engine
        engine.catch_up()
        before = {n: engine.digest(n) for n in ("suggestions", "rules")}
        engine.rebuild(["suggestions", "rules"])
        assert {n: engine.digest(n) for n in ("suggestions", "rules")} == before


LessonsMachine.TestCase.settings = settings(max_examples=15, stateful_step_count=20, deadline=None)
TestLessonsLifecycle = LessonsMachine.TestCase
