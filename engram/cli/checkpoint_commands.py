"""Signed checkpoints from the command line: ``engram checkpoint`` (ADR 0033)."""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli.app import cli, examples
from engram.cli.base import note, open_ledger, state


@cli.command(
    epilog=examples(
        "engram checkpoint --new-key --key ~/.engram/checkpoint.key --dir /srv/anchors",
        "engram checkpoint --key ~/.engram/checkpoint.key --dir /srv/anchors",
        "engram verify --checkpoints /srv/anchors --public-key ~/.engram/checkpoint.key.pub",
    )
)
@click.option(
    "--key",
    "key_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The Ed25519 private key (PEM) that signs; keep it outside the ledger.",
)
@click.option(
    "--dir",
    "directory",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where checkpoint files are written (a folder you publish: a git repo, a share).",
)
@click.option(
    "--new-key",
    is_flag=True,
    help="Create the key first (KEY mode 0600 and KEY.pub); refused if either exists.",
)
def checkpoint(key_path: Path, directory: Path, new_key: bool) -> None:
    """Sign the ledger's head (position and hash) and write the checkpoint.

    A checkpoint lets verify detect what a hash chain alone cannot: a rewritten history whose
    chain was recomputed, or a cut tail. Publish the folder where the ledger's owner cannot
    rewrite it, and keep the public key (KEY.pub) for whoever verifies.
    """
    from engram.ledger.checkpoints import generate_key, load_private_key, sign

    out = state()
    if new_key:
        public = generate_key(key_path)
        note(f"new key {key_path}; its public key, for verify: {public}")
    key = load_private_key(key_path)
    with open_ledger(out.settings(), readonly=True) as ledger:
        signed, path = sign(ledger, key, directory)
    out.echo(f"signed position {signed.position}, hash {signed.hash} -> {path}")
