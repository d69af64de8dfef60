"""``engram scars``: record failures and victories with their lessons; list, show, recall them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import click

from engram.cli import memory_commands
from engram.cli.app import cli, examples
from engram.cli.base import (
    TIME,
    CliError,
    Finite,
    as_of_option,
    one_of_renamed,
    opened,
    output_format,
    renamed_option,
    state,
)
from engram.ledger.shred import PRIVATE
from engram.projections import scars

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: What a scar records: its outcome (the payload's ``kind`` field, kept for stored events).
_OUTCOMES = ["failure", "victory"]
_LIST_TABLE = ["position", "kind", "agent", "importance", "recalls", "recorded", "what", "lesson"]
_COLUMNS = [
    "position",
    "id",
    "kind",
    "agent",
    "importance",
    "learnable",
    "visibility",
    "recalls",
    "last_recalled",
    "recorded",
    "archived",
    "what",
    "lesson",
    "sources",
    "tags",
]


@cli.group(
    name="scars",
    epilog=examples(
        "engram scars record alice --outcome failure --what 'the deploy locked the users table'"
        " --lesson 'migrations run with a lock timeout'",
        "engram scars list --outcome failure --agent alice",
        "engram scars show 42",
        "engram scars recall alice 'migration lock' --format json",
    ),
)
def scars_group() -> None:
    """Failures and victories with their lessons (the scars table).

    A scar records what happened and the lesson: for a failure, what was added to avoid a
    repeat; for a victory, the pattern to reproduce. Recall serves them (engram scars recall,
    or engram recall --scope scars); every served scar counts a recall.
    """


@scars_group.command(
    epilog=examples(
        "engram scars record alice --outcome failure --what 'the nightly backup failed silently'"
        " --lesson 'the job now checks exit codes' --importance 8 --task backup --tag ops",
        "engram scars record bob --outcome victory --what 'the canary caught a bad build'"
        " --lesson 'ship behind a canary' --not-learnable",
    )
)
@click.argument("agent")
@click.option("--outcome", type=click.Choice(_OUTCOMES), help="What it was (required).")
@renamed_option("--kind", "--outcome", "old_outcome", type=click.Choice(_OUTCOMES))
@click.option("--what", required=True, help="What happened.")
@click.option("--lesson", required=True, help="What was added to avoid a repeat, or to reproduce.")
@click.option("--importance", type=click.IntRange(1, 10), help="1..10 (default: scored once).")
@click.option(
    "--learnable/--not-learnable",
    default=True,
    show_default=True,
    help="Whether the lessons loop may draw a suggestion from it.",
)
@click.option(
    "--visibility",
    type=click.Choice(["public", "private"]),
    default="public",
    show_default=True,
    help="Private scars are recalled by their agent only.",
)
@click.option("--source-event", "events", multiple=True, help="A ledger event id (repeatable).")
@click.option("--task", help="The task it happened in.")
@click.option("--file", "path", help="The file involved.")
@click.option("--source-agent", help="The agent involved, when another one.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--at", type=TIME, default=None, help="Event time: ISO-8601 with zone (default now).")
def record(
    agent: str,
    outcome: str | None,
    old_outcome: str | None,
    what: str,
    lesson: str,
    importance: int | None,
    learnable: bool,
    visibility: str,
    events: tuple[str, ...],
    task: str | None,
    path: str | None,
    source_agent: str | None,
    tags: tuple[str, ...],
    at: datetime | None,
) -> None:
    """Record a failure or a victory and its lesson.

    One scar.recorded event on AGENT's stream. Without --importance the heuristic scorer rates
    it once; the rating is stored in the event, so a rebuild replays it.
    """
    kind = one_of_renamed(outcome, old_outcome, "--kind", "--outcome")
    if kind is None:
        raise click.UsageError("Missing option '--outcome' (failure or victory).")
    out = state()
    sources = {"events": list(events), "task": task, "file": path, "agent": source_agent}
    with opened(out.settings(create=True), actor=agent, catch_up=False) as memory:
        position = memory.scars(agent).record(
            kind,
            what,
            lesson,
            importance=importance,
            learnable=learnable,
            visibility=visibility,  # type: ignore[arg-type]
            sources=sources,
            tags=tags,
            at=at,
        )
        (event,) = memory.ledger.get([position])
    out.echo(f"recorded {kind} at position {position} (importance {event.payload.importance})")


@scars_group.command(
    name="list",
    epilog=examples(
        "engram scars list",
        "engram scars list --outcome victory --agent alice --format json",
        "engram scars list --archived --limit 20",
    ),
)
@click.option("--outcome", type=click.Choice(_OUTCOMES), help="Only failures, or victories.")
@renamed_option("--kind", "--outcome", "old_outcome", type=click.Choice(_OUTCOMES))
@click.option("--agent", help="Only this agent's scars.")
@click.option("--learnable/--not-learnable", default=None, help="Only learnable ones, or not.")
@click.option("--archived", "which", flag_value="archived", help="Only archived scars.")
@click.option("--all", "which", flag_value="all", help="Live and archived scars.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many, newest first.")
@click.option(
    "--as",
    "viewer",
    metavar="AGENT",
    help="Show AGENT's private scars' text (others' read [private]).",
)
@output_format()
def list_command(
    outcome: str | None,
    old_outcome: str | None,
    agent: str | None,
    learnable: bool | None,
    which: str | None,
    limit: int | None,
    viewer: str | None,
    fmt: str,
) -> None:
    """List scars, newest first (live ones unless --archived or --all)."""
    out = state()
    archived = {"archived": True, "all": None}.get(which or "", False)
    with opened(out.settings()) as memory, memory.engine.read() as conn:
        rows = scars.list_scars(
            conn,
            kind=one_of_renamed(outcome, old_outcome, "--kind", "--outcome"),
            agent=agent,
            learnable=learnable,
            archived=archived,
            limit=limit,
        )
    out.render(
        (_record(r, viewer) for r in rows),
        fmt,
        columns=_COLUMNS,
        table_columns=_LIST_TABLE,
        widths={"what": 40, "lesson": 40},
    )


@scars_group.command(epilog=examples("engram scars show 42", "engram scars show 0192f3c4-..."))
@click.argument("key", metavar="POSITION|ID")
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show the text if the scar is AGENT's private one."
)
@output_format()
def show(key: str, viewer: str | None, fmt: str) -> None:
    """Show one scar by its position or its event id, with its recall counters."""
    out = state()
    wanted: int | str = int(key) if key.isdigit() else key
    with opened(out.settings()) as memory, memory.engine.read() as conn:
        row = scars.get(conn, wanted)
    if row is None:
        raise CliError(f"no scar at {key!r} (a scar.recorded position or event id)")
    out.render([_record(row, viewer)], fmt, columns=_COLUMNS, widths={"what": 60, "lesson": 60})


@scars_group.command(
    name="recall",
    epilog=examples(
        "engram scars recall alice 'migration locked the table'",
        "engram scars recall alice 'canary' --scope victories -k 3 --format json",
    ),
)
@click.argument("agent")
@click.argument("query")
@click.option(
    "--scope",
    type=click.Choice(["scars", "victories", "all"]),
    default="scars",
    show_default=True,
    help="Failures, victories, or everything recall serves.",
)
@click.option("-k", type=click.IntRange(min=1), default=10, show_default=True, help="How many.")
@as_of_option
@click.option(
    "--min-score",
    type=Finite(0.0, 1.0),
    default=0.0,
    show_default=True,
    help="Serve only items whose similarity (0..1) reaches this.",
)
@click.option("--no-record", is_flag=True, help="Do not append memory.recalled.")
@output_format()
def recall_command(
    agent: str,
    query: str,
    scope: str,
    k: int,
    as_of: datetime | None,
    min_score: float,
    no_record: bool,
    fmt: str,
) -> None:
    """Recall the scars that matter to an agent for a query.

    Candidates come from the semantic and lexical indexes, re-ranked by score = similarity x
    (1 + importance/10) x exp(-age_days/365), age as of --as-of. Similarity (the match column)
    is the cosine of the query and the scar; 0.75 and above is highly relevant, 0.65-0.75
    relevant, below: check by hand. Every served scar counts a recall (memory.recalled) unless
    --no-record.
    """
    click.get_current_context().invoke(
        memory_commands.recall,
        agent=agent,
        query=query,
        k=k,
        as_of=as_of,
        memory_types=(),
        min_score=min_score,
        no_record=no_record,
        scope=scope,
        fmt=fmt,
    )


@scars_group.command(
    epilog=examples("engram scars archive --agent alice 42 57 --reason 'obsolete since v2'")
)
@click.option("--agent", required=True, help="The agent archiving them.")
@click.argument("positions", nargs=-1, required=True, type=click.IntRange(min=1))
@click.option("--reason", help="Why, recorded in the event.")
def archive(agent: str, positions: tuple[int, ...], reason: str | None) -> None:
    """Archive scars: recall and the list leave them out; the ledger keeps them.

    POSITIONS are those of scar.recorded events. One scar.archived event.
    """
    out = state()
    with opened(out.settings(), actor=agent) as memory:
        position = memory.scars(agent).archive(list(positions), reason=reason)
    out.echo(f"archived at position {position} (scars {' '.join(map(str, positions))})")


def _time(us: int | None) -> datetime | None:
    return None if us is None else _EPOCH + timedelta(microseconds=us)


def _record(s: scars.Scar, viewer: str | None = None) -> dict[str, Any]:
    """Return a scar as a row; a private scar's text reads ``[private]`` unless ``viewer``
    is its agent, as ``engram log`` shows private fields (docs/security.md)."""
    sources = {k: v for k, v in s.sources.items() if v not in (None, [])}
    hidden = s.visibility == "private" and viewer != s.agent
    return {
        "position": s.position,
        "id": s.id,
        "kind": s.kind,
        "agent": s.agent,
        "importance": s.importance,
        "learnable": s.learnable,
        "visibility": s.visibility,
        "recalls": s.recall_count,
        "last_recalled": _time(s.last_recalled_us),
        "recorded": _time(s.recorded_us),
        "archived": _time(s.archived_us),
        "what": PRIVATE if hidden else s.what,
        "lesson": PRIVATE if hidden else s.lesson,
        "sources": sources,
        "tags": s.tags,
    }
