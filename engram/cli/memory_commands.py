"""Commands over memory and projections: observe, archive, recall, status, rebuild, graph."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import click

from engram.agents.arguments import DetectionWarning, LongTextWarning
from engram.agents.recalled import RecallResult
from engram.agents.scopes import SCOPES, item_author, item_text, item_type
from engram.cli.app import cli, examples
from engram.cli.base import (
    TIME,
    Finite,
    State,
    as_of_option,
    note,
    one_of_renamed,
    opened,
    output_format,
    refuse_existing,
    renamed_option,
    state,
    sync_vectors,
)
from engram.ledger import Event
from engram.ledger.files import write_atomically
from engram.ledger.personal import masked
from engram.projections.engine import ProjectionStatus
from engram.projections.errors import ProjectionStoreDamagedError
from engram.projections.salience import MAX as SALIENCE_MAX
from engram.projections.store import set_aside

MEMORY_TYPES = ("observation", "plan", "thought")
RECALL_SCOPES = (*SCOPES, "all")


@cli.command(
    epilog=examples(
        'engram observe alice "The deploy failed at 3am" --importance 8 --tag deploy',
        'engram observe planner "Roll back first, then bisect" --type plan',
    )
)
@click.argument("agent")
@click.argument("text")
@click.option(
    "--type",
    "memory_type",
    type=click.Choice(MEMORY_TYPES),
    default="observation",
    show_default=True,
    help="What the memory is.",
)
@click.option("--importance", type=click.IntRange(1, 10), help="1..10 (default: scored once).")
@click.option(
    "--visibility",
    type=click.Choice(["public", "private"]),
    default="public",
    show_default=True,
    help="Private memories are recalled by their agent only.",
)
@click.option("--source", help="A reference to where it came from.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--at", type=TIME, default=None, help="Event time: ISO-8601 with zone (default now).")
@click.option(
    "--supersedes",
    "supersedes",
    multiple=True,
    type=click.IntRange(min=1),
    help="The position of an earlier memory of AGENT this one replaces (repeatable).",
)
@click.option(
    "--valid-from",
    type=TIME,
    default=None,
    help="With --supersedes: when the replaced ones stopped being true (default: --at).",
)
def observe(
    agent: str,
    text: str,
    memory_type: str,
    importance: int | None,
    visibility: str,
    source: str | None,
    tags: tuple[str, ...],
    at: datetime | None,
    supersedes: tuple[int, ...],
    valid_from: datetime | None,
) -> None:
    """Append an agent's observation, plan or thought.

    One memory.observed event on AGENT's stream. Without --importance the heuristic scorer rates
    it once; the rating is stored in the event, so a rebuild replays it. With --supersedes, the
    same event says it replaces those earlier memories (checked first: a bad position writes
    nothing).
    """
    out = state()
    with (
        opened(out.settings(create=True), actor=agent, catch_up=False) as memory,
        warnings.catch_warnings(record=True) as told,
    ):
        warnings.simplefilter("always", LongTextWarning)
        warnings.simplefilter("always", DetectionWarning)
        position = memory.agent(agent).observe(
            text,
            type=memory_type,  # type: ignore[arg-type]
            importance=importance,
            visibility=visibility,  # type: ignore[arg-type]
            source=source,
            tags=tags,
            at=at,
            supersedes=supersedes,
            valid_from=valid_from,
        )
        event = next(memory.ledger.read(position - 1, limit=1))
    for warning in told:
        note(f"warning: {warning.message}")
    out.echo(f"observed at position {position} (importance {event.payload.importance})")


@cli.command(epilog=examples("engram archive --agent alice 42 57 --reason 'resolved'"))
@click.option("--agent", required=True, help="The agent whose memories these are.")
@click.argument("positions", nargs=-1, required=True, type=click.IntRange(min=1))
@click.option("--reason", help="Why, recorded in the event.")
def archive(agent: str, positions: tuple[int, ...], reason: str | None) -> None:
    """Archive an agent's own memories: recall skips them.

    POSITIONS are those of memory.observed events of the agent. One memory.archived event;
    no recall path serves them again.
    """
    out = state()
    with opened(out.settings(), actor=agent, catch_up=False) as memory:
        position = memory.agent(agent).archive(list(positions), reason=reason)
    archived = " ".join(str(p) for p in positions)
    out.echo(f"archived at position {position} (memories {archived})")


@cli.command(
    epilog=examples(
        'engram recall alice "what went wrong with the deploy?" -k 5',
        'engram recall alice "deploy" --no-record --format json | jq ".[0].text"',
        'engram recall alice "deploy" --as-of 2026-05-01T00:00:00Z --type plan',
        'engram recall alice "migration locked the table" --scope scars',
        'engram recall alice "where does Alice live?" --valid-at 2026-03-01T00:00:00Z',
    )
)
@click.argument("agent")
@click.argument("query")
@click.option("-k", type=click.IntRange(min=1), default=10, show_default=True, help="How many.")
@as_of_option
@click.option(
    "--type",
    "memory_types",
    multiple=True,
    type=click.Choice(MEMORY_TYPES),
    help="Only this type of memory (repeatable).",
)
@click.option(
    "--min-score",
    type=Finite(0.0, 1.0),
    default=None,
    help="Serve only items whose score (0..1, comparable across queries) reaches this "
    "(default: the calibrated floor; 0 serves every candidate).",
)
@click.option(
    "--valid-at",
    type=TIME,
    default=None,
    help="Ask what was true at this time (valid time; memories only): a memory not yet true "
    "then is left out, one replaced by then comes below what replaced it (default: now).",
)
@click.option("--no-record", is_flag=True, help="Do not append memory.recalled.")
@click.option(
    "--scope",
    type=click.Choice(RECALL_SCOPES),
    default="memories",
    show_default=True,
    help="What to recall: memories, scars (failures), victories, reflections, or all of them.",
)
@output_format()
def recall(
    agent: str,
    query: str,
    k: int,
    as_of: datetime | None,
    memory_types: tuple[str, ...],
    min_score: float | None,
    valid_at: datetime | None,
    no_record: bool,
    scope: str,
    fmt: str,
) -> None:
    """Recall what matters to an agent for a query.

    Hybrid recall: lexical (BM25) and semantic (FAISS) candidates, fused. Each item comes with
    its score (0..1, comparable across queries: the calibrated relevance weighed by recency
    and importance) and its components; copies of one memory fold into one item (copies
    says how many). --min-score (default: the calibrated floor) makes "nothing relevant" a
    possible answer. --as-of asks what the store knew then (record time), --valid-at what
    was true then (valid time). AGENT sees its own memories and public ones. The recall is
    appended as memory.recalled unless --no-record. With --scope other than memories, score
    is similarity x (1 + importance/10) x exp(-age_days/365) and match is the similarity
    (see engram scars recall).
    """
    out = state()
    with opened(out.settings(), actor=agent) as memory:
        sync_vectors(memory)
        result = memory.agent(agent).recall(
            query,
            k,
            as_of=as_of,
            types=list(memory_types) or None,
            record=not no_record,
            scope=scope,
            min_score=min_score,
            valid_at=valid_at,
        )
    if result.fallback:
        note(f"note: {result.fallback}")
    out.render(
        _recall_records(result),
        fmt,
        columns=list(_RECALL_COLUMNS),
        table_columns=["position", "score", "copies", "replaced_by", "recency", "agent", "text"],
        widths={"text": 70},
    )
    if result.recorded_at is not None:
        note(f"recorded as memory.recalled at position {result.recorded_at}")


_RECALL_COLUMNS = (
    "position",
    "score",
    "relevance",
    "recency",
    "importance",
    "match",
    "fused",
    "bm25",
    "cosine",
    "copies",
    "copy_positions",
    "replaced_by",
    "refused",
    "agent",
    "type",
    "text",
    "source",
    "at",
    "id",
    "via",
)


def _recall_records(result: RecallResult) -> Iterable[dict[str, Any]]:
    for r in result.items:
        yield {
            "position": r.event.position,
            "score": round(r.score, 6),
            "relevance": round(r.relevance, 6),
            "recency": round(r.recency, 6),
            "importance": round(r.importance, 6),
            "match": round(r.match, 6),
            "fused": round(r.fused, 6),
            "bm25": None if r.bm25 is None else round(r.bm25, 6),
            "cosine": None if r.cosine is None else round(r.cosine, 6),
            "copies": r.copies,
            "copy_positions": list(r.copy_positions or (r.event.position,)),
            "replaced_by": r.replaced_by,
            "refused": r.refused,
            "agent": item_author(r.event),
            "type": item_type(r.event),
            "text": item_text(r.event, refused=r.refused),
            "source": getattr(r.event.payload, "source", None),
            "at": r.event.at,
            "id": r.event.id,
            "via": list(r.via),
        }


_STATUS_TABLE = ["name", "version", "generation", "checkpoint", "head", "lag", "state"]


def _render_status(rows: list[ProjectionStatus], fmt: str, digest: bool) -> None:
    shown = _STATUS_TABLE + (["digest"] if digest else [])
    if any(r.error for r in rows):
        shown.append("error")
    state().render(
        (r._asdict() for r in rows),
        fmt,
        columns=list(ProjectionStatus._fields),
        table_columns=shown,
        widths={"digest": 64, "error": 100},
    )


@cli.command(epilog=examples("engram status", "engram status --digest --format json"))
@click.option("--digest", is_flag=True, help="Also compute each state's sha256 digest.")
@output_format()
def status(digest: bool, fmt: str) -> None:
    """Show each projection's checkpoint, lag and state.

    The lag is how far its checkpoint is behind the ledger's head. States: live, stale (its code
    changed: rebuilt on next use), rebuilding (a rebuild was interrupted: resumed on next use)
    and failed (the error names the event). Once a daemon has run on the store, its liveness
    follows on stderr.
    """
    from engram.jobs.status import liveness, read_status, status_path

    out = state()
    settings = out.settings()
    with opened(settings, catch_up=False) as memory:
        _render_status(memory.engine.status(digest=digest), fmt, digest)
    record = read_status(status_path(settings.projection_store))
    if record is not None:  # a daemon has run on this store
        daemon = liveness(record)
        note(f"daemon: {daemon.state} ({daemon.detail}); engram jobs shows its jobs")


@cli.command(epilog=examples("engram rebuild", "engram rebuild salience lexical"))
@click.argument("names", nargs=-1, metavar="[NAME]...")
@output_format()
def rebuild(names: tuple[str, ...], fmt: str) -> None:
    """Rebuild projections from the ledger and swap them in.

    NAMEs default to every projection; each is built beside the live one. Readers keep the old
    state until the swap. Shows progress with rate and ETA on a terminal, then the status with
    each state's digest.
    """
    out = state()
    try:
        _rebuild(out, names, fmt)
    except ProjectionStoreDamagedError as exc:
        # Derived from the ledger: a damaged store is set aside and built again, all of it.
        aside = set_aside(exc.directory)
        note(f"{exc}\nset aside as {aside}; rebuilding every projection from the ledger")
        _rebuild(out, (), fmt)


def _rebuild(out: State, names: tuple[str, ...], fmt: str) -> None:
    with opened(out.settings(), catch_up=False) as memory:
        bar = out.progress()
        if bar is None:
            memory.engine.rebuild(list(names) or None)
        else:
            with bar.start("rebuild", memory.ledger.head()):
                memory.engine.rebuild(list(names) or None, progress=bar)
        _render_status(memory.engine.status(digest=True), fmt, True)


@cli.group(epilog=examples("engram graph top -k 5", "engram graph export --out graph.json"))
def graph() -> None:
    """Inspect the neuron graph.

    The most salient neurons, spreading-activation waves, the JSON export.
    """


@graph.command(
    epilog=examples(
        "engram graph export > graph.json",
        "engram graph export --out graph.json --force",
        "engram graph export --as-of now | head",
    )
)
@as_of_option
@click.option(
    "--out",
    "target",
    type=click.Path(dir_okay=False, allow_dash=False),
    help="Write to this file instead of stdout (a new file, unless --force).",
)
@click.option("--force", is_flag=True, help="Replace the --out file if it exists.")
def export(as_of: datetime | None, target: str | None, force: bool) -> None:
    """Print the graph as JSON in the agents' format.

    Neurons with their salience and connections, and metadata. --out writes a new file
    whole or not at all; an existing one (or a link) is replaced only with --force, and
    then the link itself, never the file it points to.
    """
    if target is not None:
        refuse_existing(target, force, "--out")
    out = state()
    with opened(out.settings()) as memory:
        data = memory.network.export(as_of=as_of)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if target is None:
        out.echo(text)
        return
    try:
        write_atomically(target, (text + "\n").encode("utf-8"))
    except OSError as exc:
        raise click.FileError(target, exc.strerror or str(exc)) from None
    note(f"wrote {len(data['neurons'])} neurons to {target}")


@graph.command(
    epilog=examples(
        "engram graph propagate n_perception_001 --depth 2",
        "engram graph propagate n_perception_001 --append --cause 'user request'",
    )
)
@click.argument("neurons", nargs=-1, required=True, metavar="NEURON...")
@click.option("--strength", type=Finite(), default=1.0, show_default=True, help="Seed strength.")
@click.option(
    "--depth", type=click.IntRange(min=0), default=3, show_default=True, help="Maximum hops."
)
@click.option("--decay", type=Finite(0, 1), default=0.9, show_default=True, help="Kept per hop.")
@click.option(
    "--min-strength",
    type=Finite(min=0),
    default=0.01,
    show_default=True,
    help="Weaker activations stop spreading.",
)
@as_of_option
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Rows to print."
)
@click.option("--append", "record", is_flag=True, help="Append the wave's activations.")
@click.option(
    "--cause", default="cli stimulus", show_default=True, help="The cause recorded with --append."
)
@output_format()
def propagate(
    neurons: tuple[str, ...],
    strength: float,
    depth: int,
    decay: float,
    min_strength: float,
    as_of: datetime | None,
    limit: int,
    record: bool,
    cause: str,
    fmt: str,
) -> None:
    """Run a spreading-activation wave; write nothing unless --append.

    The wave starts from the seed NEURONs, each at --strength.
    """
    out = state()
    with opened(out.settings()) as memory:
        seeds = dict.fromkeys(neurons, strength)
        options: dict[str, Any] = {
            "max_depth": depth,
            "decay": decay,
            "min_strength": min_strength,
        }
        if record:
            result = memory.network.stimulate(seeds, cause=cause, at=as_of, **options)
            activation = result.activation
            note(
                f"appended {len(result.positions)} activations"
                f" (correlation {result.correlation_id})"
            )
        else:
            activation = memory.network.propagate(seeds, as_of=as_of, **options)
    out.render(
        (
            {"neuron": neuron, "hop": activation.hops[neuron], "activation": round(level, 6)}
            for neuron, level in activation.strongest(limit)
        ),
        fmt,
        columns=["neuron", "hop", "activation"],
    )


#: What ``engram graph top`` ranks: the salience index's items.
_RANKED = ["neuron", "memory"]


@graph.command(
    epilog=examples(
        "engram graph top -k 5", "engram graph top --item memory --as-of 2026-05-01T00:00:00Z"
    )
)
@click.option("-k", type=click.IntRange(min=1), default=10, show_default=True, help="How many.")
@as_of_option
@click.option(
    "--item",
    "items",
    multiple=True,
    type=click.Choice(_RANKED),
    help="What to rank: neurons, memories (repeatable; default neuron).",
)
@renamed_option("--kind", "--item", "old_items", multiple=True, type=click.Choice(_RANKED))
@click.option(
    "--as", "viewer", metavar="AGENT", help="Show AGENT's private memories (others' [private])."
)
@output_format()
def top(
    k: int,
    as_of: datetime | None,
    items: tuple[str, ...],
    old_items: tuple[str, ...],
    viewer: str | None,
    fmt: str,
) -> None:
    """List the most salient items as of a time.

    Salience decays lazily, 0.99 per hour by default (the decay_rate setting); it is shown
    from 0 to 1, "stored" as last written (before decay), beside what the item is. Another
    agent's private memory reads [private] (ADR 0144).
    """
    out = state()
    with opened(out.settings()) as memory:
        wanted = one_of_renamed(items, old_items, "--kind", "--item") or ("neuron",)
        ranked = memory.network.top(k, as_of=as_of, items=wanted)
        events = {
            e.position: masked(e, viewer) for e in memory.ledger.get([i.position for i in ranked])
        }
    out.render(
        (
            {
                "kind": i.kind,
                "id": i.id,
                "salience": round(i.salience / SALIENCE_MAX, 4),
                "stored": round(i.stored / SALIENCE_MAX, 4),
                "text": _what(events.get(i.position)),
            }
            for i in ranked
        ),
        fmt,
        columns=["kind", "id", "salience", "stored", "text"],
        widths={"text": 60},
    )


def _what(event: Event | None) -> str:
    """Return what a salient item is: a neuron's concept, a memory's or scar's text."""
    if event is None:
        return ""
    concept = getattr(event.payload, "concept", None)
    if isinstance(concept, str):
        return concept
    try:
        return item_text(event)
    except AttributeError:  # an item with no text of its own
        return ""
