"""``engram supersessions``: what replaced what, the proposals to review, and reverts (ADR 0075)."""

from __future__ import annotations

from typing import Any

import click

from engram.agents import scopes
from engram.agents import supersession as acts
from engram.cli.app import cli, examples
from engram.cli.base import opened, output_format, state
from engram.ledger.personal import masked
from engram.ledger.shred import PRIVATE
from engram.projections import supersession
from engram.runtime import Memory

_COLUMNS = ["event", "agent", "new", "replaces", "method", "similarity", "why"]
#: The memory stream reviews and reverts go through: the event names the memories' agent
#: and the reviewer, whatever the handle.
HANDLE = "cli"


def _texts(memory: Memory, positions: set[int], viewer: str | None) -> dict[int, str]:
    """Return each memory's text as ``viewer`` may read it: another agent's private one
    reads ``[private]``, as ``engram log`` shows it."""
    events = scopes.held_events(memory.ledger, positions)
    return {e.position: scopes.item_text(masked(e, viewer)) for e in events}


@cli.group(
    epilog=examples(
        "engram supersessions list",
        "engram supersessions list --status applied --agent ana --format json",
        "engram supersessions apply 812 --reviewer lead",
        "engram supersessions refuse 812 --reviewer lead --note 'both are true'",
        "engram supersessions revert 815 --reviewer lead --note 'she moved back'",
    )
)
def supersessions() -> None:
    """Review the replacements of memories: what detection proposed, what is in force.

    With `supersede = "review"` in the config, detection proposes and a person applies or
    refuses; with `apply` (the default) it applies at once, and any supersession can be
    reverted. Each decision is an event naming its reviewer; nothing is deleted.
    """


@supersessions.command(name="list", epilog=examples("engram supersessions list --agent ana"))
@click.option(
    "--status",
    type=click.Choice(["pending", "applied"]),
    default="pending",
    show_default=True,
    help="pending: proposals to review; applied: supersessions in force, newest first.",
)
@click.option("--agent", help="Only replacements of this agent's memories.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show AGENT's private memories (others' [private])."
)
@output_format()
def list_(status: str, agent: str | None, limit: int, viewer: str | None, fmt: str) -> None:
    """List proposals (oldest first) or supersessions in force, with both memories' texts
    (another agent's private memory, and why it was replaced, read [private] unless --as
    names that agent)."""
    out = state()
    with opened(out.settings()) as memory:
        with memory.engine.read() as conn:
            if status == "pending":
                rows: list[Any] = supersession.pending(conn, agent)[:limit]
            else:
                rows = supersession.in_force(conn, agent, limit)
        texts = _texts(memory, {p for r in rows for p in (r.new, *r.replaces)}, viewer)
    out.render(
        (
            {
                "event": r.event,
                "agent": r.agent,
                "new": f"#{r.new} {texts.get(r.new, '')}",
                "replaces": "; ".join(f"#{p} {texts.get(p, '')}" for p in r.replaces),
                "method": r.method,
                "similarity": getattr(r, "similarity", None),
                "why": PRIVATE if texts.get(r.new) == PRIVATE else r.why,
            }
            for r in rows
        ),
        fmt,
        columns=_COLUMNS,
        widths={"new": 40, "replaces": 40, "why": 40},
    )


def _decision(name: str, decision: str, summary: str) -> None:
    @supersessions.command(
        name=name, help=summary, epilog=examples(f"engram supersessions {name} 812 --reviewer lead")
    )
    @click.argument("proposal", type=click.IntRange(min=1))
    @click.option("--reviewer", required=True, envvar="ENGRAM_REVIEWER", help="Who decides.")
    @click.option("--note", default="", help="Why, recorded with the review.")
    def command(proposal: int, reviewer: str, note: str) -> None:
        out = state()
        with opened(out.settings()) as memory:
            position = acts.review(
                memory.agent(HANDLE), proposal, decision, reviewer=reviewer, note=note
            )
        out.echo(f"proposal {proposal} {decision} by {reviewer} at position {position}")


_decision("apply", "applied", "Apply a pending proposal: the new memory replaces the old ones.")
_decision("refuse", "refused", "Refuse a pending proposal: both memories stay current.")


@supersessions.command(epilog=examples("engram supersessions revert 815 --reviewer lead"))
@click.argument("event", type=click.IntRange(min=1))
@click.option("--reviewer", required=True, envvar="ENGRAM_REVIEWER", help="Who decides.")
@click.option("--note", default="", help="Why, recorded with the revert.")
def revert(event: int, reviewer: str, note: str) -> None:
    """Undo the supersession applied at EVENT: the old memory is current again."""
    out = state()
    with opened(out.settings()) as memory:
        position = acts.revert(memory.agent(HANDLE), event, reviewer=reviewer, note=note)
    out.echo(f"supersession {event} reverted by {reviewer} at position {position}")
