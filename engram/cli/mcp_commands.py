"""``engram mcp``: serve memory to a model as MCP tools (ADR 0041).

The SDK is imported when the command runs, never when ``engram`` starts.
"""

from __future__ import annotations

import click

from engram.cli.app import cli, examples
from engram.cli.base import CliError, state


@cli.command(
    epilog=examples(
        "engram mcp --agent coder --ledger ~/.engram/ledger.db",
        "engram mcp --agent coder --agent reviewer",
        "engram mcp --agent coder --transport http --port 8765",
    )
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    required=True,
    help="The agent the tools act for (repeatable; the first is the default caller).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP: address to bind.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP: port."
)
def mcp(agents: tuple[str, ...], transport: str, host: str, port: int) -> None:
    """Serve engram's memory tools over the Model Context Protocol."""
    bad = [a for a in agents if not a.strip()]
    if bad:
        raise click.UsageError("--agent: an agent name must not be empty")
    try:
        from engram.mcp.server import serve
    except ImportError as exc:
        raise CliError(f"the MCP SDK is not installed ({exc}); pip install 'engram[mcp]'") from None
    settings = state().settings()  # a mistyped path is refused, never created
    serve(settings, agents, transport=transport, host=host, port=port)  # type: ignore[arg-type]
