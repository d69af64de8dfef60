"""Signals and the shared memo from the command line: ``engram signals``, ``engram memo``."""

from __future__ import annotations

import click

from engram.cli.app import cli, examples
from engram.cli.base import opened, output_format, state

SIGNAL_COLUMNS = ("position", "id", "sent_at", "sender", "to", "topic", "body")


@cli.group(
    epilog=examples(
        "engram signals list planner",
        'engram signals send perception planner task.new --body "summarise the report"',
        "engram signals ack planner 0196a3c0-...",
    )
)
def signals() -> None:
    """Send signals between agents through the ledger, read inboxes, acknowledge.

    A signal goes to one agent, or to "*" (every agent but the sender). It waits in the
    inbox until its agent acknowledges it.
    """


@signals.command(name="list", epilog=examples("engram signals list planner --format json"))
@click.argument("agent")
@click.option(
    "--limit", type=click.IntRange(min=1), default=100, show_default=True, help="Rows to print."
)
@output_format()
def list_signals(agent: str, limit: int, fmt: str) -> None:
    """Print AGENT's inbox: the signals it has not acknowledged, oldest first."""
    out = state()
    with opened(out.settings()) as memory:
        waiting = memory.mailbox(agent).inbox(limit=limit)
    out.render(
        (
            {
                "position": s.position,
                "id": s.id,
                "sent_at": s.sent_at.isoformat(),
                "sender": s.sender,
                "to": s.to,
                "topic": s.topic,
                "body": s.body,
            }
            for s in waiting
        ),
        fmt,
        columns=SIGNAL_COLUMNS,
    )


@signals.command(epilog=examples('engram signals send critic "*" review --body "check impact"'))
@click.argument("sender")
@click.argument("to")
@click.argument("topic")
@click.option("--body", default="", help="What the signal says.")
def send(sender: str, to: str, topic: str, body: str) -> None:
    """Send a signal from SENDER to agent TO ("*": every other agent) about TOPIC."""
    out = state()
    with opened(out.settings(create=True), actor=sender, catch_up=False) as memory:
        position = memory.mailbox(sender).send(to, topic, body)
    out.echo(f"sent at position {position}")


@signals.command(epilog=examples("engram signals ack planner 0196a3c0-8e1f-7c2a-9b1d-3f4e5a6b7c8d"))
@click.argument("agent")
@click.argument("signal_ids", nargs=-1, required=True, metavar="SIGNAL_ID...")
def ack(agent: str, signal_ids: tuple[str, ...]) -> None:
    """Acknowledge signals (by event id) for AGENT: they leave its inbox.

    Acknowledging one again changes nothing.
    """
    out = state()
    with opened(out.settings(), actor=agent) as memory:
        box = memory.mailbox(agent)
        for signal_id in signal_ids:
            out.echo(f"acknowledged {signal_id} at position {box.ack(signal_id)}")


@cli.group(
    epilog=examples(
        "engram memo read standup",
        'engram memo post standup planner "draft ready for review"',
    )
)
def memo() -> None:
    """Post to and read a session's shared memo (its newest 50 notes)."""


@memo.command(epilog=examples("engram memo read standup --limit 5 --format jsonl"))
@click.argument("session")
@click.option(
    "--limit", type=click.IntRange(1, 50), default=50, show_default=True, help="Newest notes."
)
@output_format()
def read(session: str, limit: int, fmt: str) -> None:
    """Print SESSION's newest notes, oldest first."""
    out = state()
    with opened(out.settings()) as memory:
        notes = memory.memo(session).read(limit=limit)
    out.render(
        (
            {
                "position": n.position,
                "posted_at": n.posted_at.isoformat(),
                "agent": n.agent,
                "text": n.text,
            }
            for n in notes
        ),
        fmt,
        columns=("position", "posted_at", "agent", "text"),
    )


@memo.command(epilog=examples('engram memo post standup planner "draft ready"'))
@click.argument("session")
@click.argument("agent")
@click.argument("text")
def post(session: str, agent: str, text: str) -> None:
    """Post TEXT as AGENT to SESSION's memo."""
    out = state()
    with opened(out.settings(create=True), actor=agent, catch_up=False) as memory:
        position = memory.memo(session).post(agent, text)
    out.echo(f"posted at position {position}")
