"""What a model may not do through ``engram mcp`` (issue 26): driven by the SDK's own client.

The pack tools touch files only inside the folder the user names, never a device, a FIFO, a
path out of it (by ``..``, an absolute path or a symbolic link) or an oversized file; the
schema carries the tools' own limits.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp_client import KEY, call, refused, serve, server_pid  # noqa: E402

from engram.ledger import Ledger  # noqa: E402

REPO = Path(__file__).parents[2]
PACK = REPO / "packs" / "engram-adrs.pack"


def test_the_pack_tools_refuse_until_the_user_names_their_folder(tmp_path: Path) -> None:
    shutil.copy(PACK, tmp_path / "adrs.pack")

    async def body(client: Client) -> list[str]:
        return [
            await refused(client, "import_pack", path=str(tmp_path / "adrs.pack")),
            await refused(client, "export_pack", path="x.pack", name="n", version="1", select="a"),
        ]

    for message in serve(tmp_path / "ledger.db", body):
        assert "pack tools are off" in message
        assert "--pack-dir" in message
    assert sorted(os.listdir(tmp_path)) == ["adrs.pack", "ledger.db", "ledger.db.projections"]


def test_the_pack_tools_stay_inside_their_folder(tmp_path: Path) -> None:
    packs, outside = tmp_path / "packs", tmp_path / "outside"
    packs.mkdir()
    outside.mkdir()
    shutil.copy(PACK, packs / "adrs.pack")
    shutil.copy(PACK, outside / "real.pack")
    os.mkfifo(packs / "fifo.pack")
    (packs / "zero.pack").symlink_to("/dev/zero")
    (packs / "link.pack").symlink_to(outside / "real.pack")
    (packs / "out").symlink_to(outside)
    with open(packs / "big.pack", "wb") as big:  # sparse: 300 MiB that take no disk
        big.write(b"ENGRAMPK")
        big.truncate(300 << 20)
    db = tmp_path / "ledger.db"

    async def body(client: Client) -> dict[str, Any]:
        head = (await call(client, "project_snapshot"))["ledger"]["head"]
        got = {
            "fifo": await refused(client, "import_pack", path="fifo.pack"),
            "device": await refused(client, "import_pack", path="/dev/zero"),
            "device link": await refused(client, "import_pack", path="zero.pack"),
            "link out": await refused(client, "import_pack", path="link.pack"),
            "dot dot": await refused(client, "import_pack", path="../outside/real.pack"),
            "absolute": await refused(client, "import_pack", path=str(outside / "real.pack")),
            "folder": await refused(client, "import_pack", path="."),
            "oversize": await refused(client, "import_pack", path="big.pack"),
            "export out": await refused(
                client, "export_pack", path="out/x.pack", name="n", version="1", select="adr"
            ),
            "export abs": await refused(
                client, "export_pack", path="/tmp/x.pack", name="n", version="1", select="adr"
            ),
            "export over": await refused(
                client, "export_pack", path="adrs.pack", name="n", version="1", select="adr"
            ),
        }
        got["unchanged"] = (await call(client, "project_snapshot"))["ledger"]["head"] == head
        got["import"] = await call(client, "import_pack", path="adrs.pack")
        got["export"] = await call(
            client, "export_pack", path="mine.pack", name="mine", version="1", concepts="adr"
        )
        return got

    got = serve(db, body, pack_dir=packs)
    assert "not a regular file" in got["fifo"]
    for name in ("device", "device link", "link out", "dot dot", "absolute", "export out"):
        assert "outside the pack folder" in got[name], (name, got[name])
    assert "outside the pack folder" in got["folder"]
    assert "may have at most" in got["oversize"]
    assert "outside the pack folder" in got["export abs"]
    assert "exists" in got["export over"]
    assert got["unchanged"]
    assert got["import"]["appended"] == got["import"]["nodes"] > 0
    assert (packs / "mine.pack").is_file()
    assert sorted(os.listdir(outside)) == ["real.pack"]


def test_the_schema_carries_the_budget_the_tool_accepts(tmp_path: Path) -> None:
    from engram.agents.context import MAX_BUDGET, MIN_BUDGET

    async def body(client: Client) -> tuple[dict[str, Any], str]:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["recall_context"].input_schema["properties"]["budget"]
        over = await refused(client, "recall_context", query="q", budget=MAX_BUDGET + 1)
        return schema, over

    schema, over = serve(tmp_path / "ledger.db", body)
    assert (schema["minimum"], schema["maximum"]) == (MIN_BUDGET, MAX_BUDGET)
    assert "budget" in over


def test_numbers_and_flags_are_taken_as_their_json_type_only(tmp_path: Path) -> None:
    """JSON ``true`` is not the integer 1, nor ``1`` a yes: such arguments are refused by name,
    the same as the Python API refuses them, and a well-typed call still answers."""

    async def body(client: Client) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        await call(client, "upsert_memory", observations=[{"text": "the build uses uv"}])
        refusals = [
            await refused(client, "search_memory", query="build", k=True),
            await refused(client, "search_memory", query="build", k=2.5),
            await refused(client, "search_memory", query="build", min_score=True),
            await refused(client, "recall_context", query="build", budget=False),
            await refused(client, "list_suggestions", limit=True),
            await refused(
                client, "upsert_memory", observations=[{"text": "x", "importance": True}]
            ),
        ]
        fine = await call(client, "search_memory", query="build", k=1, min_score=0)
        fraction = await call(client, "search_memory", query="build", min_score=0.0)
        return refusals, fine, fraction

    refusals, fine, fraction = serve(tmp_path / "ledger.db", body)
    for message, name in zip(
        refusals, ["k", "k", "min_score", "budget", "limit", "importance"], strict=True
    ):
        assert name in message, message
    assert [i["text"] for i in fine["items"]] == ["the build uses uv"]
    assert fraction["items"]


SECRET = "alice keeps her spare key under the blue flowerpot"


def _files_hold(folder: Path, text: bytes) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and text in p.read_bytes()]


def test_what_an_agent_saves_is_sealed_and_forgotten_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from starlette.testclient import TestClient

    from engram.cli import main
    from engram.config import resolve_settings
    from engram.hub import HubConfig, create_app

    db = tmp_path / "ledger.db"
    config = tmp_path / "engram.toml"
    config.write_text(f'keys = "{tmp_path / "keys.db"}"\n')
    options = ["--ledger", str(db), "--config", str(config)]

    async def body(client: Client) -> dict[str, Any]:
        wrote = await call(client, "upsert_memory", observations=[{"text": "the deploy is at 3"}])
        (position,) = wrote["positions"]["observations"]
        saved = await call(
            client,
            "save_context",
            frames={
                "scratchpad": SECRET,
                "episodic": [
                    {"pos": position, "type": "observation", "text": "the deploy is at 3"}
                ],
                "plan": [{"step": 1, "do": SECRET}],
            },
            task="water the plants",
        )
        return {**saved, "quoted": position}

    saved = serve(db, body, ENGRAM_CONFIG=str(config))
    assert _files_hold(tmp_path, SECRET.encode()) == []  # sealed from the first write
    with Ledger.open(str(db), readonly=True, sealer=_sealer(tmp_path)) as ledger:
        (event,) = ledger.get([saved["position"]])
    assert SECRET in event.payload.notes  # alice can still read what she saved
    assert event.payload.frames == {"episodic": [{"pos": saved["quoted"]}]}

    assert main([*options, "forget", "alice", "--yes"]) == 0
    assert main([*options, "rebuild"]) == 0
    sql = f"select * from ledger.events where position = {saved['position']}"
    assert main([*options, "sql", sql, "--format", "json"]) == 0
    shown = capsys.readouterr().out
    assert f'"position": {saved["position"]}' in shown
    assert "flowerpot" not in shown
    assert b"flowerpot".hex() not in shown
    assert _files_hold(tmp_path, SECRET.encode()) == []
    with Ledger.open(str(db), readonly=True, sealer=_sealer(tmp_path)) as ledger:
        (event,) = ledger.get([saved["position"]])
    assert (event.payload.notes, event.payload.task) == ("[forgotten]", "[forgotten]")
    settings = resolve_settings(str(db), config=str(config))
    hub = HubConfig(settings=settings, token="t" * 32)
    with TestClient(create_app(hub), base_url="http://127.0.0.1") as web:
        web.headers["Authorization"] = "Bearer " + "t" * 32
        page = web.get(f"/ledger/event/{saved['position']}")
    assert page.status_code == 200
    assert "[forgotten]" in page.text
    assert "flowerpot" not in page.text


def _sealer(folder: Path) -> Any:
    from engram.ledger import KeyStore, Sealer

    return Sealer(KeyStore(folder / "keys.db", create=False))


def _answers(db: Path, lines: dict[str, bytes]) -> tuple[dict[str, Any], Any]:
    """Write each line to a fresh ``engram mcp``'s stdin after the handshake; return each
    line's answer, and the answer to a well-formed request sent after them all."""
    import select
    import subprocess

    from mcp.types import jsonrpc_message_adapter

    if not db.exists():
        Ledger.open(str(db)).close()
    argv = [sys.executable, "-m", "engram", "mcp", "--ledger", str(db), "--agent", "alice"]
    env = {**os.environ, "ENGRAM_CONFIG": os.devnull}
    client = {"name": "t", "version": "1"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.DEVNULL}
    with subprocess.Popen(argv, env=env, **pipes) as server:  # type: ignore[call-overload]

        def ask(line: bytes) -> Any:
            server.stdin.write(line + b"\n")
            server.stdin.flush()
            ready, _, _ = select.select([server.stdout], [], [], 60)
            assert ready, f"no answer to {line[:60]!r}"
            return jsonrpc_message_adapter.validate_json(server.stdout.readline())

        try:
            start = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
            ask(json.dumps(start).encode())
            server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            answers = {name: ask(line) for name, line in lines.items()}
            still = ask(b'{"jsonrpc":"2.0","id":9,"method":"tools/list"}')
        finally:
            server.kill()
    return answers, still


def test_a_line_the_sdk_cannot_read_gets_a_json_rpc_error(tmp_path: Path) -> None:
    """Bad JSON, a lone surrogate, deep nesting, JSON that is no message: each answered."""
    from mcp.types import INVALID_REQUEST, PARSE_ERROR, JSONRPCError

    bad = {
        "not json": b"{not json",
        "lone surrogate": b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":'
        + b'{"a":"\\ud800"}}',
        "deep": b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"a":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}",
        "no message": b'{"hello": "world"}',
    }
    answers, still = _answers(tmp_path / "ledger.db", bad)
    for name, answer in answers.items():
        assert isinstance(answer, JSONRPCError), name
        assert answer.id is None
    codes = {name: a.error.code for name, a in answers.items()}
    assert codes == {
        "not json": PARSE_ERROR,
        "lone surrogate": PARSE_ERROR,
        "deep": PARSE_ERROR,
        "no message": INVALID_REQUEST,
    }
    assert still.id == 9  # the server reads on after each


def test_a_request_whose_id_is_no_string_or_integer_is_answered(tmp_path: Path) -> None:
    """The SDK reads such a request as a notification and would answer nothing: each gets
    -32600 with a null id instead (docs/security.md), and a tool call so sent runs not."""
    from mcp.types import INVALID_REQUEST, JSONRPCError

    db = tmp_path / "ledger.db"
    call = '"method":"tools/call","params":{"name":"upsert_memory","arguments":'
    call += '{"observations":[{"text":"written under a bad id"}]}}'
    ids = ("{}", '{"a":1}', "[1]", "1.5", "true", "null")
    lines = {i: b'{"jsonrpc":"2.0","id":%s,%s}' % (i.encode(), call.encode()) for i in ids}
    answers, still = _answers(db, lines)
    for name, answer in answers.items():
        assert isinstance(answer, JSONRPCError), name
        assert answer.id is None
        assert answer.error.code == INVALID_REQUEST
        assert answer.error.message == "Invalid Request: the id must be a string or an integer"
    assert still.id == 9
    with Ledger.open(str(db), readonly=True) as ledger:
        assert ledger.head() == 0


def test_save_context_refuses_nan_and_infinity_naming_where(tmp_path: Path) -> None:
    """JSON's NaN and Infinity (Python's reader takes them) would be stored as null: both
    save_context tools refuse them, naming where they are, and write nothing."""
    db = tmp_path / "ledger.db"
    call = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
    lines = {
        "plan": call % (2, b"save_context", b'{"frames":{"plan":{"eta_hours":NaN}}}'),
        "context": call
        % (3, b"kom.memory.v1.save_context", b'{"session":"s","context":{"p":[1,Infinity]}}'),
        "frames": call
        % (4, b"kom.memory.v1.save_context", b'{"task":"t","frames":{"x":-Infinity}}'),
    }
    answers, _ = _answers(db, lines)
    told = {name: a.result["content"][0]["text"] for name, a in answers.items()}
    for answer in answers.values():
        assert answer.result["isError"] is True
    assert told["plan"].endswith(
        ": frames.plan.eta_hours is NaN or infinity, which JSON cannot store"
    )
    assert told["context"].endswith(": context.p[1] is NaN or infinity, which JSON cannot store")
    assert told["frames"].endswith(": frames.x is NaN or infinity, which JSON cannot store")
    with Ledger.open(str(db), readonly=True) as ledger:
        assert ledger.head() == 0


def test_an_export_never_writes_through_a_link_at_a_temporary_name(tmp_path: Path) -> None:
    """A link planted where the export once put its temporary file (``.<name>.<pid>.tmp``)
    is neither followed nor replaced: the pack is a new file of its own, readable by its
    owner only, and the file the link points at is untouched."""
    import stat

    from engram.agents.packs import peek

    packs, outside = tmp_path / "packs", tmp_path / "outside"
    packs.mkdir()
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("ORIGINAL CONTENT\n")

    async def body(client: Client) -> tuple[str, dict[str, Any]]:
        await call(client, "upsert_memory", observations=[{"text": "a public note on deploys"}])
        planted = f".out.pack.{server_pid()}.tmp"
        (packs / planted).symlink_to(victim)
        done = await call(
            client, "export_pack", path="out.pack", name="p", version="1", select="deploys"
        )
        return planted, done

    planted, done = serve(tmp_path / "ledger.db", body, pack_dir=packs)
    assert victim.read_text() == "ORIGINAL CONTENT\n"
    out = packs / "out.pack"
    assert out.is_file()
    assert not out.is_symlink()
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert peek(out).nodes == done["nodes"] == 1
    assert sorted(os.listdir(packs)) == [planted, "out.pack"]  # no temporary file left


def test_a_failed_pack_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import engram
    from engram.agents.packs import format as pack_format
    from engram.mcp.tools import MemoryTools

    def full(source: str, target: str) -> None:
        raise OSError("no room left on the device")

    packs = tmp_path / "packs"
    packs.mkdir()
    monkeypatch.setenv("ENGRAM_PACK_KEY", KEY)
    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        memory.agent("alice").observe("a public note on deploys")
        tools = MemoryTools(memory, ["alice"], pack_dir=str(packs))
        monkeypatch.setattr(pack_format.os, "replace", full)
        with pytest.raises(OSError, match="no room"):
            tools.export_pack("out.pack", "p", "1", select="deploys")
    assert os.listdir(packs) == []


def test_the_pack_key_is_read_from_an_engram_variable_only(tmp_path: Path) -> None:
    """A model may not make any other variable of the server a pack key (a database
    password, a token): key_env must start with ENGRAM_, and says so in its description."""
    packs = tmp_path / "packs"
    packs.mkdir()
    shutil.copy(PACK, packs / "adrs.pack")
    export = {"name": "p", "version": "1", "concepts": "adr"}

    async def body(client: Client) -> dict[str, Any]:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        return {
            "described": [
                tools[name].input_schema["properties"]["key_env"]["description"]
                for name in ("export_pack", "import_pack", "kom.local.v1.backup.export_encrypted")
            ],
            "export": await refused(
                client, "export_pack", path="db.pack", key_env="DB_PASSWORD", **export
            ),
            "import": await refused(client, "import_pack", path="adrs.pack", key_env="HOME"),
            "imported": await call(
                client, "import_pack", path="adrs.pack", key_env="ENGRAM_OTHER_KEY"
            ),
            "exported": await call(
                client, "export_pack", path="mine.pack", key_env="ENGRAM_OTHER_KEY", **export
            ),
        }

    got = serve(
        tmp_path / "ledger.db",
        body,
        pack_dir=packs,
        DB_PASSWORD="a database password, not a pack key",
        ENGRAM_OTHER_KEY=KEY,
    )
    for description in got["described"]:
        assert "ENGRAM_" in description
    assert got["export"].endswith(
        "key_env must name an environment variable starting with ENGRAM_"
        " (default ENGRAM_PACK_KEY), got 'DB_PASSWORD'"
    )
    assert "starting with ENGRAM_" in got["import"]
    assert got["imported"]["nodes"] > 0
    assert got["exported"]["path"] == "mine.pack"
    assert sorted(os.listdir(packs)) == ["adrs.pack", "mine.pack"]
