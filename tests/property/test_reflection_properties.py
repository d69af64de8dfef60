"""Every reflection rests on real, visible, earlier events, at the depth it states.

Arbitrary histories: agents observe (public and private, with and without importance),
archive their own memories, and reflect now and then, offline or through a model that cites
arbitrary statements of the ones it is shown. Afterwards each ``memory.reflected`` event's
evidence must resolve to ledger events (by id, through the reflections projection and the
ledger both), each before the reflection, visible to its agent and not archived when it
reflected; its depth must be 1 + the deepest evidence (an observation is 0), and it must be
private when any evidence is.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engram.agents.insight import FocalQuestions
from engram.agents.reflection import reflect
from engram.ledger import Event
from engram.projections import reflections
from engram.runtime import open_memory

T = TypeVar("T", bound=msgspec.Struct)
T0 = datetime(2026, 3, 1, tzinfo=UTC)
AGENTS = ("ann", "bob", "cyd")
SUBJECTS = ("parser", "deploy", "tokenizer", "schedule", "lunch")
VERBS = ("failed", "passed", "moved", "broke")

texts = st.builds(
    "{}: the {} {} after the {}".format,
    st.sampled_from(["Bob", "Carol"]),
    st.sampled_from(SUBJECTS),
    st.sampled_from(VERBS),
    st.sampled_from(SUBJECTS),
)
steps = st.one_of(
    st.tuples(
        st.just("observe"),
        st.sampled_from(AGENTS),
        texts,
        st.sampled_from(["public", "public", "private"]),
        st.none() | st.integers(1, 10),
    ),
    st.tuples(st.just("archive"), st.sampled_from(AGENTS), st.integers(0, 50)),
    st.tuples(st.just("reflect"), st.sampled_from(AGENTS), st.sampled_from(["offline", "model"])),
)


class DrawnCompleter:
    """A model that asks about a subject and cites statements Hypothesis picks."""

    fingerprint = "drawn:test"

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        if schema is FocalQuestions:
            subject = self.data.draw(st.sampled_from(SUBJECTS), label="question")
            answer: Any = {"questions": [f"what about the {subject}?"]}
        else:
            shown = sum(1 for line in prompt.splitlines() if line[:1].isdigit())
            cited = self.data.draw(
                st.lists(st.integers(1, shown), min_size=1, max_size=4), label="cited"
            )
            about = prompt.split("what about the ", 1)[1].split("?", 1)[0]
            answer = {"insights": [{"text": f"the {about}: {cited}", "evidence": cited}]}
        return msgspec.json.decode(msgspec.json.encode(answer), type=schema)


def depth(event: Event) -> int:
    return int(event.payload.depth) if event.kind == "memory.reflected" else 0


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(plan=st.lists(steps, min_size=8, max_size=40), data=st.data())
def test_every_reflection_rests_on_visible_earlier_events_at_its_depth(
    plan: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_memory(str(Path(tmp) / "ledger.db"), config=os.devnull) as memory,
    ):
        own: dict[str, list[int]] = {a: [] for a in AGENTS}
        # Then each agent reflects on it all, observes once more, and reflects again: a
        # second reflection may rest on the first.
        coda = [("reflect", a, "offline") for a in AGENTS]
        coda += [
            ("observe", a, f"the {s} failed", "public", 5)
            for a, s in zip(AGENTS, SUBJECTS[:3], strict=True)
        ]
        modes = ["offline", "model", "offline"]
        coda += [("reflect", a, mode) for a, mode in zip(AGENTS, modes, strict=True)]
        for n, step in enumerate([*plan, *coda]):
            at = T0 + timedelta(minutes=n)
            agent = memory.agent(step[1])
            if step[0] == "observe":
                _, name, text, visibility, importance = step
                position = agent.observe(text, visibility=visibility, importance=importance, at=at)
                own[name].append(position)
            elif step[0] == "archive" and own[step[1]]:
                agent.archive([own[step[1]].pop(step[2] % len(own[step[1]]))])
            elif step[0] == "reflect":
                completer = DrawnCompleter(data) if step[2] == "model" else None
                outcome = reflect(agent, completer)
                assert outcome.status in ("reflected", "nothing-new", "no-insight"), outcome

        memory.engine.catch_up()
        events = {e.position: e for e in memory.ledger.read(0)}
        by_id = {e.id: e for e in events.values()}
        archived_at = {
            p: e.position
            for e in events.values()
            if e.kind == "memory.archived"
            for p in e.payload.positions
        }
        found = [e for e in events.values() if e.kind == "memory.reflected"]
        event(f"deepest reflection: {max((e.payload.depth for e in found), default=0)}")
        with memory.engine.read() as conn:
            assert reflections.unsupported(conn) == []
            for reflection in found:
                rows = reflections.evidence(conn, reflection.position)
                assert [r.id for r in rows] == reflection.payload.evidence
                cited = [by_id[id] for id in reflection.payload.evidence]  # resolves by id
                assert [r.position for r in rows] == [e.position for e in cited]
                agent = reflection.payload.agent
                for e in cited:
                    assert e.position < reflection.position
                    assert e.payload.visibility == "public" or e.payload.agent == agent
                    assert archived_at.get(e.position, 2**63) > reflection.position
                assert reflection.payload.depth == 1 + max(depth(e) for e in cited)
                private = any(e.payload.visibility == "private" for e in cited)
                assert (reflection.payload.visibility == "private") == private
