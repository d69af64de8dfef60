"""``engram mcp`` as a real server process, driven over stdio by the MCP SDK's own client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp_client import call, refused, server_pid  # noqa: E402

from engram.config import resolve_settings  # noqa: E402
from engram.ledger import Ledger  # noqa: E402
from engram.mcp.tools import MAX_ITEMS  # noqa: E402
from engram.runtime import open_settings  # noqa: E402

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
#: The seed's tool names, served beside engram's own.
SEED_TOOLS = (
    "kom.meta.v1.project_snapshot",
    "kom.local.v1.backup.import_encrypted",
    "kom.local.v1.backup.export_encrypted",
    "kom.memory.v1.search_memory",
    "kom.memory.v1.upsert_memory",
    "kom.memory.v1.recall_context",
    "kom.memory.v1.save_context",
)
#: engram.mcp.supersession_tools (tested in test_mcp_supersession.py).
SUPERSESSION_TOOLS = (
    "supersede_memory",
    "list_supersessions",
    "review_supersession",
    "revert_supersession",
)
TIMEOUT = 120.0


def params(db: Path, *agents: str) -> StdioServerParameters:
    if not db.exists():  # the server serves a ledger, never creates one (a mistyped path)
        Ledger.open(str(db)).close()
    args = ["-m", "engram", "mcp", "--ledger", str(db), "--pack-dir", str(db.parent)]
    for agent in agents:
        args += ["--agent", agent]
    env = {
        "ENGRAM_CONFIG": os.devnull,
        "ENGRAM_PACK_KEY": KEY,
        "PYTHONUNBUFFERED": "1",
        "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"],  # the SDK passes HOME, not this: keys
    }
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(db.parent))


def session(db: Path, *agents: str) -> Callable[[Callable[[Client], Awaitable[Any]]], Any]:
    """Run ``body`` against a fresh server for ``agents``; return what it returns."""

    def run(body: Callable[[Client], Awaitable[Any]]) -> Any:
        async def main() -> Any:
            async with Client(params(db, *agents), read_timeout_seconds=TIMEOUT) as client:
                return await body(client)

        return asyncio.run(asyncio.wait_for(main(), TIMEOUT))

    return run


def test_every_tool_over_stdio(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    pack = tmp_path / "shared.pack"

    async def body(client: Client) -> None:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {
            "search_memory",
            "upsert_memory",
            "recall_context",
            "save_context",
            "project_snapshot",
            "export_pack",
            "import_pack",
            "record_scar",
            "list_suggestions",
            "review_suggestion",
            "find_doctrine",
            "list_skills",
            *SUPERSESSION_TOOLS,
            *SEED_TOOLS,
        }
        assert listed["search_memory"].input_schema["properties"]["k"]["maximum"] == 100
        for tool in ("search_memory", "recall_context"):  # a floor on every recall surface
            assert "min_score" in listed[tool].input_schema["properties"]
        assert listed["search_memory"].description
        wrote = await call(
            client,
            "upsert_memory",
            observations=[
                {"text": "The nightly deploy failed: the cache was cold.", "tags": ["ops"]},
                {"text": "Alice's private hunch about the flaky test.", "visibility": "private"},
            ],
            concepts=[
                {
                    "id": "ops.deploy",
                    "type": "fact",
                    "label": "Deploy",
                    "links": [{"to": "ops", "rel": "in"}],
                }
            ],
        )
        assert wrote["agent"] == "alice"
        assert len(wrote["positions"]["observations"]) == 2
        found = await call(client, "search_memory", query="deploy cache", k=5)
        assert "cache was cold" in found["items"][0]["text"]
        hunch = await call(client, "search_memory", query="private hunch flaky test", k=5)
        assert any("hunch" in i["text"] for i in hunch["items"])
        as_bob = await call(client, "search_memory", query="private hunch flaky test", agent="bob")
        assert not any("hunch" in i["text"] for i in as_bob["items"])
        context = await call(client, "recall_context", query="why did the deploy fail", k=4)
        assert "cache was cold" in json.dumps(context["frames"])
        assert context["event_id"]
        assert context["tokens"] <= context["budget"]
        saved = await call(client, "save_context", frames={"scratchpad": "warm the cache"})
        scar = await call(
            client,
            "record_scar",
            outcome="failure",
            what="deploy failed",
            lesson="warm the cache before the nightly deploy",
            importance=7,
        )
        assert scar["position"] > saved["position"]
        # "kind" is outcome's deprecated name for one release (ADR 0069): it still records.
        old_name = await call(
            client, "record_scar", kind="victory", what="deploy went fine", lesson="warm first"
        )
        assert old_name["position"] > scar["position"]
        assert (await call(client, "list_suggestions"))["suggestions"] == []
        exported = await call(
            client,
            "export_pack",
            path=str(pack),
            name="ops",
            version="1",
            concepts="ops",
            from_agent="alice",
        )
        assert exported["nodes"] == 2  # the concept and the public memory, not the private one
        imported = await call(client, "import_pack", path=str(pack), agent="bob")
        assert imported["appended"] == 2
        again = await call(client, "import_pack", path=str(pack), agent="bob")
        assert again["appended"] == 0
        snapshot = await call(client, "project_snapshot")
        assert snapshot["ledger"]["head"] == again["position"]  # the record is the newest event
        assert snapshot["counts"]["concepts"] == 1
        assert set(snapshot["projections"]) >= {"lexical", "semantic", "concepts"}
        same = await call(client, "project_snapshot")
        assert same["snapshot"] == snapshot["snapshot"]

    session(db, "alice", "bob")(body)
    with Ledger.open(str(db), readonly=True) as ledger:
        kinds = [e.kind for e in ledger.read()]
        actors = {e.actor for e in ledger.read()}
        assert ledger.verify().ok
    assert kinds.count("context.saved") == 2
    assert kinds.count("pack.imported") == 1
    assert actors == {"alice", "bob"}


def test_bad_arguments_are_tool_errors_and_write_nothing(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"

    async def body(client: Client) -> None:
        await call(client, "upsert_memory", observations=[{"text": "a first memory"}])
        before = (await call(client, "project_snapshot"))["ledger"]["head"]
        messages = [
            await refused(client, "search_memory", query="", k=0),
            await refused(client, "search_memory", query="x", agent="mallory"),
            await refused(client, "search_memory", query="x", scope="everything"),
            await refused(client, "upsert_memory"),
            await refused(
                client,
                "upsert_memory",
                observations=[{"text": "ok"}],
                concepts=[{"id": "Not An Id", "type": "fact", "label": "x"}],
            ),
            await refused(client, "upsert_memory", observations=[{"text": "x", "importance": 11}]),
            await refused(client, "record_scar", outcome="oops", what="w", lesson="l"),
            await refused(client, "import_pack", path=str(tmp_path / "missing.pack")),
            await refused(client, "import_pack", path=str(db)),
            await refused(
                client, "export_pack", path=str(tmp_path / "x.pack"), name="n", version="1"
            ),
            await refused(
                client,
                "export_pack",
                path=str(tmp_path / "x.pack"),
                name="n",
                version="1",
                concepts="a",
                key_env="NO_SUCH_VARIABLE",
            ),
            await refused(client, "recall_context", query="q", scope="session"),
            await refused(client, "no_such_tool"),
            await refused(client, "review_suggestion", suggestion="nope", decision="applied"),
            await refused(
                client, "review_suggestion", suggestion="n", decision="applied", destination="bin"
            ),
            await refused(client, "find_doctrine", query="x", kind="rule"),
            await refused(client, "record_scar", kind="oops", what="w", lesson="l"),
            await refused(client, "record_scar", what="w", lesson="l"),
            await refused(
                client, "record_scar", outcome="failure", kind="failure", what="w", lesson="l"
            ),
        ]
        assert "may not review suggestions" in messages[13]  # no --reviewer (ADR 0183)
        assert "outcome is required" in messages[-2]
        assert "give outcome only" in messages[-1]
        assert (await call(client, "find_doctrine", query="first memory"))["items"] == []
        assert (await call(client, "list_skills"))["skills"] == []
        assert "mallory" in messages[1]
        assert "at least one" in messages[3]
        assert "concepts[0]" in messages[4]
        assert "not an engram pack" in messages[8]
        assert "NO_SUCH_VARIABLE" in messages[10]
        overwrite = await refused(
            client, "export_pack", path=str(db), name="n", version="1", concepts="a"
        )
        assert "exists" in overwrite
        # Checked whole before the first is written: a last item over the ledger's payload
        # limit, or a text of blanks alone, used to leave the items before it written.
        big = "x" * (1_100_000)
        for observations, says in (
            ([{"text": "kept out"}, {"text": big}], "observations[1]: payload is"),
            ([{"text": "kept out"}, {"text": " \n\t"}], "observations[1]: text holds nothing"),
            ([{"text": f"memory {i}"} for i in range(MAX_ITEMS + 1)], "at most 100"),
        ):
            message = await refused(client, "upsert_memory", observations=observations)
            assert says in message, message
        after = await call(client, "project_snapshot")
        assert after["ledger"]["head"] == before  # every refusal wrote nothing
        found = await call(client, "search_memory", query="first memory")
        assert found["items"]

    session(db, "alice")(body)


def test_concurrent_calls_are_all_answered_and_all_stored(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"

    async def body(client: Client) -> list[dict[str, Any]]:
        writes = [
            call(client, "upsert_memory", observations=[{"text": f"parallel note number {i}"}])
            for i in range(24)
        ]
        reads = [call(client, "search_memory", query="parallel note") for _ in range(8)]
        return await asyncio.gather(*writes, *reads)

    results = session(db, "alice")(body)
    positions = [p for r in results[:24] for p in r["positions"]["observations"]]
    assert len(set(positions)) == 24
    with _reader(db) as ledger:
        texts = {e.payload.text for e in ledger.read(kinds=["memory.observed"])}
    assert texts == {f"parallel note number {i}" for i in range(24)}


def _reader(db: Path) -> Ledger:
    """Open the server's ledger read-only with its key store: texts are sealed (ADR 0086)."""
    return open_settings(resolve_settings(str(db)), readonly=True)


def test_a_killed_server_loses_nothing_it_acknowledged(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    acked: list[str] = []

    async def body(client: Client) -> None:
        await call(client, "upsert_memory", observations=[{"text": "before the burst"}])
        acked.append("before the burst")

        async def write(i: int) -> None:
            text = f"burst memory {i}"
            result = await client.call_tool(
                "upsert_memory", {"observations": [{"text": text}]}, read_timeout_seconds=30
            )
            if not result.is_error:
                acked.append(text)

        tasks = [asyncio.ensure_future(write(i)) for i in range(200)]
        while len(acked) < 20:
            await asyncio.sleep(0.01)
        os.kill(server_pid(), signal.SIGKILL)
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        lost.extend(o for o in outcomes if isinstance(o, BaseException))

    lost: list[BaseException] = []
    session(db, "alice")(body)
    assert lost  # the kill landed mid-burst: calls in flight were never answered
    assert 20 <= len(acked) <= 201 - len(lost)
    with _reader(db) as ledger:
        assert ledger.verify().ok
        stored = {e.payload.text for e in ledger.read(kinds=["memory.observed"])}
    assert set(acked) <= stored

    async def resumed(client: Client) -> dict[str, Any]:
        await call(client, "upsert_memory", observations=[{"text": "after the restart"}])
        return await call(client, "search_memory", query="before the burst", k=3)

    found = session(db, "alice")(resumed)
    assert found["items"][0]["text"] == "before the burst"


def _wait_for(server: Any, port: int) -> None:
    """Wait until the server process listens on ``port`` (a minute at most)."""
    import socket
    import time

    deadline = time.monotonic() + 60
    while True:
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.2)


def test_streamable_http_serves_the_same_tools(tmp_path: Path) -> None:
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()
    argv = [sys.executable, "-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice",
            "--transport", "http", "--port", str(port)]  # fmt: skip
    env = {**os.environ, "ENGRAM_CONFIG": os.devnull}
    server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for(server, port)
        # ADR 0125: a client that never finishes its headers is let go (it held a file
        # descriptor for ever); the real clients' requests go on being served meanwhile.
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")

        async def body() -> dict[str, Any]:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await call(client, "upsert_memory", observations=[{"text": "told over HTTP"}])
                return await call(client, "search_memory", query="HTTP")

        found = asyncio.run(asyncio.wait_for(body(), TIMEOUT))
        assert found["items"][0]["text"] == "told over HTTP"
        with slow:
            slow.settimeout(30)
            assert slow.recv(4096) == b"", "a half-told request held its connection"
    finally:
        server.terminate()
        server.wait(timeout=30)
        told = ""
        if server.stderr is not None:
            told = server.stderr.read().decode(errors="replace")
            server.stderr.close()
    assert f"serving MCP over streamable HTTP at http://127.0.0.1:{port}/mcp" in told


def test_a_client_of_the_seed_s_contract_works_with_its_names_alone(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    pack = tmp_path / "seed.pack"

    async def body(client: Client) -> dict[str, Any]:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert set(SEED_TOOLS) <= listed
        wrote = await call(
            client,
            "kom.memory.v1.upsert_memory",
            observations=[{"text": "The staging database password rotates every Monday"}],
            concepts=[{"id": "skill.ops.rotation", "type": "skill", "label": "key rotation"}],
        )
        assert len(wrote["positions"]["observations"]) == 1
        found = await call(client, "kom.memory.v1.search_memory", query="password rotates")
        assert found["items"][0]["text"].startswith("The staging database password")
        saved = await call(
            client,
            "kom.memory.v1.save_context",
            session="s-42",
            task="rotate keys",
            context={"scratchpad": "step 2 of 3: staging done, prod next"},
        )
        assert saved["position"] > 0
        text_only = await call(
            client, "kom.memory.v1.save_context", session="s-43", context="just a note"
        )
        assert text_only["position"] > saved["position"]
        again = await call(client, "kom.memory.v1.recall_context", session="s-42")
        assert again["saved"] is True
        assert again["frames"]["scratchpad"] == "step 2 of 3: staging done, prod next"
        assert (await call(client, "kom.memory.v1.recall_context", session="s-43"))["frames"] == {
            "scratchpad": "just a note"
        }
        fresh = await call(
            client,
            "kom.memory.v1.recall_context",
            query="key rotation",
            session="never-saved",
            types=["skill"],
        )
        assert fresh["saved"] is False
        assert {i["type"] for i in fresh["items"]} <= {"skill"}
        refusal = await refused(client, "kom.memory.v1.recall_context", session="never-saved")
        assert "give a `query`" in refusal
        snapshot = await call(client, "kom.meta.v1.project_snapshot")
        exported = await call(
            client,
            "kom.local.v1.backup.export_encrypted",
            path=str(pack),
            name="seed",
            version="1",
            concepts="skill",
        )
        imported = await call(client, "kom.local.v1.backup.import_encrypted", path=str(pack))
        return {"snapshot": snapshot, "exported": exported, "imported": imported}

    done = session(db, "alice")(body)
    assert done["snapshot"]["ledger"]["head"] > 0
    assert pack.is_file()


def test_http_beyond_loopback_needs_a_token_and_every_request_carries_it(tmp_path: Path) -> None:
    # ADR 0124: bound to 0.0.0.0 without a token, anyone reaching the port called the tools
    # as any agent served. A host other than loopback is refused without a token; with one,
    # a request lacking it is answered 401 before the SDK reads it.
    import socket
    import subprocess

    import httpx

    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()
    env = {**os.environ, "ENGRAM_CONFIG": os.devnull}
    env.pop("ENGRAM_MCP_TOKEN", None)
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "engram",
            "mcp",
            "--ledger",
            str(db),
            "--agent",
            "alice",
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    assert "not a loopback address: choose a token" in refused.stderr
    stranger = subprocess.run(
        [sys.executable, "-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice",
         "--reviewer", "mallory"],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert stranger.returncode == 2
    assert "--reviewer: mallory is not an --agent name" in stranger.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = "t0ken-" + "x" * 20
    argv = [sys.executable, "-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice",
            "--transport", "http", "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(
        argv, env={**env, "ENGRAM_MCP_TOKEN": token}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(server, port)
        hello = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "1"}},
        }  # fmt: skip
        headers = {"accept": "application/json, text/event-stream"}
        url = f"http://127.0.0.1:{port}/mcp"
        bare = httpx.post(url, json=hello, headers=headers, timeout=30)
        assert bare.status_code == 401
        wrong = httpx.post(url, json=hello, timeout=30,
                           headers={**headers, "authorization": "Bearer " + "y" * 26})  # fmt: skip
        assert wrong.status_code == 401
        right = httpx.post(url, json=hello, timeout=30,
                           headers={**headers, "authorization": f"Bearer {token}"})  # fmt: skip
        assert right.status_code == 200, right.text
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_requests_read_before_stdin_ends_are_all_answered_and_stored(tmp_path: Path) -> None:
    # ADR 0125: a client that wrote its calls and closed stdin got "Connection closed" for
    # every one, while the one in flight was stored: a retry would store it twice.
    import subprocess

    db = tmp_path / "ledger.db"
    Ledger.open(str(db)).close()
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "batch", "version": "1"}}}  # fmt: skip
    calls = [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call",
         "params": {"name": "upsert_memory",
                    "arguments": {"observations": [{"text": f"batch note {n}"}]}}}
        for n in range(1, 13)
    ]  # fmt: skip
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    lines = "\n".join(json.dumps(m) for m in [hello, ready, *calls]) + "\n"
    argv = [sys.executable, "-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice"]
    env = {**os.environ, "ENGRAM_CONFIG": os.devnull}
    done = subprocess.run(argv, input=lines, capture_output=True, text=True, env=env, timeout=120)
    answers = {m["id"]: m for m in map(json.loads, filter(str.strip, done.stdout.splitlines()))}
    assert all("result" in answers[n] for n in range(1, 13)), done.stdout[-500:]
    with Ledger.open(str(db), readonly=True) as ledger:
        stored = [e for e in ledger.read(kinds=["memory.observed"])]
    assert len(stored) == 12
