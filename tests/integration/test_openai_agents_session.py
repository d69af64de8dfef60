"""engram as an OpenAI Agents SDK session, checked differentially against ``SQLiteSession``.

Hypothesis draws sequences of adds, reads (every kind of limit), pops and clears over two
sessions sharing one ledger; the SDK's own SQLite session runs the same calls and every answer
must be equal. Then: concurrent pops from two handles take each item once; one
``Runner.run`` with the SDK's scripted model keeps its history in engram; and, opted in, a
session's messages are memories that recall serves in another session.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("agents.memory.session_settings")

from agents import Agent, RunConfig, Runner, SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from tests_report import report

import engram
from engram.integrations.openai_agents import EngramSession, item_text

COUNTS = {"ops": 0, "examples": 0}

texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12)
items = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(
        lambda t: {
            "role": "assistant",
            "type": "message",
            "content": [{"type": "output_text", "text": t, "annotations": []}],
        },
        texts,
    ),
    st.builds(
        lambda n: {"type": "function_call", "call_id": f"c{n}", "name": "f", "arguments": "{}"},
        st.integers(0, 9),
    ),
)
sessions = st.sampled_from(["s1", "s2"])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), sessions, st.lists(items, max_size=3)),
        st.tuples(st.just("get"), sessions, st.sampled_from([None, 0, 1, 2, 5, -1])),
        st.tuples(st.just("pop"), sessions),
        st.tuples(st.just("clear"), sessions),
    ),
    min_size=5,
    max_size=40,
)


@pytest.fixture(scope="module")
def counts(request: pytest.FixtureRequest) -> Any:
    yield COUNTS
    report(
        request,
        f"openai-agents differential: {COUNTS['ops']} ops in {COUNTS['examples']} sequences",
    )


async def _run(op: tuple[Any, ...], session: Any) -> Any:
    kind = op[0]
    if kind == "add":
        return await session.add_items(op[2])
    if kind == "get":
        return await session.get_items(op[2])
    if kind == "pop":
        return await session.pop_item()
    return await session.clear_session()


@settings(max_examples=60, deadline=None)
@given(ops=operations)
def test_engram_answers_as_the_sdk_s_sqlite_session_does(
    ops: list[tuple[Any, ...]], tmp_path_factory: pytest.TempPathFactory, counts: dict[str, int]
) -> None:
    folder = tmp_path_factory.mktemp("oa")

    async def play() -> None:
        with engram.open_memory(str(folder / "ledger.db"), config=os.devnull) as memory:
            ours = {name: EngramSession(name, memory) for name in ("s1", "s2")}
            db = str(folder / "reference.db")
            theirs = {name: SQLiteSession(name, db) for name in ("s1", "s2")}
            try:
                for op in ops:
                    expected = await _run(op, theirs[op[1]])
                    got = await _run(op, ours[op[1]])
                    assert got == expected, op
                    counts["ops"] += 1
                for name in ("s1", "s2"):
                    assert await ours[name].get_items() == await theirs[name].get_items()
            finally:
                for session in theirs.values():
                    session.close()

    asyncio.run(play())
    counts["examples"] += 1


def test_concurrent_pops_take_each_item_once(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger, config=os.devnull) as memory:
        added = [{"role": "user", "content": f"m{i}"} for i in range(16)]
        asyncio.run(EngramSession("s", memory).add_items(added))
    popped: list[Any] = []
    lock = threading.Lock()

    def popper() -> None:
        with engram.open_memory(ledger, config=os.devnull) as memory:
            session = EngramSession("s", memory)
            for _ in range(8):
                item = asyncio.run(session.pop_item())
                with lock:
                    popped.append(item)

    threads = [threading.Thread(target=popper) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert sorted(i["content"] for i in popped) == sorted(i["content"] for i in added)
    with engram.open_memory(ledger, config=os.devnull) as memory:
        assert asyncio.run(EngramSession("s", memory).get_items()) == []


def test_a_runner_keeps_its_history_in_engram_and_remembers_across_sessions(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        [
            [assistant_message("Your flight to Lisbon leaves at 9:40.")],
            [assistant_message("It leaves at 9:40, from gate 12.")],
        ]
    )
    agent = Agent(name="travel", model=model, instructions="Answer briefly.")
    config = RunConfig(tracing_disabled=True)

    async def play() -> None:
        with engram.open_memory(str(tmp_path / "ledger.db"), config=os.devnull) as memory:
            session = EngramSession("trip-1", memory, remember="travel")
            first = await Runner.run(
                agent, "When is my flight to Lisbon?", session=session, run_config=config
            )
            assert first.final_output == "Your flight to Lisbon leaves at 9:40."
            await Runner.run(agent, "And the gate?", session=session, run_config=config)
            history = await session.get_items()
            assert [item_text(i) for i in history] == [
                "When is my flight to Lisbon?",
                "Your flight to Lisbon leaves at 9:40.",
                "And the gate?",
                "It leaves at 9:40, from gate 12.",
            ]
            # The model saw the first turn again on the second call: the session served it.
            assert "When is my flight to Lisbon?" in str(model.calls[1].input)
            later = EngramSession("trip-2", memory, remember="travel")
            assert await later.get_items() == []
            recalled = memory.agent("travel").recall("flight to Lisbon", k=3, record=False)
            assert any("Lisbon" in r.event.payload.text for r in recalled.items)
            kinds = {e.kind for e in memory.ledger.read()}
            assert {"session.items_added", "memory.observed"} <= kinds

    asyncio.run(play())


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ledger.db"), config=os.devnull) as memory:
        with pytest.raises(ValueError, match="session_id"):
            EngramSession("", memory)
        with pytest.raises(ValueError, match="remember"):
            EngramSession("s", memory, remember="")
        session = EngramSession("s", memory)
        with pytest.raises(TypeError, match="dict"):
            asyncio.run(session.add_items(["not an item"]))
        assert asyncio.run(session.get_items()) == []
