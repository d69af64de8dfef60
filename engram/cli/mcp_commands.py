"""``engram mcp``: serve memory to a model as MCP tools (ADR 0041).

The SDK is imported when the command runs, never when ``engram`` starts.
"""

from __future__ import annotations

import dataclasses
import os

import click

from engram.cli.app import cli, examples
from engram.cli.base import CliError, note, state


@cli.command(
    epilog=examples(
        "engram mcp --agent coder --ledger ~/.engram/ledger.db",
        "engram mcp --agent coder --agent reviewer",
        "engram mcp --agent coder --agent lead --reviewer lead",
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
@click.option(
    "--token",
    envvar="ENGRAM_MCP_TOKEN",
    default=None,
    help="HTTP: the bearer token every request must carry (env ENGRAM_MCP_TOKEN); required"
    " when --host is not a loopback address.",
)
@click.option(
    "--pack-dir",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="The only folder the pack tools may read and write (default: mcp_pack_dir in the"
    " config; unset: the pack tools refuse).",
)
@click.option(
    "--reviewer",
    "reviewers",
    multiple=True,
    help="An agent (one of --agent) that may review the lessons loop's suggestions through"
    " review_suggestion (repeatable; default: none may).",
)
def mcp(
    agents: tuple[str, ...],
    transport: str,
    host: str,
    port: int,
    token: str | None,
    pack_dir: str | None,
    reviewers: tuple[str, ...],
) -> None:
    """Serve engram's memory tools over the Model Context Protocol.

    A model is not the user: the pack tools touch files only inside the folder given by
    --pack-dir (or mcp_pack_dir in the config file), and refuse without one (ADR 0046); no
    caller reviews a suggestion of the lessons loop unless named by --reviewer (ADR 0183).
    """
    bad = [a for a in agents if not a.strip()]
    if bad:
        raise click.UsageError("--agent: an agent name must not be empty")
    strangers = [r for r in reviewers if r not in agents]
    if strangers:
        raise click.UsageError(f"--reviewer: {', '.join(strangers)} is not an --agent name")
    try:
        from engram.mcp.server import serve
    except ImportError as exc:
        # Only a missing SDK is the SDK's to install; any other import error is said as is.
        missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == "mcp"
        if not missing:
            raise CliError(f"cannot start the MCP server: {exc}") from None
        raise CliError(f"the MCP SDK is not installed ({exc}); pip install 'engram[mcp]'") from None
    if transport == "http":
        from engram.mcp.auth import check_token, loopback

        if token is None and not loopback(host):
            raise click.UsageError(
                f"--host {host} is not a loopback address: choose a token (--token or"
                " ENGRAM_MCP_TOKEN) that every request must carry as 'Authorization: Bearer"
                " TOKEN'"
            )
        try:
            token = check_token(token, "MCP") if token is not None else None
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    settings = state().settings()  # a mistyped path is refused, never created
    if pack_dir is not None:
        settings = dataclasses.replace(settings, mcp_pack_dir=os.path.abspath(pack_dir))
    elif settings.mcp_pack_dir and not os.path.isdir(os.path.expanduser(settings.mcp_pack_dir)):
        raise click.UsageError(f"mcp_pack_dir {settings.mcp_pack_dir!r} is not a folder")
    if transport == "http":
        shown = f"[{host}]" if ":" in host else host
        note(
            f"serving MCP over streamable HTTP at http://{shown}:{port}/mcp for "
            f"{', '.join(agents)}; Ctrl-C stops it"
        )
    serve(
        settings,
        agents,
        transport=transport,  # type: ignore[arg-type]
        host=host,
        port=port,
        token=token,
        reviewers=reviewers,
    )
