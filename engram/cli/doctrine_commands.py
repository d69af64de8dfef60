"""Commands for the learning loop's tiers: project close, postproject, skills, doctrine."""

from __future__ import annotations

from datetime import datetime

import click

from engram.agents.doctrine import served
from engram.agents.postproject import close_project
from engram.cli.app import cli, examples
from engram.cli.base import TIME, Finite, note, opened, output_format, state
from engram.cli.jobs_commands import run_by_hand
from engram.projections import doctrine

_COLUMNS = ["position", "kind", "text", "reviewer", "score", "via"]


@cli.group(
    epilog=examples('engram project close billing-v2 --agent ops --outcome "shipped" --actual 62')
)
def project() -> None:
    """Projects: close one, so its lessons are drafted (engram postproject)."""


@project.command(
    name="close",
    epilog=examples(
        'engram project close billing-v2 --agent ops --outcome "shipped" --estimate 40 --actual 62'
    ),
)
@click.argument("name")
@click.option("--agent", required=True, help="Who closes it.")
@click.option("--outcome", default="", help="How it ended.")
@click.option("--estimate", type=Finite(0, 1e6), help="Hours it was estimated at.")
@click.option("--actual", type=Finite(0, 1e6), help="Hours it took.")
@click.option("--at", type=TIME, default=None, help="Event time: ISO-8601 with zone (default now).")
def close(
    name: str,
    agent: str,
    outcome: str,
    estimate: float | None,
    actual: float | None,
    at: datetime | None,
) -> None:
    """Close project NAME: one project.closed event on the stream project:NAME.

    Its scars are those tagged NAME or recorded with --task NAME; the post-project job
    (engram postproject) drafts their five-part lesson for review.
    """
    out = state()
    with opened(out.settings(create=True), actor=agent, catch_up=False) as memory:
        position = close_project(
            memory.ledger,
            name,
            agent,
            outcome=outcome,
            estimate_hours=estimate,
            actual_hours=actual,
            at=at,
        )
    out.echo(f"closed project {name!r} at position {position}")


@cli.command(epilog=examples("engram postproject", "engram postproject --apply"))
@click.option("--apply", "apply", is_flag=True, help="Append the drafts (default: dry run).")
@output_format()
def postproject(apply: bool, fmt: str) -> None:
    """Draft the lesson of each project closed since the last pass (a dry run unless --apply).

    A project of three scars or more gets one suggestion.proposed (destination notes_inbox):
    estimate vs actual, top recurring errors, patterns to standardise, one doctrine
    candidate, one tool to create; smaller ones are skipped and listed. Drafted offline, or
    by the model of the routing file's [complete.learn] route.
    """
    run_by_hand("postproject", not apply, fmt, lines=True)


@cli.command(epilog=examples("engram skills", "engram skills --apply"))
@click.option("--apply", "apply", is_flag=True, help="Append the proposals (default: dry run).")
@output_format()
def skills(apply: bool, fmt: str) -> None:
    """Propose a skill for each successful pattern recurring across 3 tasks or more.

    Victories alike by meaning ([jobs.skills] threshold) across min_tasks distinct tasks
    become one suggestion.proposed (destination skill) each, or join the one proposed
    before; a person reviews them (engram suggestions, the hub). A dry run unless --apply.
    """
    run_by_hand("skills", not apply, fmt, lines=True)


@cli.command(
    name="doctrine",
    epilog=examples(
        "engram doctrine",
        "engram doctrine --kind skill",
        'engram doctrine "how do we rotate the backups?"',
    ),
)
@click.argument("query", required=False)
@click.option("--kind", type=click.Choice(["note", "skill"]), help="Only notes, or only skills.")
@click.option("--limit", type=click.IntRange(1, 20), default=3, show_default=True)
@output_format()
def doctrine_command(query: str | None, kind: str | None, limit: int, fmt: str) -> None:
    """List the doctrine (applied notes and skills), or those QUERY calls for.

    With QUERY, entries are matched by meaning (as situational rules are) and reached by
    their links (a note drawn from the same scars as one that matched).
    """
    out = state()
    with opened(out.settings(), actor="cli") as memory, memory.engine.read() as conn:
        rows: list[tuple[doctrine.Entry, float | None, str | None]]
        if query is None:
            rows = [(e, None, None) for e in doctrine.entries(conn, kind)]
        else:
            if not query.strip():
                raise click.UsageError("QUERY must not be empty")
            rows = [
                (s.entry, round(s.score, 3), s.via)
                for s in served(conn, query, None, memory.embedder, kind=kind, limit=limit)
            ]
    out.render(
        (
            {
                "position": e.position,
                "kind": e.kind,
                "text": e.text,
                "reviewer": e.reviewer,
                "score": score,
                "via": via,
            }
            for e, score, via in rows
        ),
        fmt,
        columns=_COLUMNS,
        widths={"text": 60},
    )
    note(f"{len(rows)} entr{'y' if len(rows) == 1 else 'ies'}")
