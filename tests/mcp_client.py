"""Driving a real ``engram mcp`` over stdio with the MCP SDK's own client, for the MCP tests.

``serve`` starts a fresh server for the given agents on a ledger file and runs a body against
it; ``call`` and ``refused`` make one tool call that must succeed (its JSON answer) or be
refused (its text); ``server_pid`` finds the server process this test started.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from engram.ledger import Ledger

REPO = Path(__file__).parents[1]
#: The example packs' key, which the servers read from ENGRAM_PACK_KEY.
KEY = (REPO / "packs" / "example.key").read_text().strip()
TIMEOUT = 120.0


def serve(
    db: Path,
    body: Callable[[Client], Awaitable[Any]],
    *,
    agents: Sequence[str] = ("alice",),
    pack_dir: Path | None = None,
    **env: str,
) -> Any:
    """Run ``body`` against a fresh ``engram mcp`` for ``agents``; return what it returns.

    The ledger is created first when missing; ``env`` adds to (or replaces) the server's
    environment: no config file, the example pack key, this test's data home.
    """
    if not db.exists():
        Ledger.open(str(db)).close()
    args = ["-m", "engram", "mcp", "--ledger", str(db)]
    for agent in agents:
        args += ["--agent", agent]
    if pack_dir is not None:
        args += ["--pack-dir", str(pack_dir)]
    environment = {
        "ENGRAM_CONFIG": os.devnull,
        "ENGRAM_PACK_KEY": KEY,
        "XDG_DATA_HOME": os.environ["XDG_DATA_HOME"],  # the SDK passes HOME, not this: keys
        **env,
    }
    server = StdioServerParameters(
        command=sys.executable, args=args, env=environment, cwd=str(db.parent)
    )

    async def main() -> Any:
        async with Client(server, read_timeout_seconds=TIMEOUT) as client:
            return await body(client)

    return asyncio.run(asyncio.wait_for(main(), TIMEOUT))


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``, which must succeed; return its JSON answer."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """Call ``tool``, which must refuse; return its text."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content
    return str(result.content[0].text)  # type: ignore[union-attr]


def server_pid() -> int:
    """Return the pid of this process's child that runs ``engram mcp``."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"mcp" in cmdline:
            return int(entry.name)
    raise AssertionError("no engram mcp child process")
