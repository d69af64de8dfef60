"""A routed model judges detection's candidates (``[complete.supersede]``, ADR 0075), over a
real OpenAI-compatible server on 127.0.0.1; on a model error the offline rule decides."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from completion_stub import Reply, StubServer, chat, stub_server

import engram
from engram.agents.supersession import routed_judge
from engram.runtime import Memory

EMBEDDING = '[embedding.default]\nprovider = "hash"\n'
#: Memories naming nobody (no capitalised word): nothing to replace among them, and the
#: name in OLD and NEW stays a rare word.
FILLER = [f"the {p} keeps {t}." for p in ("shed", "attic", "garage", "cellar", "barn", "loft")
          for t in ("bees", "old maps", "a boat", "two cats", "a diary")]  # fmt: skip
OLD = "Alice Moreau's phone number is 555 0101."
NEW = "Alice Moreau's phone number is now 555 0199."  # the offline rule takes this one


def _says(replaces: list[int], reason: str) -> Any:
    return lambda body: {"replaces": replaces, "reason": reason}


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[tuple[StubServer, Memory]]:
    with stub_server(_says([1], "the number changed")) as server:
        routing = tmp_path / "routing.toml"
        routing.write_text(
            EMBEDDING + f'[complete.supersede]\nprovider = "http"\nbase_url = "{server.base_url}"'
            '\nmodel = "stub"\ntimeout = 5\nbackoff = 0\n'
        )
        with engram.open_memory(
            str(tmp_path / "ledger.db"), routing=str(routing), supersede="review"
        ) as memory:
            yield server, memory


def _observed(memory: Memory, *texts: str) -> list[int]:
    ana = memory.agent("ana")
    for text in FILLER:
        ana.observe(text)
    return [ana.observe(text) for text in texts]


def test_the_routed_model_judges_and_its_reason_is_recorded(
    judged: tuple[StubServer, Memory],
) -> None:
    server, memory = judged
    old, new = _observed(memory, OLD, NEW)
    (proposal,) = memory.agent("ana").proposals()
    assert (proposal.new, proposal.replaces, proposal.method) == (new, [old], "model")
    assert proposal.why == "http:stub: the number changed"
    asked = [s for s in server.requests if s.path == "/v1/chat/completions"]
    assert len(asked) == 1
    prompt = json.loads(asked[0].body["messages"][1]["content"])
    assert prompt == {"new": NEW, "earlier": {"1": OLD}}


def test_the_model_saying_no_overrules_the_offline_rule(
    judged: tuple[StubServer, Memory],
) -> None:
    server, memory = judged
    server.answer_with = _says([], "both numbers are in use")
    _observed(memory, OLD, NEW)
    assert memory.agent("ana").proposals() == []
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {}),
        Reply(200, chat("not json")),
        Reply(200, chat(json.dumps({"replaces": [7], "reason": "no such candidate"}))),
    ],
)
def test_on_a_model_error_the_offline_rule_decides(
    judged: tuple[StubServer, Memory], reply: Reply
) -> None:
    server, memory = judged
    server.script += [reply] * 3  # every retry fails the same way
    old, new = _observed(memory, OLD, NEW)
    (proposal,) = memory.agent("ana").proposals()
    assert (proposal.new, proposal.replaces, proposal.method) == (new, [old], "overlap")
    assert "without the name" in proposal.why
    assert server.requests


def test_only_a_routed_model_judges(tmp_path: Path) -> None:
    assert routed_judge(None) is None
    offline = tmp_path / "offline.toml"
    offline.write_text(EMBEDDING + '[complete.supersede]\nprovider = "offline"\n')
    assert routed_judge(str(offline)) is None
    other = tmp_path / "learn.toml"
    other.write_text(
        EMBEDDING + '[complete.learn]\nprovider = "http"\nbase_url = "http://127.0.0.1:9/v1"'
        '\nmodel = "stub"\n'
    )
    assert routed_judge(str(other)) is None  # learn's route is not supersede's
    routed = tmp_path / "routed.toml"
    routed.write_text(other.read_text().replace("complete.learn", "complete.supersede"))
    judge = routed_judge(str(routed))
    assert judge is not None
    assert judge.fingerprint == "http:stub"
