"""Commands for the nightly dream and the monthly hygiene: dream, hygiene."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from engram.cli.app import cli, examples
from engram.cli.base import TIME, note, opened, output_format, state
from engram.cli.jobs_commands import run_by_hand
from engram.jobs.hygiene import digest, duplicate_groups
from engram.ledger.shred import PRIVATE
from engram.projections.lexical.memories import duplicate_memories
from engram.projections.salience import micros


@cli.command(epilog=examples("engram dream", "engram dream --apply", "engram dream --format json"))
@click.option("--apply", "apply", is_flag=True, help="Append the suggestions (default: dry run).")
@output_format()
def dream(apply: bool, fmt: str) -> None:
    """Propose one rule per cluster of repeated scars (a dry run unless --apply).

    Scars waiting to be learned that repeat each other (alike by meaning, whole and lesson,
    on the embedder's calibrated scale >= threshold, [jobs.dream]) in groups of min_size or
    more become one suggestion.proposed each, destination rules, citing every scar of the
    group, for a person to review (engram suggestions). Nothing is applied or archived. The
    window runs from the last dream's end to now; with --apply it ends with job.completed.
    """
    run_by_hand("dream", not apply, fmt, lines=True)


@cli.command(
    epilog=examples(
        "engram hygiene",
        "engram hygiene --as-of 2026-11-01T00:00:00Z --format json",
        "engram hygiene --record",
        "engram hygiene --rules",
    )
)
@click.option(
    "--as-of",
    type=TIME,
    default=None,
    help="List the groups known at this time (a past window's end), default now.",
)
@click.option(
    "--record", is_flag=True, help="Run the hygiene window up to now: append its job.completed."
)
@click.option(
    "--rules",
    is_flag=True,
    help="Run the hygiene window up to now without appending: print its findings, the "
    "tier-1 rules' (dead links, superseded, unused, duplicates) with the duplicate memories'.",
)
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show AGENT's private memories (others' [private])."
)
@output_format()
def hygiene(
    as_of: datetime | None, record: bool, rules: bool, viewer: str | None, fmt: str
) -> None:
    """List memories stored twice: groups of one agent's memories with the same content hash.

    Reads only, unless --record runs the hygiene job's window by hand (its job.completed
    counts groups, duplicates, the tier-1 rules' findings and a digest of the groups;
    --as-of that window's end lists the same groups again). --rules runs the window without
    appending and prints every finding, the rules' too. Nothing is archived or changed:
    engram archive and a review are a person's decisions.
    """
    if record or rules:
        if record and rules:
            raise click.UsageError("--rules prints what --record would append; give one")
        if as_of is not None:
            raise click.UsageError(
                "--record and --rules run the window up to now; leave out --as-of"
            )
        run_by_hand("hygiene", rules, fmt, lines=True)
        return
    out = state()
    settings = out.settings()
    at = as_of or datetime.now(UTC)
    with opened(settings, actor="job") as memory, memory.engine.read() as conn:
        groups = duplicate_groups(memory.ledger, duplicate_memories(conn, micros(at)))
    out.render(
        (
            {
                "agent": g.agent,
                "sha256": g.sha256,
                "copies": len(g.positions),
                "positions": g.positions,
                # Another agent's private copies read [private], as engram log shows them.
                "text": PRIVATE if viewer != g.agent and g.private else g.text,
            }
            for g in groups
        ),
        fmt,
        columns=["agent", "sha256", "copies", "positions", "text"],
        widths={"sha256": 16, "text": 60},
    )
    duplicates = sum(len(g.positions) - 1 for g in groups)
    note(
        f"{len(groups)} group(s), {duplicates} duplicate(s) as of {at.isoformat()};"
        f" digest {digest(groups)}"
    )
