"""The MCP supersession tools, over stdio, driven by the MCP SDK's own client (ADR 0075)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp_client import call, refused  # noqa: E402

import engram  # noqa: E402
from engram.ledger import Ledger, NewEvent  # noqa: E402
from engram.ledger.catalog import SupersessionProposed  # noqa: E402

TIMEOUT = 120.0
TOOLS = {"supersede_memory", "list_supersessions", "review_supersession", "revert_supersession"}


def _proposal(db: Path, agent: str, new: int, old: int) -> int:
    """Append what detection appends under the review policy: a proposal."""
    payload = SupersessionProposed(
        agent=agent, position=new, replaces=[old], similarity=0.71, reason="shares live"
    )
    with Ledger.open(str(db)) as ledger:
        return ledger.append(NewEvent.of(payload, stream=f"agent:{agent}", actor=agent))[0]


def test_supersession_tools_act_as_the_calling_agent(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    with engram.open_memory(str(db), supersede="off") as memory:
        alice, bob = memory.agent("alice"), memory.agent("bob")
        for i in range(30):  # names stay rare words, as in a real store
            alice.observe(f"The nightly build number {i} passed its checks.")
        paris = alice.observe("Alice Moreau lives in Paris.")
        berlin = alice.observe("Alice Moreau moved to Berlin.")
        volvo = alice.observe("Alice Moreau drives a red Volvo.")
        fiat = alice.observe("Alice Moreau now drives a blue Fiat.")
        rome = bob.observe("Bob Rossi lives in Rome.")
        lima = bob.observe("Bob Rossi moved to Lima.")
    moved = _proposal(db, "alice", berlin, paris)
    car = _proposal(db, "alice", fiat, volvo)
    bobs = _proposal(db, "bob", lima, rome)
    env = {
        "ENGRAM_CONFIG": os.devnull,
        "PYTHONUNBUFFERED": "1",
        "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"],  # the SDK passes HOME, not this: keys
    }
    args = ["-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice", "--agent", "bob"]
    server = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))

    async def body(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) >= TOOLS
        assert listed["list_supersessions"].annotations.read_only_hint  # type: ignore[union-attr]
        pending = await call(client, "list_supersessions")
        assert [i["event"] for i in pending["items"]] == [moved, car]
        first = pending["items"][0]
        assert first["new"] == {"position": berlin, "text": "Alice Moreau moved to Berlin."}
        assert first["replaces"] == [{"position": paris, "text": "Alice Moreau lives in Paris."}]
        assert first["similarity"] == pytest.approx(0.71)
        assert first["why"] == "shares live"
        as_bob = await call(client, "list_supersessions", agent="bob")
        assert [i["event"] for i in as_bob["items"]] == [bobs]
        head = (await call(client, "project_snapshot"))["ledger"]["head"]
        messages = [
            await refused(client, "review_supersession", proposal=moved, decision="applied",
                          agent="bob"),
            await refused(client, "review_supersession", proposal=moved, decision="maybe"),
            await refused(client, "review_supersession", proposal=paris, decision="applied"),
            await refused(client, "revert_supersession", event=moved),
            await refused(client, "supersede_memory", position=volvo, replaces=[fiat]),
            await refused(client, "supersede_memory", position=fiat, replaces=[rome]),
            await refused(client, "supersede_memory", position=fiat, replaces=[]),
            await refused(client, "supersede_memory", position=fiat, replaces=[volvo],
                          valid_from="last week"),
            await refused(client, "supersede_memory", position=fiat, replaces=[volvo],
                          valid_from="2026-01-01T00:00:00"),
            await refused(client, "list_supersessions", status="everything"),
            await refused(client, "list_supersessions", agent="mallory"),
        ]  # fmt: skip
        assert "about bob's memories" in messages[0]
        assert "only earlier ones" in messages[4]
        assert "only its own" in messages[5]
        assert "not an ISO 8601 time" in messages[7]
        assert "no timezone" in messages[8]
        assert (await call(client, "project_snapshot"))["ledger"]["head"] == head
        review = await call(
            client, "review_supersession", proposal=moved, decision="applied", note="she did"
        )
        await call(client, "review_supersession", proposal=car, decision="refused")
        assert "already" in await refused(
            client, "review_supersession", proposal=moved, decision="refused"
        )
        applied = await call(client, "list_supersessions", status="applied")
        assert [(i["event"], i["new"]["position"]) for i in applied["items"]] == [
            (review["event"], berlin)
        ]
        assert applied["items"][0]["method"] == "reviewed"
        found = await call(client, "search_memory", query="Where does Alice Moreau live?", k=5)
        labels = {i["position"]: i["replaced_by"] for i in found["items"]}
        assert labels[paris] == berlin
        assert labels[berlin] is None
        assert "no supersession of bob's" in await refused(
            client, "revert_supersession", event=review["event"], agent="bob"
        )
        await call(client, "revert_supersession", event=review["event"], note="moved back")
        assert (await call(client, "list_supersessions", status="applied"))["items"] == []
        explicit = await call(
            client, "supersede_memory", position=fiat, replaces=[volvo],
            valid_from="2026-03-01T00:00:00Z",
        )  # fmt: skip
        assert explicit["replaces"] == [volvo]

    async def main() -> None:
        async with Client(server, read_timeout_seconds=TIMEOUT) as client:
            await body(client)

    asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    with Ledger.open(str(db), readonly=True) as ledger:
        tail = [e for e in ledger.read(bobs) if e.kind != "memory.recalled"]
        assert ledger.verify().ok
    assert [(e.kind, e.actor) for e in tail] == [
        ("supersession.reviewed", "alice"),
        ("supersession.reviewed", "alice"),
        ("supersession.reverted", "alice"),
        ("memory.superseded", "alice"),
    ]
    assert tail[0].payload.reviewer == "alice"
    assert tail[0].payload.note == "she did"
    assert tail[3].payload.valid_from.isoformat() == "2026-03-01T00:00:00+00:00"
