"""The ``engram`` commands over projections: rebuild, status, graph export/propagate/top."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import IO, Any

from engram.agents.memory import RecallResult
from engram.config import Settings
from engram.progress import ProgressBar
from engram.projections.engine import ProjectionStatus
from engram.runtime import Memory, open_parts


def parse_as_of(text: str) -> datetime:
    """Parse ``now`` or an ISO-8601 time with a timezone (``Z`` allowed)."""
    if text.strip().lower() == "now":
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} has no timezone; add one, e.g. {text}Z or {text}+00:00"
        )
    return value


@contextmanager
def opened(settings: Settings, *, actor: str = "cli", catch_up: bool = True) -> Iterator[Memory]:
    """Open the ledger and the projections for one command, caught up unless told not to."""
    with open_parts(settings, actor=actor) as memory:
        if catch_up:
            memory.engine.catch_up(progress=ProgressBar())
        yield memory


def cmd_rebuild(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings, catch_up=False) as memory:
        memory.engine.rebuild(args.names or None, progress=ProgressBar())
        _print_status(memory.engine.status(digest=True), "table", out)
    return 0


def cmd_status(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings, catch_up=False) as memory:
        _print_status(memory.engine.status(digest=args.digest), args.format, out)
    return 0


def _print_status(rows: list[ProjectionStatus], fmt: str, out: IO[str]) -> None:
    if fmt == "json":
        print(json.dumps([r._asdict() for r in rows], indent=2), file=out)
        return
    print(f"{'projection':<14} {'version':>7} {'checkpoint':>10} {'lag':>8}  state", file=out)
    for r in rows:
        print(f"{r.name:<14} {r.version:>7} {r.checkpoint:>10} {r.lag:>8}  {r.state}", file=out)
        if r.error:
            print(f"{'':<14} error: {r.error}", file=out)
        if r.digest:
            print(f"{'':<14} digest: {r.digest}", file=out)


def cmd_graph_export(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings) as memory:
        graph = memory.network.export(as_of=args.as_of)
    text = json.dumps(graph, indent=2, ensure_ascii=False)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
        print(f"wrote {len(graph['neurons'])} neurons to {args.out}", file=out)
    else:
        print(text, file=out)
    return 0


def cmd_graph_propagate(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings) as memory:
        seeds = dict.fromkeys(args.neurons, args.strength)
        options = {"max_depth": args.depth, "decay": args.decay, "min_strength": args.min_strength}
        if args.append:
            result = memory.network.stimulate(seeds, cause=args.cause, at=args.as_of, **options)
            activation = result.activation
            print(
                f"appended {len(result.positions)} activations"
                f" (correlation {result.correlation_id})",
                file=out,
            )
        else:
            activation = memory.network.propagate(seeds, as_of=args.as_of, **options)
    print(f"{'neuron':<32} {'hop':>3} {'activation':>12}", file=out)
    for neuron, level in activation.strongest(args.limit):
        print(f"{neuron:<32} {activation.hops[neuron]:>3} {level:>12.6f}", file=out)
    return 0


def cmd_graph_top(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings) as memory:
        items = memory.network.top(args.k, as_of=args.as_of, kinds=args.kind or ("neuron",))
    print(f"{'kind':<8} {'id':<40} {'salience':>8} {'stored':>8}", file=out)
    for item in items:
        print(f"{item.kind:<8} {item.id:<40} {item.salience:>8} {item.stored:>8}", file=out)
    return 0


def cmd_observe(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings, actor=args.agent, catch_up=False) as memory:
        position = memory.agent(args.agent).observe(
            args.text,
            type=args.type,
            importance=args.importance,
            visibility=args.visibility,
            source=args.source,
            tags=args.tag or (),
            at=args.at,
        )
        event = next(memory.ledger.read(position - 1, limit=1))
    print(f"observed at position {position} (importance {event.payload.importance})", file=out)
    return 0


def cmd_archive(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings, actor=args.agent, catch_up=False) as memory:
        position = memory.agent(args.agent).archive(args.positions, reason=args.reason)
    archived = " ".join(str(p) for p in args.positions)
    print(f"archived at position {position} (memories {archived})", file=out)
    return 0


def cmd_recall(settings: Settings, args: argparse.Namespace, out: IO[str]) -> int:
    with opened(settings, actor=args.agent) as memory:
        result = memory.agent(args.agent).recall(
            args.query, args.k, as_of=args.as_of, types=args.type, record=not args.no_record
        )
    if args.format == "json":
        print(json.dumps(_recall_json(result), indent=2, ensure_ascii=False), file=out)
        return 0
    if result.fallback:
        print(f"note: {result.fallback}", file=out)
    print(f"{'pos':>6} {'score':>6} {'rel':>5} {'rec':>5} {'imp':>5}  agent: text", file=out)
    for r in result.items:
        text = r.event.payload.text.replace("\n", " ")
        text = text if len(text) <= 70 else text[:69] + "…"
        print(
            f"{r.event.position:>6} {r.score:>6.3f} {r.relevance:>5.2f} {r.recency:>5.2f}"
            f" {r.importance:>5.2f}  {r.event.payload.agent}: {text}",
            file=out,
        )
    if result.recorded_at is not None:
        print(f"recorded as memory.recalled at position {result.recorded_at}", file=out)
    return 0


def _recall_json(result: RecallResult) -> dict[str, Any]:
    return {
        "query": result.query,
        "as_of": result.as_of.isoformat(),
        "fallback": result.fallback,
        "recorded_at": result.recorded_at,
        "items": [
            {
                "position": r.event.position,
                "id": r.event.id,
                "at": r.event.at.isoformat(),
                "agent": r.event.payload.agent,
                "type": r.event.payload.type,
                "text": r.event.payload.text,
                "source": r.event.payload.source,
                "score": r.score,
                "relevance": r.relevance,
                "recency": r.recency,
                "importance": r.importance,
                "via": list(r.via),
            }
            for r in result.items
        ],
    }


Command = Callable[[Settings, argparse.Namespace, IO[str]], int]


def add_commands(sub: argparse._SubParsersAction) -> dict[str, Command]:  # type: ignore[type-arg]
    """Register the projection and graph commands; return name -> handler."""
    p = sub.add_parser("rebuild", help="rebuild projections from the ledger and swap them in")
    p.add_argument("names", nargs="*", metavar="NAME", help="projections (default: all)")

    p = sub.add_parser("status", help="show each projection's checkpoint, lag and state")
    p.add_argument("--digest", action="store_true", help="also compute each state digest")
    p.add_argument("--format", choices=["table", "json"], default="table")

    graph = sub.add_parser("graph", help="inspect the neuron graph")
    gsub = graph.add_subparsers(dest="graph_command", required=True, metavar="GRAPH_COMMAND")
    p = gsub.add_parser("export", help="print the graph as JSON in the agents' format")
    p.add_argument("--as-of", type=parse_as_of, default=None, help="ISO time with zone or now")
    p.add_argument("--out", help="write to this file instead of stdout")

    p = gsub.add_parser("propagate", help="run a spreading-activation wave (writes nothing)")
    p.add_argument("neurons", nargs="+", metavar="NEURON", help="seed neuron ids")
    p.add_argument("--strength", type=float, default=1.0, help="seed strength (default 1.0)")
    p.add_argument("--depth", type=int, default=3, help="maximum hops (default 3)")
    p.add_argument("--decay", type=float, default=0.9, help="per-hop decay (default 0.9)")
    p.add_argument("--min-strength", type=float, default=0.01, help="default 0.01")
    p.add_argument("--as-of", type=parse_as_of, default=None, help="ISO time with zone or now")
    p.add_argument("--limit", type=int, default=20, help="rows to print (default 20)")
    p.add_argument("--append", action="store_true", help="append the wave's activations")
    p.add_argument("--cause", default="cli stimulus", help="cause recorded with --append")

    p = gsub.add_parser("top", help="the most salient items as of a time")
    p.add_argument("-k", type=int, default=10, help="how many (default 10)")
    p.add_argument("--as-of", type=parse_as_of, default=None, help="ISO time with zone or now")
    p.add_argument("--kind", action="append", choices=["neuron", "memory"], help="item kind")
    p = sub.add_parser("observe", help="append an agent's observation, plan or thought")
    p.add_argument("agent", help="the observing agent")
    p.add_argument("text", help="what was observed")
    p.add_argument("--type", choices=["observation", "plan", "thought"], default="observation")
    p.add_argument("--importance", type=int, help="1..10 (default: scored by the heuristic)")
    p.add_argument("--visibility", choices=["public", "private"], default="public")
    p.add_argument("--source", help="a reference to where it came from")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--at", type=parse_as_of, default=None, help="event time (default now)")

    p = sub.add_parser("archive", help="archive an agent's own memories: recall skips them")
    p.add_argument("--agent", required=True, help="the agent whose memories these are")
    p.add_argument("positions", nargs="+", type=int, metavar="POSITION", help="memory positions")
    p.add_argument("--reason", help="why, recorded in the event")

    p = sub.add_parser("recall", help="recall what matters to an agent for a query")
    p.add_argument("agent", help="the recalling agent (sees its own and public items)")
    p.add_argument("query", help="what to recall")
    p.add_argument("-k", type=int, default=10, help="how many (default 10)")
    p.add_argument("--as-of", type=parse_as_of, default=None, help="ISO time with zone or now")
    p.add_argument("--type", action="append", choices=["observation", "plan", "thought"])
    p.add_argument("--no-record", action="store_true", help="do not append memory.recalled")
    p.add_argument("--format", choices=["table", "json"], default="table")
    return {
        "observe": cmd_observe,
        "archive": cmd_archive,
        "recall": cmd_recall,
        "rebuild": cmd_rebuild,
        "status": cmd_status,
        "graph export": cmd_graph_export,
        "graph propagate": cmd_graph_propagate,
        "graph top": cmd_graph_top,
    }
