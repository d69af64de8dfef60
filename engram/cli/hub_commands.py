"""The hub from the command line: ``engram hub`` serves the local web page (ADR 0042)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli.app import cli, examples
from engram.cli.base import CliError, open_ledger, state
from engram.netguard import loopback

if TYPE_CHECKING:
    import uvicorn


@cli.command(
    epilog=examples(
        "engram hub",
        "engram hub --port 8765 --read-only",
        "ENGRAM_HUB_TOKEN=... engram hub --reviewer alice",
        "engram hub --checkpoints /srv/anchors --public-key ~/.engram/checkpoint.key.pub",
    )
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0: any."
)
@click.option(
    "--token",
    envvar="ENGRAM_HUB_TOKEN",
    default=None,
    help="The access token (env ENGRAM_HUB_TOKEN); default: a new random one, printed.",
)
@click.option("--read-only", is_flag=True, help="Serve the pages but refuse every review.")
@click.option("--reviewer", default=None, help="The name a review form starts with.")
@click.option(
    "--allow-host",
    "hosts",
    multiple=True,
    metavar="NAME",
    help="Another Host header to accept (repeatable); loopback names always are.",
)
@click.option(
    "--checkpoints",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="The folder of signed checkpoints to show and verify against.",
)
@click.option(
    "--public-key",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="The public key the checkpoints are signed with (with --checkpoints).",
)
def hub(
    host: str,
    port: int,
    token: str | None,
    read_only: bool,
    reviewer: str | None,
    hosts: tuple[str, ...],
    checkpoints: Path | None,
    public_key: Path | None,
) -> None:
    """Serve the hub, a local web page: the brain live, vitality, the review queue,
    memories and the ledger. Open the address it prints: it holds the access token.

    Binds to 127.0.0.1 unless told otherwise; any other address is reachable by others on
    the network, so it is refused unless the token was chosen (--token or ENGRAM_HUB_TOKEN).
    """
    try:
        import uvicorn

        from engram import httpguard
        from engram.hub import HubConfig, create_app, new_token
        from engram.netguard import check_token
    except ImportError as exc:
        raise CliError(
            f"the hub's server is not installed ({exc}); pip install 'engram[hub]'"
        ) from None

    if (checkpoints is None) != (public_key is None):
        raise click.UsageError("--checkpoints and --public-key go together")
    if not loopback(host) and token is None:
        raise click.UsageError(
            f"--host {host} is not a loopback address: choose the token (--token or "
            "ENGRAM_HUB_TOKEN) so it is not only in this terminal's scroll-back"
        )
    try:
        chosen = check_token(token) if token is not None else new_token()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    settings = state().settings()
    open_ledger(settings, readonly=True).close()  # a file that is no ledger: refused here
    config = HubConfig(
        settings=settings,
        token=chosen,
        read_only=read_only,
        hosts=(*hosts, host),
        checkpoints=checkpoints,
        public_key=public_key,
    )
    if reviewer:
        config.reviewer = reviewer
    server = uvicorn.Server(
        httpguard.config(
            create_app(config),
            host,
            port,
            log_level="warning",
            timeout_graceful_shutdown=2,
            access_log=False,
        )
    )

    def announce() -> None:
        bound = _bound_port(server) or port
        where = f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"
        click.echo(f"engram hub at http://{where}/?token={chosen}", file=sys.stderr)
        click.echo(f"  (read-only: {read_only}; Ctrl-C stops it)", file=sys.stderr)
        sys.stderr.flush()

    threading.Thread(target=_when_started, args=(server, announce), daemon=True).start()
    server.run()


def _bound_port(server: uvicorn.Server) -> int:
    for srv in getattr(server, "servers", []):
        for sock in srv.sockets:
            return int(sock.getsockname()[1])
    return 0


def _when_started(server: uvicorn.Server, announce: Callable[[], None]) -> None:
    """Call ``announce`` once the server listens (uvicorn sets ``started``)."""
    while not server.started and not server.should_exit:
        time.sleep(0.05)
    if server.started:
        announce()
