"""reflect() end to end: a real ledger, the runtime's projections, recall, the generators.

The offline generator is read on a LoCoMo conversation: what each reflection states (its
term, the terms that recur with it, whom it concerns, how many memories) is parsed from its
text and checked against the texts of the events its evidence resolves to. The model path
runs through :class:`ScriptedCompleter`, a real implementation of the completion port that
decodes JSON answers against the schema asked for, as providers do.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import pytest

from engram.agents.completion import (
    CompletionFormatError,
    CompletionUnavailableError,
)
from engram.agents.insight import FocalQuestions, InsightAnswer, words
from engram.agents.reflection import (
    Triggers,
    _append,
    reflect,
    reflect_if_due,
    reflection_id,
)
from engram.bench import locomo
from engram.ledger import Event, NewEvent
from engram.ledger.catalog import MemoryReflected
from engram.projections import reflections
from engram.projections.errors import QueryError
from engram.runtime import Memory, open_memory

T = TypeVar("T", bound=msgspec.Struct)
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    """engram opened on a fresh SQLite ledger, with the runtime's projections."""
    with open_memory(str(tmp_path / "ledger.db"), config=os.devnull) as opened:
        yield opened


class ScriptedCompleter:
    """A completer whose answers are JSON texts computed from the prompt by a script.

    Like a provider, it decodes the answer against the schema asked for and reports an
    answer that does not fit as a CompletionFormatError. ``script`` returns the JSON text,
    or raises (a provider that is down).
    """

    def __init__(self, script: Callable[[str, str, type[Any]], str]) -> None:
        self.script = script
        self.prompts: list[tuple[str, str]] = []

    @property
    def fingerprint(self) -> str:
        return "scripted:test"

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        self.prompts.append((system, prompt))
        text = self.script(system, prompt, schema)
        try:
            return msgspec.json.decode(text, type=schema)
        except msgspec.ValidationError as exc:
            raise CompletionFormatError(f"answer does not fit {schema.__name__}: {exc}") from None
        except msgspec.DecodeError as exc:
            raise CompletionFormatError(f"answer is not JSON: {exc}") from None


def statements(prompt: str) -> dict[int, str]:
    """The numbered statements of a prompt: number -> text."""
    return {
        int(m[1]): m[2] for m in re.finditer(r"^(\d+)\. \[[\d-]+\] (.*)$", prompt, re.MULTILINE)
    }


def resolved(memory: Memory, reflection: Event) -> list[Event]:
    """The events a reflection's evidence resolves to, checked id by id."""
    with memory.engine.read() as conn:
        rows = reflections.evidence(conn, reflection.position)
    assert [r.id for r in rows] == reflection.payload.evidence
    assert all(r.position is not None for r in rows), rows
    events = memory.ledger.get([r.position for r in rows if r.position is not None])
    assert [e.id for e in events] == reflection.payload.evidence
    return events


# -- the offline generator on a LoCoMo conversation --------------------------------------------

_MATTERS = re.compile(r"(.+) matters to (.+): it comes up in (\d+) memories, with (.+)\.")
_COMES_UP = re.compile(r"(.+) keeps coming up: (\d+) memories, with (.+)\.")


def claims(text: str) -> tuple[str, list[str], str | None, int]:
    """Parse an offline reflection: (its term, the recurring terms, whom, how many)."""
    if m := _MATTERS.fullmatch(text):
        term, subject, count, listed = m[1], m[2], int(m[3]), m[4]
    else:
        m = _COMES_UP.fullmatch(text)
        assert m, f"not an offline reflection: {text!r}"
        term, subject, count, listed = m[1], None, int(m[2]), m[3]
    terms = re.split(r", | and ", listed)
    return term, terms, subject, count


@pytest.mark.parametrize("index", [0, 2])
def test_offline_reflections_on_locomo_state_what_their_evidence_holds(
    memory: Memory, index: int
) -> None:
    conversation = locomo.load()[index]
    agent = memory.agent("locomo")
    for turn in conversation.turns:
        agent.observe(turn.text, at=turn.at)
    head = memory.ledger.head()
    outcome = reflect(agent)
    assert outcome.status == "reflected", outcome.reason
    assert outcome.window == (0, head)
    assert len(outcome.insights) == 3
    memory.engine.catch_up()
    appended = list(memory.ledger.read(head, kinds=["memory.reflected"]))
    assert [e.id for e in appended] == [i.id for i in outcome.insights]
    for reflection in appended:
        evidence = resolved(memory, reflection)
        term, terms, subject, count = claims(reflection.payload.text)
        texts = [set(words(e.payload.text)) for e in evidence]
        print(reflection.payload.text, [e.position for e in evidence])
        assert count == len(evidence) >= 2
        assert reflection.payload.question == f"What do I know about {term.lower()}?" or (
            reflection.payload.question.lower() == f"what do i know about {term.lower()}?"
        )
        # The term it is about is in every memory it cites; each term it names recurs.
        assert all(term.lower() in t for t in texts)
        for named in terms:
            assert sum(named.lower() in t for t in texts) >= 2, (named, reflection.payload.text)
        # Whom it concerns speaks most of it (or, two names, most of it between them).
        if subject is not None:
            speakers = [e.payload.text.split(":", 1)[0] for e in evidence]
            share = sum(s in subject.split(" and ") for s in speakers) / len(speakers)
            assert share >= 0.6, (subject, speakers)
        assert reflection.payload.depth == 1
        assert reflection.payload.importance == max(e.payload.importance for e in evidence)
    with memory.engine.read() as conn:
        assert reflections.unsupported(conn) == []
        assert reflections.trigger_state(conn, "locomo").visible == 0


# -- idempotence --------------------------------------------------------------------------------


def observe_story(memory: Memory, agent: str = "alice", *, start: datetime = T0) -> None:
    """Observations where the parser and the deploy recur."""
    me = memory.agent(agent)
    lines = [
        "The parser failed on the nightly build",
        "Bob fixed the parser tokenizer after the nightly build",
        "The deploy waited for the parser fix",
        "The parser tokenizer failed again on unicode input",
        "Lunch with Carol about the deploy schedule",
        "The deploy schedule moved to Friday",
    ]
    for i, line in enumerate(lines):
        me.observe(line, importance=6, at=start + timedelta(minutes=i))


def test_a_retried_reflection_appends_nothing_new(memory: Memory) -> None:
    observe_story(memory)
    agent = memory.agent("alice")
    head = memory.ledger.head()
    planned = reflect(agent, dry_run=True)
    assert planned.status == "dry-run"
    assert memory.ledger.head() == head  # a dry run appends nothing, not even a recall
    done = reflect(agent)
    assert done.status == "reflected"
    assert [(i.id, i.text) for i in done.insights] == [(i.id, i.text) for i in planned.insights]
    assert [i.id for i in done.insights] == [
        reflection_id("alice", (0, head), n) for n in range(len(done.insights))
    ]
    after = memory.ledger.head()
    assert after == head + len(done.insights)
    # The same events again (an append whose acknowledgement was lost): the same positions.
    again = [
        NewEvent(
            stream="agent:alice",
            kind="memory.reflected",
            payload=MemoryReflected(
                agent="alice",
                text=i.text,
                evidence=[e.id for e in i.evidence],
                depth=i.depth,
                question=i.question,
                importance=i.importance,
                visibility=i.visibility,  # type: ignore[arg-type]
            ),
            actor="alice",
            id=i.id,
        )
        for i in done.insights
    ]
    assert memory.ledger.append(again) == [i.position for i in done.insights]
    # Reflecting again: nothing new since the last reflection, nothing appended.
    retry = reflect(agent)
    assert retry.status == "nothing-new", retry.reason
    assert memory.ledger.head() == after
    # Another process reflected on the same window first, with other words: ours is dropped.
    other = [i._replace(text=f"{i.text} (other words)") for i in done.insights]
    raced = _append(agent, other, done.window, "offline", done.state, 6)
    assert raced.status == "already-reflected"
    assert f"position {done.insights[0].position}" in raced.reason
    assert memory.ledger.head() == after


def test_reflect_if_due_waits_for_a_trigger(memory: Memory) -> None:
    agent = memory.agent("alice")
    observe_story(memory)
    head = memory.ledger.head()
    waiting = reflect_if_due(agent, Triggers(every=7, importance=0))
    assert waiting.status == "not-due"
    assert "6 visible memories (importance 36) since position 0" in waiting.reason
    assert memory.ledger.head() == head
    assert reflect_if_due(agent, Triggers(every=0, importance=36)).status == "reflected"
    with pytest.raises(QueryError, match="triggers must be a Triggers"):
        reflect_if_due(agent, {"every": 1})  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="memory must be an AgentMemory"):
        reflect("alice")  # type: ignore[arg-type]
    with pytest.raises(QueryError, match="completer must be a Completer, got str"):
        reflect(agent, "gpt")  # type: ignore[arg-type]


def test_reflections_respect_visibility(memory: Memory) -> None:
    observe_story(memory, "bob")
    bob = memory.agent("bob")
    for i in range(3):
        bob.observe(
            f"The parser secret key rotation failed {i}",
            visibility="private",
            importance=9,
            at=T0 + timedelta(hours=1, minutes=i),
        )
    carol = memory.agent("carol")
    outcome = reflect(carol)
    assert outcome.status == "reflected"
    cited = [e for i in outcome.insights for e in i.evidence]
    assert cited
    assert all(e.payload.visibility == "public" for e in cited)
    assert all(i.visibility == "public" for i in outcome.insights)
    mine = reflect(bob)
    private = [
        i for i in mine.insights if any(e.payload.visibility == "private" for e in i.evidence)
    ]
    assert private
    assert all(i.visibility == "private" for i in private)


# -- a model through the completion port ------------------------------------------------------


def test_a_model_reflection_cites_what_it_was_shown_and_can_rest_on_a_reflection(
    memory: Memory,
) -> None:
    observe_story(memory)
    agent = memory.agent("alice")

    def first(system: str, prompt: str, schema: type[Any]) -> str:
        if schema is FocalQuestions:
            return '{"questions": ["What keeps breaking in the parser?"]}'
        shown = statements(prompt)
        cited = [n for n, text in shown.items() if "failed" in text]
        return msgspec.json.encode(
            {"insights": [{"text": "The parser is fragile.", "evidence": cited}]}
        ).decode()

    completer = ScriptedCompleter(first)
    outcome = reflect(agent, completer)
    assert outcome.status == "reflected", outcome.reason
    assert outcome.generator == "scripted:test"
    (insight,) = outcome.insights
    assert insight.question == "What keeps breaking in the parser?"
    assert insight.depth == 1
    assert {e.payload.text for e in insight.evidence} == {
        "The parser failed on the nightly build",
        "The parser tokenizer failed again on unicode input",
    }
    memory.engine.catch_up()
    (event,) = memory.ledger.get([insight.position or 0])
    assert event.payload.text == "The parser is fragile."
    assert resolved(memory, event) == insight.evidence

    # New memories; the model sees the earlier reflection among the statements and cites it.
    agent.observe("The parser failed a third time", importance=7, at=T0 + timedelta(hours=2))

    def second(system: str, prompt: str, schema: type[Any]) -> str:
        if schema is FocalQuestions:
            return '{"questions": ["Is the parser fragile?"]}'
        shown = statements(prompt)
        cited = [n for n, text in shown.items() if "fragile" in text or "third" in text]
        return msgspec.json.encode(
            {"insights": [{"text": "The parser needs a rewrite.", "evidence": cited}]}
        ).decode()

    deeper = reflect(agent, ScriptedCompleter(second))
    assert deeper.status == "reflected", deeper.reason
    (insight,) = deeper.insights
    assert {e.kind for e in insight.evidence} == {"memory.observed", "memory.reflected"}
    assert insight.depth == 2
    memory.engine.catch_up()
    with memory.engine.read() as conn:
        assert reflections.unsupported(conn) == []
        rows = reflections.evidence(conn, insight.position or 0)
    assert sorted(r.depth for r in rows) == [0, 1]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"insights": [{"text": "x", "evidence": [99]}]}', "cites statement(s) [99]"),
        ('{"insights": [{"text": "x", "evidence": []}]}', "does not fit InsightAnswer"),
        ('{"insights": [{"text": "x"', "answer is not JSON"),
        ("down", "CompletionUnavailableError: connection refused"),
    ],
)
def test_a_failing_model_leaves_the_reflection_undone_with_the_reason(
    memory: Memory, answer: str, reason: str
) -> None:
    observe_story(memory)
    agent = memory.agent("alice")

    def script(system: str, prompt: str, schema: type[Any]) -> str:
        if schema is FocalQuestions:
            return '{"questions": ["What about the parser?"]}'
        if answer == "down":
            raise CompletionUnavailableError("connection refused")
        assert schema is InsightAnswer
        return answer

    head = memory.ledger.head()
    outcome = reflect(agent, ScriptedCompleter(script))
    assert outcome.status == "failed"
    assert "the model scripted:test gave no usable answer" in outcome.reason
    assert reason in outcome.reason
    assert outcome.insights == []
    assert memory.ledger.head() == head
    # The window stays open: the offline generator (or a model back up) reflects on it.
    assert reflect(agent).status == "reflected"


def test_nothing_to_reflect_on_appends_nothing(memory: Memory) -> None:
    agent = memory.agent("alice")
    outcome = reflect(agent)
    assert (outcome.status, outcome.insights, outcome.window) == ("nothing-new", [], (0, 0))
    agent.observe("Lunch.", importance=2, at=T0)
    lone = reflect(agent)
    assert lone.status == "no-insight"
    assert memory.ledger.head() == 1


def test_the_offline_generator_says_the_same_of_the_same_memories(tmp_path: Path) -> None:
    said = []
    for name in ("one", "two"):
        path = str(tmp_path / name / "ledger.db")
        with open_memory(path, config=os.devnull) as opened:
            observe_story(opened)
            observe_story(opened, "bob", start=T0 + timedelta(hours=1))
            outcome = reflect(opened.agent("alice"))
            said.append([(i.text, [e.position for e in i.evidence]) for i in outcome.insights])
    assert said[0]
    assert said[0] == said[1]


@pytest.mark.postgres
def test_reflect_on_a_postgresql_ledger_appends_once(
    pg_dsn: str, pg_schema: str, tmp_path: Path
) -> None:
    with open_memory(
        pg_dsn, config=os.devnull, pg_schema=pg_schema, projections=str(tmp_path / "store")
    ) as opened:
        assert opened.ledger.backend_name == "postgresql"
        observe_story(opened)
        agent = opened.agent("alice")
        outcome = reflect(agent)
        assert outcome.status == "reflected", outcome.reason
        head = opened.ledger.head()
        assert reflect(agent).status == "nothing-new"
        assert opened.ledger.head() == head
        opened.engine.catch_up()
        for insight in outcome.insights:
            (event,) = opened.ledger.get([insight.position or 0])
            assert event.id == insight.id
            assert resolved(opened, event) == insight.evidence


# -- a SIGKILL while reflecting ----------------------------------------------------------------

WORKER = Path(__file__).parent / "_workers" / "reflect_worker.py"


def test_a_reflection_killed_at_any_moment_is_appended_once_when_run_again(
    tmp_path: Path,
) -> None:
    seed = random.randrange(2**31)
    print(f"kill seed {seed}")
    rng = random.Random(seed)
    # Long enough that the kill lands before the end on a fast, idle machine too.
    cfg = {"ledger": str(tmp_path / "ledger.db"), "total": 200}
    argv = [sys.executable, "-W", "error", str(WORKER), json.dumps(cfg)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(rng.randint(1, 3)):
            line = proc.stdout.readline() if proc.stdout else ""
            assert "reflected" in line, proc.communicate()[1]
        time.sleep(rng.random() * 0.3)  # into the next observations, recalls or appends
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr

    with open_memory(cfg["ledger"], config=os.devnull) as memory:
        events = list(memory.ledger.read(0))
        observed = [e for e in events if e.kind == "memory.observed"]
        assert len(observed) == len({e.payload.text for e in observed}) == cfg["total"]
        # Each batch of reflections has the ids of its window: the previous reflection's
        # position and the newest memory before it. A window reflected twice would show as
        # two batches with one window, or as ids that match no window.
        last_reflection, newest, batch, windows = 0, 0, 0, []
        for e in events:
            if e.kind == "memory.observed":
                newest, batch = e.position, 0
                continue
            if e.kind == "memory.superseded":  # detection's, appended with its memory
                continue
            window = (last_reflection, newest) if batch == 0 else windows[-1]
            if batch == 0:
                windows.append(window)
            assert e.id == reflection_id("alice", window, batch), (e.position, window)
            batch += 1
            if e is events[-1] or events[e.position].kind != "memory.reflected":
                last_reflection = e.position
        assert len(windows) == len(set(windows)) >= 3
        memory.engine.catch_up()
        with memory.engine.read() as conn:
            assert reflections.unsupported(conn) == []
            assert reflections.trigger_state(conn, "alice").visible < 4
