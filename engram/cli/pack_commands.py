"""Knowledge packs from the command line: ``engram pack export|import|show`` (ADR 0041).

The key never appears on the command line (where ``ps`` would show it): it is read from an
environment variable (``--key-env``, default ``ENGRAM_PACK_KEY``) or a file (``--key-file``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from engram.agents.packs import Manifest, PackKey, export_pack, import_nodes, peek, read_pack
from engram.cli.app import cli, examples
from engram.cli.base import CliError, note, opened, output_format, refuse_existing, state

F = TypeVar("F", bound=Callable[..., Any])

KEY_ENV = "ENGRAM_PACK_KEY"


def key_options(f: F) -> F:
    """Add ``--key-env NAME`` and ``--key-file PATH``: where the pack's key is read from."""
    f = click.option(
        "--key-file",
        type=click.Path(dir_okay=False),
        help="A file holding the key: 32 raw bytes, 64 hex digits, or a passphrase.",
    )(f)
    return click.option(
        "--key-env",
        default=KEY_ENV,
        show_default=True,
        metavar="NAME",
        help="The environment variable holding the key (64 hex digits, or a passphrase).",
    )(f)


def read_key(key_env: str, key_file: str | None) -> PackKey:
    """Return the key from the file when one is named, else from the environment variable."""
    return PackKey.from_file(key_file) if key_file else PackKey.from_env(key_env)


def _manifest(manifest: Manifest) -> dict[str, Any]:
    fields = ("id", "name", "version", "domain", "nodes", "checksum", "created_at")
    record = {name: getattr(manifest, name) for name in fields}
    record["embedding_model"] = manifest.embedding_model is not None
    return record


@cli.group(
    epilog=examples(
        "ENGRAM_PACK_KEY=... engram pack export idioms.pack --name idioms --version 1 "
        "--concepts py.idiom",
        "engram pack import idioms.pack --as coder --key-file ~/.engram/pack.key",
    )
)
def pack() -> None:
    """Share knowledge as encrypted, authenticated pack files."""


@pack.command(
    "export",
    epilog=examples(
        "engram pack export adr.pack --name adrs --version 1 --concepts adr --as docs",
        "engram pack export ops.pack --name ops --version 2 --agent ops --domain ops",
        "engram pack export q.pack --name retries --version 1 --select 'retry policy' --limit 50",
    ),
)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--name", required=True, help="The pack's name.")
@click.option(
    "--version", "version", required=True, help="The pack's version (a new one per change)."
)
@click.option("--domain", multiple=True, help="A domain tag (repeatable), e.g. python.")
@click.option("--select", "query", help="Pack the memories this query recalls.")
@click.option("--concepts", "prefix", help="Pack the concepts at and below this prefix.")
@click.option("--agent", help="Pack this agent's live public memories.")
@click.option("--as", "reader", default="pack", show_default=True, help="Read as this agent.")
@click.option("--limit", type=click.IntRange(min=1), default=1000, show_default=True,
              help="At most this many concepts, and memories for --select.")  # fmt: skip
@click.option("--no-embeddings", is_flag=True, help="Leave the vectors out.")
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
@key_options
@output_format("json")
def export_command(
    path: str,
    name: str,
    version: str,
    domain: tuple[str, ...],
    query: str | None,
    prefix: str | None,
    agent: str | None,
    reader: str,
    limit: int,
    no_embeddings: bool,
    force: bool,
    key_env: str,
    key_file: str | None,
    fmt: str,
) -> None:
    """Write the public concepts and memories chosen to the pack file PATH."""
    if query is None and prefix is None and agent is None:
        raise click.UsageError("choose what to export: --select, --concepts or --agent")
    refuse_existing(path, force, "PATH")
    key = read_key(key_env, key_file)
    out = state()
    with opened(out.settings(), actor=reader) as memory:
        manifest = export_pack(
            memory.agent(reader),
            path,
            key,
            name=name,
            version=version,
            domain=domain,
            select=query,
            concepts_under=prefix,
            agent=agent,
            limit=limit,
            embeddings=not no_embeddings,
        )
    out.render([{"path": path, **_manifest(manifest)}], fmt)


@pack.command(
    "import",
    epilog=examples(
        "engram pack import idioms.pack --as coder",
        "engram pack import idioms.pack --as coder --key-file pack.key",
    ),
)
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--as", "writer", required=True, help="Import as this agent (the events' actor).")
@key_options
@output_format("json")
def import_command(path: str, writer: str, key_env: str, key_file: str | None, fmt: str) -> None:
    """Check the pack file PATH, then append its nodes (once: a second import adds nothing)."""
    out = state()
    settings = out.settings()  # the ledger must exist: a mistyped path is not created
    manifest, nodes = read_pack(path, read_key(key_env, key_file))  # refused before any write
    with opened(settings, actor=writer) as memory:
        done = import_nodes(memory.agent(writer), manifest, nodes)
    record = {
        **_manifest(done.manifest),
        "appended": done.appended,
        "position": done.position,
        "embeddings": done.embeddings,
    }
    out.render([record], fmt)


@pack.command(epilog=examples("engram pack show idioms.pack"))
@click.argument("path", type=click.Path(dir_okay=False))
@output_format("json")
def show(path: str, fmt: str) -> None:
    """Print the pack's manifest without its key (not authenticated: import checks that)."""
    try:
        manifest = peek(path)
    except OSError as exc:  # pragma: no cover - peek translates read errors
        raise CliError(str(exc)) from None
    state().render([_manifest(manifest)], fmt)
    # Printed as read, so say so where a reader may take it for checked (ADR 0175).
    note("the manifest is not verified: read without the pack's key (engram pack import checks it)")
