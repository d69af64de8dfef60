"""The reflection generators as pure functions of the memories they are given."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engram.agents.completion import CompletionFormatError
from engram.agents.insight import (
    FocalQuestions,
    InsightAnswer,
    ModelGenerator,
    OfflineGenerator,
    Question,
    numbered,
    words,
)
from engram.ledger import Event
from engram.ledger.catalog import MemoryObserved

T = TypeVar("T", bound=msgspec.Struct)
T0 = datetime(2026, 3, 1, tzinfo=UTC)
NAMES = ("Bob", "Carol", "Dana")
NOUNS = ("parser", "deploy", "tokenizer", "schedule", "lunch", "database", "replica")


def memory(position: int, text: str, importance: int | None = 5) -> Event:
    """A stored ``memory.observed`` event at ``position``."""
    return Event(
        position=position,
        id=f"00000000-0000-7000-8000-{position:012d}",
        stream="agent:alice",
        version=position,
        kind="memory.observed",
        schema=1,
        actor="alice",
        at=T0 + timedelta(minutes=position),
        payload=MemoryObserved(agent="alice", text=text, importance=importance),
        causation_id=None,
        correlation_id=None,
        hash=b"",
    )


sentences = st.one_of(
    st.builds(
        "{}: the {} broke the {}".format,
        st.sampled_from(NAMES),
        st.sampled_from(NOUNS),
        st.sampled_from(NOUNS),
    ),
    st.builds(
        "We saw {} fix the {} near the {}".format,
        st.sampled_from(NAMES),
        st.sampled_from(NOUNS),
        st.sampled_from(NOUNS),
    ),
)
memories = st.lists(
    st.tuples(sentences, st.none() | st.integers(1, 10)), min_size=1, max_size=30
).map(lambda items: [memory(i, text, imp) for i, (text, imp) in enumerate(items, start=1)])

_SENTENCE = re.compile(r"(.+) (?:matters to (.+): it comes up in|keeps coming up:) (\d+) memories")


@settings(max_examples=200)
@given(recent=memories)
def test_every_stated_word_is_in_the_memories_cited(recent: list[Event]) -> None:
    generator = OfflineGenerator()
    questions = generator.questions(recent)
    assert questions == OfflineGenerator().questions(recent)  # deterministic
    for question in questions:
        term = question.query.lower()
        assert sum(term in words(e.payload.text) for e in recent) >= 2
        drafts = generator.insights(question, recent)
        assert drafts == generator.insights(question, recent)
        event("an insight" if drafts else "a question without an insight")
        for draft in drafts:
            held = [set(words(e.payload.text)) for e in draft.evidence]
            assert len(held) >= 2
            assert all(term in h for h in held)
            focal, *named = draft.terms
            assert focal == term
            for word in named:
                assert word in draft.text.lower()
            m = _SENTENCE.match(draft.text)
            assert m, draft.text
            assert int(m[3]) == len(draft.evidence)
            recurring = [w for w in named if w not in words(m[2] or "")]
            assert recurring
            for word in recurring:
                assert sum(word in h for h in held) >= 2, (word, draft.text)
            if m[2] is not None:  # whom it concerns speaks, or is named in, most of it
                whom = m[2].split(" and ")
                share = sum(
                    any(e.payload.text.startswith(f"{w}:") or w in e.payload.text for w in whom)
                    for e in draft.evidence
                )
                assert share >= 0.6 * len(draft.evidence)


def test_plain_memories_without_repetition_give_no_question() -> None:
    recent = [memory(1, "The parser failed"), memory(2, "Lunch with Carol")]
    assert OfflineGenerator().questions(recent) == []
    question = Question("What do I know about nothing?", "nothing")
    assert OfflineGenerator().insights(question, recent) == []


class Canned:
    """A completer that answers each schema with a fixed JSON text, decoded as providers do."""

    fingerprint = "canned:test"

    def __init__(self, answers: dict[type[Any], str]) -> None:
        self.answers = answers
        self.calls = 0

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        self.calls += 1
        try:
            return msgspec.json.decode(self.answers[schema], type=schema)
        except msgspec.ValidationError as exc:
            raise CompletionFormatError(str(exc)) from None


def test_the_model_sees_numbered_statements_and_cites_them() -> None:
    shown = [memory(7, "The parser\nfailed"), memory(9, "Bob fixed it", None)]
    assert numbered(shown) == "1. [2026-03-01] The parser failed\n2. [2026-03-01] Bob fixed it"
    canned = Canned(
        {
            FocalQuestions: '{"questions": [" Why did the parser fail? ", " "]}',
            InsightAnswer: (
                '{"insights": [{"text": " Bob fixes what fails. ", "evidence": [2, 1, 2]}]}'
            ),
        }
    )
    model = ModelGenerator(canned)
    assert model.fingerprint == "canned:test"
    (question,) = model.questions(shown)
    assert question == Question("Why did the parser fail?", "Why did the parser fail?")
    (draft,) = model.insights(question, shown)
    assert draft.text == "Bob fixes what fails."
    assert [e.position for e in draft.evidence] == [9, 7]  # as cited, each once
    assert model.insights(question, []) == []
    assert canned.calls == 2  # nothing shown, nothing asked


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"insights": [{"text": "x", "evidence": [3]}]}', r"insight 1 cites statement\(s\) \[3\]"),
        ('{"insights": [{"text": "x", "evidence": [0]}]}', "Expected `int` >= 1"),
        ('{"insights": [{"text": "", "evidence": [1]}]}', "Expected `str` of length >= 1"),
        ('{"insights": [], "extra": 1}', "unknown field `extra`"),
    ],
)
def test_an_answer_out_of_schema_is_refused(answer: str, message: str) -> None:
    model = ModelGenerator(Canned({InsightAnswer: answer}))
    with pytest.raises(CompletionFormatError, match=message):
        model.insights(Question("q?", "q"), [memory(1, "a"), memory(2, "b")])
