"""Forgetting from the command line: ``engram forget`` and ``engram keys`` (ADR 0039)."""

from __future__ import annotations

import os
import sys

import click

from engram.cli.app import cli, examples
from engram.cli.base import CliError, note, opened, output_format, state
from engram.config import Settings
from engram.keysplit import key_store_file
from engram.ledger import KeyStore, KeyStoreError, LedgerNotFoundError
from engram.runtime import not_held, open_settings


def _check_sealing(settings: Settings) -> None:
    if not settings.sealing:
        raise click.UsageError(
            "this ledger seals no personal fields (seal = false, or a PostgreSQL ledger"
            " without seal = true or keys = PATH), so there is nothing to forget (ADR 0086)"
        )


@cli.command(
    epilog=examples(
        "engram forget alice --reason 'erasure request #12' --yes",
        "engram forget alice    # asks to type the subject again (on a terminal)",
    )
)
@click.argument("subject")
@click.option("--reason", default="", help="Why, recorded in the subject.forgotten event.")
@click.option(
    "--actor", default="cli", show_default=True, help="Who forgets, as the event's actor."
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask: for scripts (required without a TTY).")
@click.option(
    "--force",
    is_flag=True,
    help="Append subject.forgotten even if the key store never held a key of SUBJECT.",
)
def forget(subject: str, reason: str, actor: str, yes: bool, force: bool) -> None:
    """Destroy SUBJECT's keys and append subject.forgotten.

    Every personal field sealed for SUBJECT (its observations, scar context, recall queries,
    reflections, declared personal fields) reads [forgotten] from then on; the projections
    drop them now (this command catches them up), the embedding cache loses the vectors of
    SUBJECT's texts, and verify still passes. This cannot be undone.

    Names are exact (case and blanks count): a SUBJECT the key store never held a key of is
    refused, since nothing of it is sealed here and a mistyped name would leave the real
    subject remembered; `engram keys` lists the subjects. --force appends the event anyway
    (it drops the subject's rows from the projections).
    """
    out = state()
    settings = out.settings()
    _check_sealing(settings)
    if not subject:
        raise click.UsageError("SUBJECT must not be empty")
    if not yes and not sys.stdin.isatty():
        raise click.UsageError(
            "forgetting cannot be undone: pass --yes to confirm without a terminal"
        )
    with opened(settings, actor=actor) as memory:
        sealer = memory.ledger.sealer
        before = {s.subject: s for s in sealer.keys.subjects()} if sealer else {}
        unheld = not_held(memory.ledger, subject)
        if unheld is not None and not force:
            raise CliError(unheld.replace("; force appends", "; --force appends"))
        if not yes:
            typed = click.prompt(
                f"This destroys {subject!r}'s keys for good. Type the subject again"
            )
            if typed != subject:
                raise CliError(f"{typed!r} is not {subject!r}: nothing was forgotten")
        done = memory.forget(subject, reason=reason, actor=actor, force=force)
    found = before.get(subject)
    live = 0 if found is None else found.keys - found.forgotten
    if found is None:
        note(f"the key store holds no key of {subject!r}: nothing of it was sealed")
    out.echo(
        f"forgot {subject}: {live} key(s) destroyed, {done.cached_vectors} cached vector(s)"
        f" dropped; subject.forgotten at position {done.position}; the indexes are caught up"
    )


@cli.command(epilog=examples("engram keys", "engram keys --format json"))
@output_format()
def keys(fmt: str) -> None:
    """List the subjects the key store holds keys of, and which were forgotten."""
    out = state()
    settings = out.settings(create=True)
    _check_sealing(settings)
    try:
        path = key_store_file(settings, lambda s: open_settings(s, readonly=True))
    except LedgerNotFoundError:
        path = ""  # no ledger yet: no keys
    if not path:
        out.render(iter(()), fmt, columns=["subject", "keys", "forgotten", "live"])
        return
    if settings.keys and path != os.path.expanduser(settings.keys):
        note(
            f"tenant {settings.tenant}'s keys are still in the shared store {path}: they move"
            " to the tenant's own on its next write (ADR 0047)"
        )
    try:
        with KeyStore(path, create=False) as store:
            subjects = store.subjects()
    except KeyStoreError as exc:
        raise CliError(str(exc)) from None
    out.render(
        (
            {"subject": s.subject, "keys": s.keys, "forgotten": s.forgotten, "live": s.live}
            for s in subjects
        ),
        fmt,
        columns=["subject", "keys", "forgotten", "live"],
    )
