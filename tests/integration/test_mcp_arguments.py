"""How ``engram mcp`` takes a tool's arguments, driven by the SDK's own client.

Every tool takes numbers as their JSON type only, refuses an argument it has no parameter
for, and tells a bad argument in one line per field naming it and what it must be; a refusal
writes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp_client import call, refused, serve  # noqa: E402

import engram  # noqa: E402

MAX_POSITION = 2**63 - 1
AGENTS = ("alice", "bob")


async def head(client: Client) -> int:
    return int((await call(client, "project_snapshot"))["ledger"]["head"])


def test_recall_context_takes_numbers_as_their_json_type_only(tmp_path: Path) -> None:
    """``k: true`` is not one item, ``"2"`` not two, ``2.0`` not an integer: engram's and the
    seed's recall_context refuse them by name, as search_memory does, and record nothing."""
    wrong = [
        ("k", True), ("k", "2"), ("k", 2.0), ("budget", "500"), ("budget", 500.0),
        ("min_score", True), ("min_score", "0.5"),
    ]  # fmt: skip

    async def body(client: Client) -> tuple[list[tuple[str, str]], int, int, dict[str, Any]]:
        await call(client, "upsert_memory", observations=[{"text": "deploy note one"}])
        before = await head(client)
        refusals = [
            (name, await refused(client, tool, query="deploy note", **{name: value}))
            for tool in ("recall_context", "kom.memory.v1.recall_context")
            for name, value in wrong
        ]
        after = await head(client)
        fine = await call(client, "recall_context", query="deploy", k=2, budget=500, min_score=0)
        return refusals, before, after, fine

    refusals, before, after, fine = serve(tmp_path / "ledger.db", body, agents=AGENTS)
    for name, message in refusals:
        assert f": {name} must be a valid" in message, message
    assert after == before
    assert fine["budget"] == 500


def test_the_seed_s_save_context_with_nothing_to_save_says_so(tmp_path: Path) -> None:
    async def body(client: Client) -> list[str]:
        return [
            await refused(client, "kom.memory.v1.save_context", session="s1"),
            await refused(client, "kom.memory.v1.save_context", session="s1", context={}),
            await refused(client, "kom.memory.v1.save_context", session="s1", context=None),
        ]

    for message in serve(tmp_path / "ledger.db", body, agents=AGENTS):
        assert message.endswith("give the context to save: `context` (frames or text)"), message


def test_a_position_past_the_ledger_s_range_is_refused_by_name(tmp_path: Path) -> None:
    """2**63 fits no ledger position: each supersession tool names the argument and its
    range (it crashed review and revert with an OverflowError)."""
    too_big = MAX_POSITION + 1

    async def body(client: Client) -> dict[str, str]:
        return {
            "proposal": await refused(
                client, "review_supersession", proposal=too_big, decision="refused"
            ),
            "event": await refused(client, "revert_supersession", event=too_big),
            "position": await refused(client, "supersede_memory", position=too_big, replaces=[1]),
            "replaces[0]": await refused(
                client, "supersede_memory", position=2, replaces=[too_big]
            ),
        }

    for name, message in serve(tmp_path / "ledger.db", body, agents=AGENTS).items():
        assert f": {name} must be less than or equal to {MAX_POSITION}" in message, message


def test_the_python_api_refuses_a_position_past_the_ledger_s_range(tmp_path: Path) -> None:
    from engram.mcp.supersession_tools import SupersessionTools
    from engram.mcp.tools import MemoryTools, ToolInputError

    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        tools = SupersessionTools(MemoryTools(memory, ["alice"]))
        with pytest.raises(ToolInputError, match=f"proposal .* in 1..{MAX_POSITION}"):
            tools.review_supersession(MAX_POSITION + 1, "refused")
        with pytest.raises(ToolInputError, match=f"event .* in 1..{MAX_POSITION}"):
            tools.revert_supersession(MAX_POSITION + 1)


def test_an_argument_error_is_one_line_per_field(tmp_path: Path) -> None:
    """Each wrong field is one line naming it, what it must be and what it got; no library
    dump (model names, error types, a URL)."""

    async def body(client: Client) -> dict[str, str]:
        return {
            "k": await refused(client, "search_memory", query="x", k=0),
            "three": await refused(client, "search_memory", query="", k=True, scope="all of it"),
            "missing": await refused(client, "search_memory"),
            "nested": await refused(
                client, "upsert_memory", observations=[{"text": "x", "importance": 11, "b": 1}]
            ),
            "union": await refused(client, "kom.memory.v1.save_context", context=5),
            "list": await refused(client, "list_suggestions", status="done"),
        }

    got = serve(tmp_path / "ledger.db", body, agents=AGENTS)
    prefix = "Error executing tool search_memory: "
    assert got["k"] == prefix + "k must be greater than or equal to 1, got 0"
    assert got["three"].removeprefix(prefix).splitlines() == [
        'query must have at least 1 character, got ""',
        "k must be a valid integer, got true",
        "scope must be 'memories', 'scars', 'victories', 'reflections', 'rules' or 'all',"
        ' got "all of it"',
    ]
    assert got["missing"] == prefix + "query is required"
    assert got["nested"].split(": ", 1)[1].splitlines() == [
        "observations[0].importance must be less than or equal to 10, got 11",
        "observations[0].b is not a field here; leave it out",
    ]
    assert got["union"].endswith(": context must be a valid dictionary or a valid string, got 5")
    assert "status must be" in got["list"], got["list"]
    assert '"done"' in got["list"], got["list"]
    for message in got.values():
        for dump in ("pydantic", "http", "validation error", "[type=", "Arguments"):
            assert dump not in message, message


def test_an_unknown_argument_is_refused_by_every_tool(tmp_path: Path) -> None:
    """A misspelled ``agent`` no longer writes as the default agent, nor ``limit`` stands in
    for ``k`` unnoticed: every tool names the argument it does not have, and writes nothing."""

    async def body(client: Client) -> tuple[str, str, dict[str, str], int, int]:
        before = await head(client)
        agnet = await refused(
            client, "upsert_memory", observations=[{"text": "bob's note"}], agnet="bob"
        )
        limit = await refused(client, "search_memory", query="note", limit=1)
        names = [t.name for t in (await client.list_tools()).tools]
        every = {name: await refused(client, name, zzz_unknown=1) for name in names}
        return agnet, limit, every, before, await head(client)

    agnet, limit, every, before, after = serve(tmp_path / "ledger.db", body, agents=AGENTS)
    assert "unknown argument 'agnet'; the arguments are: observations, concepts, agent" in agnet
    assert "unknown argument 'limit'" in limit
    assert len(every) > 20
    for name, message in every.items():
        assert message.startswith(f"Error executing tool {name}: unknown argument 'zzz_unknown'")
    assert after == before


def test_suggestions_are_listed_by_one_status_or_several(tmp_path: Path) -> None:
    # The docs show list_suggestions(status) with one status; a lone string was refused.
    db = tmp_path / "ledger.db"
    with engram.open_memory(str(db)) as memory:
        memory.scars("alice").record("failure", "the deploy locked a table", "use lock timeouts")
        (drafted,) = memory.lessons().learn().drafted

    async def body(client: Client) -> list[list[str]]:
        return [
            [s["id"] for s in (await call(client, "list_suggestions", **status))["suggestions"]]
            for status in ({"status": "pending"}, {"status": ["pending"]}, {"status": "applied"})
        ]

    one, several, applied = serve(db, body, agents=AGENTS)
    assert one == several == [drafted.suggestion]
    assert applied == []
