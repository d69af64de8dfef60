"""Commands over reflections: reflect (now, or when due) and read them with their evidence."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import click

from engram.agents.reflection import Outcome, Triggers, reflect_if_due, routed_reflector
from engram.agents.reflection import reflect as reflect_now
from engram.cli import logs
from engram.cli.app import cli, examples
from engram.cli.base import CliError, note, opened, output_format, state, sync_vectors, translated
from engram.ledger import Event
from engram.ledger.personal import masked, retracted, retracted_positions
from engram.ledger.shred import PRIVATE
from engram.projections import reflections as projection
from engram.projections.reflections import Reflection

_INSIGHT_COLUMNS = [
    "position",
    "id",
    "depth",
    "importance",
    "visibility",
    "question",
    "text",
    "evidence",
]
_REFLECTION_COLUMNS = [
    "position",
    "id",
    "agent",
    "depth",
    "importance",
    "visibility",
    "at",
    "question",
    "text",
]
_ROW_COLUMNS = ["role", "position", "id", "kind", "agent", "depth", "at", "text"]


@cli.command(
    epilog=examples(
        "engram reflect alice",
        "engram reflect alice --dry-run --format json",
        "engram reflect alice --if-due",
    )
)
@click.argument("agent")
@click.option("--dry-run", is_flag=True, help="Show the insights; append nothing.")
@click.option(
    "--if-due",
    is_flag=True,
    help="Only when a trigger is reached (settings reflect_every, reflect_importance).",
)
@output_format()
def reflect(agent: str, dry_run: bool, if_due: bool, fmt: str) -> None:
    """Reflect on an agent's memories since its last reflection.

        Focal questions from AGENT's newest memories (those it can see: its own and public ones),
        a recall per question, and insights that cite the memories they rest on, appended as
        memory.reflected events (the offline, extractive generator writes them, or the model the
    routing file's [complete.reflect] names). Each row is an
        insight; evidence lists the positions it rests on. Reflecting again on the same memories
        appends nothing. The projections are caught up with what it appended.
    """
    out = state()
    settings = out.settings()
    with opened(settings, actor=agent) as memory:
        if memory.ledger.versions([f"agent:{agent}"])[f"agent:{agent}"] == 0:
            raise click.BadParameter(
                f"no agent {agent!r} has written to this ledger (nothing of its own to "
                "reflect on); check the name against engram log --stream agent:NAME",
                param_hint="AGENT",
            )
        sync_vectors(memory)
        stream = memory.agent(agent)
        model = routed_reflector(settings.routing or None)
        if if_due:
            triggers = Triggers(settings.reflect_every, settings.reflect_importance)
            outcome = reflect_if_due(stream, triggers, completer=model, dry_run=dry_run)
        else:
            outcome = reflect_now(stream, model, dry_run=dry_run)
        if outcome.status == "reflected":
            # So that the projection store read by engram sql holds what was just appended.
            memory.engine.catch_up()
    note(f"{outcome.status}: {outcome.reason}")
    out.render(
        _insights(outcome),
        fmt,
        columns=_INSIGHT_COLUMNS,
        table_columns=["position", "depth", "question", "text", "evidence"],
        widths={"text": 70, "question": 30},
    )


def _insights(outcome: Outcome) -> Iterable[dict[str, Any]]:
    for i in outcome.insights:
        yield {
            "position": i.position,
            "id": i.id,
            "depth": i.depth,
            "importance": i.importance,
            "visibility": i.visibility,
            "question": i.question,
            "text": i.text,
            "evidence": [e.position for e in i.evidence],
        }


@cli.group(
    invoke_without_command=True,
    epilog=examples(
        "engram reflections",
        "engram reflections --agent alice -n 5 --format json",
        "engram reflections show 42",
        "engram reflections show 0f8e2c1a-9b7d-5e4f-8a3b-2c1d0e9f8a7b",
    ),
)
@click.option("--agent", help="Only this agent's reflections.")
@click.option(
    "-n", "limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many."
)
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show AGENT's private reflections (others' [private])."
)
@output_format()
@click.pass_context
def reflections(
    ctx: click.Context, agent: str | None, limit: int, viewer: str | None, fmt: str
) -> None:
    """List reflections, newest first; show one with its evidence.

    A reflection is a belief an agent drew from its memories (memory.reflected), with the
    events it rests on and its depth (1 + the deepest of them; an observation is 0).
    """
    if ctx.invoked_subcommand is not None:
        return
    out = state()
    with logs.configured(out.verbosity), translated(ctx):
        if agent is not None and not agent:
            raise click.BadParameter("must not be empty", param_hint="--agent")
        with opened(out.settings()) as memory, memory.engine.read() as conn:
            rows = projection.by_agent(conn, agent, limit=limit)
        out.render(
            (_reflection(r, viewer) for r in rows),
            fmt,
            columns=_REFLECTION_COLUMNS,
            table_columns=["position", "agent", "depth", "at", "text"],
            widths={"text": 80},
        )
        out.flush()


def _hidden(r: Reflection, viewer: str | None) -> bool:
    """Say whether ``r``'s words are another agent's private ones (``engram log``'s rule)."""
    return r.visibility == "private" and viewer != r.agent


def _reflection(r: Reflection, viewer: str | None = None) -> dict[str, Any]:
    hidden = _hidden(r, viewer)
    return {
        "position": r.position,
        "id": r.id,
        "agent": r.agent,
        "depth": r.depth,
        "importance": r.importance,
        "visibility": r.visibility,
        "at": datetime.fromtimestamp(r.at_us / 1_000_000, UTC),
        "question": PRIVATE if hidden and r.question else r.question,
        "text": PRIVATE if hidden else r.text,
    }


@reflections.command(
    epilog=examples("engram reflections show 42", "engram reflections show 42 --format json")
)
@click.argument("reflection", metavar="ID|POSITION")
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show AGENT's private words (others' [private])."
)
@output_format()
def show(reflection: str, viewer: str | None, fmt: str) -> None:
    """Show a reflection and the events its evidence resolves to.

    The first row is the reflection; each next row is one evidence id resolved to its ledger
    event (role "evidence"), or marked "unresolved" when it names no earlier memory.
    """
    out = state()
    with opened(out.settings()) as memory:
        with memory.engine.read() as conn:
            found = (
                projection.by_position(conn, int(reflection))
                if reflection.isdigit()
                else projection.by_id(conn, reflection)
            )
            if found is None:
                raise CliError(f"no reflection with id or position {reflection!r}")
            evidence = projection.evidence(conn, found.position)
        resolved = [e.position for e in evidence if e.position is not None]
        events = {e.position: e for e in memory.ledger.get(resolved)} if resolved else {}
        reflected = any(e.kind == "memory.reflected" for e in events.values())
        gone = retracted_positions(memory.ledger) if reflected else set()
    rows: list[dict[str, Any]] = [
        {
            "role": "reflection",
            "position": found.position,
            "id": found.id,
            "kind": "memory.reflected",
            "agent": found.agent,
            "depth": found.depth,
            "at": datetime.fromtimestamp(found.at_us / 1_000_000, UTC),
            "text": PRIVATE if _hidden(found, viewer) else found.text,
        }
    ]
    for item in evidence:
        event = events.get(item.position) if item.position is not None else None
        shown = event and retracted(masked(event, viewer), gone)
        rows.append(_evidence(item.id, item.depth, shown))
    question = PRIVATE if _hidden(found, viewer) and found.question else found.question
    note(f"question: {question}" if question else "no focal question recorded")
    out.render(rows, fmt, columns=_ROW_COLUMNS, widths={"text": 80})


def _evidence(id: str, depth: int | None, event: Event | None) -> dict[str, Any]:
    if event is None:
        return dict.fromkeys(_ROW_COLUMNS) | {"role": "unresolved", "id": id}
    return {
        "role": "evidence",
        "position": event.position,
        "id": event.id,
        "kind": event.kind,
        "agent": event.payload.agent,
        "depth": depth,
        "at": event.at,
        "text": event.payload.text,
    }
