"""Personal data never reaches the model, and never comes back out of it.

Scars holding generated emails, phones, API keys and tokens, IPv4 and IPv6 addresses and
Luhn-valid card numbers are appended to a real SQLite ledger; the learning step drafts them
through the http provider talking to a real OpenAI-compatible server on 127.0.0.1 that
records every request body. No generated value may appear in any body. Then the server
answers with personal data of its own, and none of it may reach the appended suggestions.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from completion_stub import stub_server
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import texts_with_personal_data

from engram.agents.completion import HttpCompleter
from engram.agents.lessons import Lessons
from engram.ledger import NewEvent
from engram.ledger.catalog import ScarRecorded
from engram.runtime import open_memory

LEAKS = ["ops@example.com", "+1 415-555-0134", "sk-proj-abcdefghijklmnop1234", "10.1.2.3"]


def scar(what: str, lesson: str, importance: int) -> NewEvent:
    payload = ScarRecorded(
        agent="inner", kind="failure", what=what, lesson=lesson, importance=importance
    )
    return NewEvent(stream="scar:inner", kind="scar.recorded", payload=payload)


def leaky(body: Any) -> dict[str, Any]:
    """A model that puts personal data of its own into every answer."""
    return {"destination": "rules", "text": "Call " + " or ".join(LEAKS) + " first."}


@settings(max_examples=25, deadline=None)
@given(
    cases=st.lists(
        st.tuples(texts_with_personal_data(), texts_with_personal_data()), min_size=1, max_size=4
    )
)
def test_no_personal_data_reaches_the_model_or_the_ledger(
    cases: list[tuple[tuple[str, list[str]], tuple[str, list[str]]]],
) -> None:
    planted = [v for (_, what), (_, lesson) in cases for v in what + lesson]
    with (
        tempfile.TemporaryDirectory() as tmp,
        stub_server() as server,
        open_memory(str(Path(tmp) / "ledger.db"), config="/dev/null") as memory,
    ):
        memory.ledger.append(
            [scar(w, lesson, 1 + i % 10) for i, ((w, _), (lesson, _)) in enumerate(cases)]
        )
        completer = HttpCompleter(base_url=server.base_url, model="stub", timeout=5)
        lessons = Lessons(memory.ledger, memory.engine, completer=completer)
        report = lessons.learn(batch=2)
        # Repeats are drafted together: every scar is cited once, one request a draft.
        assert sum(len(d.scars) for d in report.drafted) == len(cases), report.deferred
        assert len(server.requests) == len(report.drafted)
        for seen in server.requests:
            sent = seen.raw.decode() + json.dumps(seen.body, ensure_ascii=False)
            for value in planted:
                assert value not in sent, value
        # The output filter: a model answering with personal data of its own.
        memory.ledger.append(scar("another scar", "Check the logs.", 3))
        server.answer_with = leaky
        report = lessons.learn()
        (drafted,) = report.drafted
        assert report.filtered
        stored = [s.text for s in lessons.suggestions()]
        for value in [*LEAKS, *planted]:
            assert all(value not in text for text in stored), value
        assert drafted.text.count("[") >= len(LEAKS)
