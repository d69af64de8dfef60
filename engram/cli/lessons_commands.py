"""Commands of the lessons loop: suggestions (list, show, apply, refuse, modify), learn, rules."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, cast

import click

from engram.agents.completion import CompletionConfigWarning
from engram.agents.guidance import stands_apart
from engram.agents.learning import DEFAULT_BATCH, routed_drafter
from engram.agents.lessons import DESTINATIONS, Lessons
from engram.cli.app import cli, examples
from engram.cli.base import CliError, note, opened, output_format, state
from engram.config import Settings
from engram.ledger.catalog import Destination
from engram.projections.rules import Rule
from engram.projections.suggestions import STATUSES, Suggestion

_LIST_COLUMNS = [
    "id", "status", "destination", "tellings", "text", "drafter", "reviewer", "final_text"
]  # fmt: skip
_SHOW_COLUMNS = ["id", "status", "destination", "text", "reviewer", "final_text", "written_path"]


@contextmanager
def _lessons(settings: Settings, *, learning: bool = False) -> Iterator[Lessons]:
    """Open the loop over the settings' ledger, with its destinations and drafter."""
    with opened(settings) as memory:
        completer = None
        if learning:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", CompletionConfigWarning)
                completer = routed_drafter(settings.routing or None)
            for warning in caught:
                note(f"warning: {warning.message}")
            if not stands_apart(memory.embedder):
                note(
                    "note: no neural embedder (hash vectors): repeats of a mistake are merged "
                    "by their lessons' shared words only; install the 'embeddings' or 'onnx' "
                    "extra to merge paraphrases (docs/learning.md)"
                )
        yield Lessons(
            memory.ledger,
            memory.engine,
            places=dict(settings.destinations),
            completer=completer,
            embedder=memory.embedder,
            home=settings.lessons_home,
        )


def _record(s: Suggestion) -> dict[str, Any]:
    return {
        "id": s.id,
        "position": s.position,
        "status": s.status,
        "destination": s.destination,
        "text": s.text,
        "drafter": s.drafter,
        "scars": s.scars,
        "tellings": len(s.scars),  # the scars it cites: one mistake told this many times
        "diff": s.diff,
        "reviewer": s.reviewer,
        "note": s.note,
        "final_text": s.final_text,
        "reviewed_position": s.reviewed_position,
        "written_path": s.written_path,
        "written_position": s.written_position,
    }


@cli.group(
    epilog=examples(
        "engram suggestions list --status pending",
        "engram suggestions show 0b1c --format json",
        "engram suggestions apply 0b1c --reviewer ana",
        "engram suggestions modify 0b1c --reviewer ana --text 'Pin the parser version.'",
        "engram suggestions refuse 0b1c --reviewer ana --note 'too specific'",
    )
)
def suggestions() -> None:
    """Review the suggestions drawn from scars: nothing is applied until a person says so.

    A suggestion is named by its id or any unique prefix of it. Applying one whose
    destination is rules makes it a rule (engram rules); other destinations are written to
    the place the config file's [destinations] table gives, and the write is recorded.
    """


@suggestions.command(name="list", epilog=examples("engram suggestions list --status pending"))
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(STATUSES),
    help="Only suggestions with this status (repeatable).",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@output_format()
def list_(statuses: tuple[str, ...], limit: int | None, fmt: str) -> None:
    """List suggestions in the order they were proposed, with their status."""
    out = state()
    with _lessons(out.settings()) as lessons:
        found = lessons.suggestions(list(statuses) or None, limit)
    out.render(
        (_record(s) for s in found),
        fmt,
        columns=list(_record(found[0])) if found else _LIST_COLUMNS,
        table_columns=_LIST_COLUMNS,
        widths={"id": 36, "text": 60, "final_text": 40},
    )


@suggestions.command(
    epilog=examples("engram suggestions show 0b1c", "engram suggestions show 0b1c --format json")
)
@click.argument("suggestion")
@output_format()
def show(suggestion: str, fmt: str) -> None:
    """Show one suggestion: its scars, text, diff, review and write.

    Lifecycle events the ledger holds for it but the queue ignored (a second review, a
    review of a refused suggestion) are listed on stderr with the reason.
    """
    out = state()
    with _lessons(out.settings()) as lessons:
        found = lessons.suggestion(suggestion)
        ignored = lessons.ignored(found.id)
        told = lessons.told(found.id)
    tellings = [{"scar": s.id, "agent": s.agent, "what": s.what, "lesson": s.lesson} for s in told]
    record = {**_record(found), "told": tellings}
    if fmt != "table":
        out.render([record], fmt, columns=list(record))
    else:  # the suggestion, then each telling of its mistake on its own row
        del record["told"], record["scars"]
        out.render([record], fmt, columns=list(record), table_columns=_SHOW_COLUMNS)
        out.render(
            tellings,
            fmt,
            columns=["scar", "agent", "what", "lesson"],
            widths={"scar": 36, "what": 60, "lesson": 60},
        )
    for position, kind, reason in ignored:
        note(f"ignored {kind} at position {position}: {reason}")


def _reviewer_option(f: Any) -> Any:
    return click.option(
        "--reviewer",
        required=True,
        envvar="ENGRAM_REVIEWER",
        help="Who decides (env ENGRAM_REVIEWER).",
    )(f)


def _to_option(f: Any) -> Any:
    return click.option(
        "--to",
        "destination",
        type=click.Choice(list(DESTINATIONS)),
        help="Send it elsewhere than drafted (a lesson to rules, a rule to notes_inbox...).",
    )(f)


def _always_option(f: Any) -> Any:
    return click.option(
        "--always",
        is_flag=True,
        help="Mark the rule always-on (tier 1): loaded in every context frame, not only when "
        "a task calls for it.",
    )(f)


def _note_option(f: Any) -> Any:
    return click.option("--note", default="", help="Why, recorded with the review.")(f)


def _reviewed(lessons: Lessons, suggestion: str, position: int) -> None:
    found = lessons.suggestion(suggestion)
    where = ""
    if found.written_path is not None:
        where = f"; written to {found.written_path} (position {found.written_position})"
    elif found.destination == "rules" and found.status != "refused":
        where = "; served as a rule"
    state().echo(f"{found.status} {found.id} at position {position}{where}")


@suggestions.command(
    epilog=examples(
        "engram suggestions apply 0b1c --reviewer ana",
        "engram suggestions apply 0b1c --reviewer ana --always",
        "engram suggestions apply 0b1c --reviewer ana --to notes_inbox",
    )
)
@click.argument("suggestion")
@_reviewer_option
@_note_option
@_to_option
@_always_option
def apply(suggestion: str, reviewer: str, note: str, destination: str | None, always: bool) -> None:
    """Apply a suggestion as drafted.

    A rules suggestion becomes a rule, served when a task calls for it (or always, with
    --always); another destination is written to its file or folder (configured, or the
    default under the data directory) and the write is appended as suggestion.written.
    """
    out = state()
    with _lessons(out.settings()) as lessons:
        position = lessons.apply(
            suggestion,
            reviewer,
            note=note,
            always=always,
            destination=cast(Destination | None, destination),
        )
        _reviewed(lessons, suggestion, position)


@suggestions.command(epilog=examples("engram suggestions refuse 0b1c --reviewer ana --note 'no'"))
@click.argument("suggestion")
@_reviewer_option
@_note_option
def refuse(suggestion: str, reviewer: str, note: str) -> None:
    """Refuse a suggestion; its scars are not drafted again."""
    out = state()
    with _lessons(out.settings()) as lessons:
        position = lessons.refuse(suggestion, reviewer, note=note)
        _reviewed(lessons, suggestion, position)


@suggestions.command(
    epilog=examples(
        "engram suggestions modify 0b1c --reviewer ana --text 'Pin the parser version.'",
        "engram suggestions modify 0b1c --reviewer ana --text-file edited.md",
        "echo 'Pin it.' | engram suggestions modify 0b1c --reviewer ana --text-file -",
    )
)
@click.argument("suggestion")
@_reviewer_option
@click.option("--text", help="The final text.")
@click.option(
    "--text-file",
    type=click.File("r", encoding="utf-8"),
    help="Read the final text from this file (- for stdin).",
)
@_note_option
@_to_option
@_always_option
def modify(
    suggestion: str,
    reviewer: str,
    text: str | None,
    text_file: IO[str] | None,
    note: str,
    destination: str | None,
    always: bool,
) -> None:
    """Apply a suggestion with your own text instead of the drafted one (--always: the rule
    is always-on)."""
    if (text is None) == (text_file is None):
        raise click.UsageError("give the final text with exactly one of --text and --text-file")
    out = state()
    if text_file is not None:
        text = _read_text(text_file, out.settings().max_payload_bytes)
    with _lessons(out.settings()) as lessons:
        position = lessons.modify(
            suggestion,
            reviewer,
            text or "",
            note=note,
            always=always,
            destination=cast(Destination | None, destination),
        )
        _reviewed(lessons, suggestion, position)


def _read_text(text_file: IO[str], limit: int) -> str:
    """Read ``--text-file`` up to ``limit`` characters (no payload holds more): a device or a
    runaway file is refused, not read until memory runs out; so is text that is not UTF-8."""
    try:
        text = text_file.read(limit + 1)
    except UnicodeDecodeError as exc:
        raise CliError(f"--text-file is not valid UTF-8 ({exc.reason})") from None
    finally:
        if text_file is not sys.stdin:
            text_file.close()
    if len(text) > limit:
        raise CliError(f"--text-file holds more than {limit:,} characters: no payload holds it")
    return text.rstrip("\n")


@suggestions.command(epilog=examples("engram suggestions write 0b1c"))
@click.argument("suggestion")
def write(suggestion: str) -> None:
    """Write an applied suggestion that was not written (its apply was interrupted)."""
    out = state()
    with _lessons(out.settings()) as lessons:
        position = lessons.write(suggestion)
        if position is None:
            out.echo("a rule is served, not written")
            return
        found = lessons.suggestion(suggestion)
    out.echo(f"written to {found.written_path} (position {position})")


@cli.command(
    epilog=examples(
        "engram learn --dry-run",
        "engram learn --batch 5 --limit 20",
        "engram learn --format json | jq '.[].text'",
    )
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=DEFAULT_BATCH,
    show_default=True,
    help="Scars drafted per append.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many scars.")
@click.option("--dry-run", is_flag=True, help="Draft and show; append nothing.")
@output_format()
def learn(batch: int, limit: int | None, dry_run: bool, fmt: str) -> None:
    """Draft suggestions from the scars waiting for one, most important first.

    Personal data (emails, phones, IPs, keys and tokens, card numbers) is stripped before
    the drafter sees a scar, and from its answer. The drafter is the routing file's
    [complete.learn] route (default: offline, extractive). A model that is down leaves the
    scars waiting with the reason recorded (suggestion.deferred).
    """
    out = state()
    with _lessons(out.settings(), learning=True) as lessons:
        report = lessons.learn(batch=batch, limit=limit, dry_run=dry_run)
    records = (
        [
            {
                "scar": d.scar,
                "suggestion": d.suggestion,
                "destination": d.destination,
                "text": d.text,
                "position": d.position,
                "status": "would draft" if dry_run else "drafted",
                "reason": None,
            }
            for d in report.drafted
        ]
        + [
            {
                "scar": scar,
                "suggestion": None,
                "destination": None,
                "text": None,
                "position": None,
                "status": "deferred",
                "reason": reason,
            }
            for scar, reason in report.deferred
        ]
        + [
            {
                "scar": scar,
                "suggestion": suggestion,
                "destination": None,
                "text": None,
                "position": None,
                "status": "would join" if dry_run else "joined",
                "reason": "a repeat of the suggestion's mistake",
            }
            for suggestion, scar in report.joined
        ]
    )
    out.render(
        records,
        fmt,
        columns=["scar", "suggestion", "destination", "text", "position", "status", "reason"],
        table_columns=["scar", "status", "destination", "text", "reason"],
        widths={"scar": 36, "text": 60, "reason": 40},
    )
    scrubbed = sum(report.scrubbed.values()) + sum(report.filtered.values())
    verb = "would draft" if dry_run else "drafted"
    merged = sum(len(d.scars) > 1 for d in report.drafted)
    note(
        f"{verb} {len(report.drafted)} ({merged} from repeated scars), joined "
        f"{len(report.joined)} repeats, deferred {len(report.deferred)}, "
        f"{report.waiting} waiting; {scrubbed} personal-data items scrubbed"
    )
    if report.deferred and not dry_run and not report.drafted:
        raise CliError(f"no suggestion drafted: {report.deferred[0][1]}")


@cli.command(
    epilog=examples(
        "engram rules",
        "engram rules --query 'deploy migrations' -k 3 --format json",
    )
)
@click.option("--query", help="Only the rules that best match this text.")
@click.option("-k", type=click.IntRange(min=1), default=5, show_default=True, help="With --query.")
@output_format()
def rules(query: str | None, k: int, fmt: str) -> None:
    """List the rules every session loads: applied suggestions with destination rules."""
    out = state()
    with _lessons(out.settings()) as lessons:
        found: list[Rule] = (
            lessons.rules_for_query(query, k) if query is not None else lessons.rules()
        )
    out.render(
        (r._asdict() for r in found),
        fmt,
        columns=list(Rule._fields),
        table_columns=["position", "text", "reviewer", "always"]
        + (["score", "match"] if query else []),
        widths={"text": 90},
    )
