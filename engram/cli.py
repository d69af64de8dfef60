"""The ``engram`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import msgspec

import engram
from engram import cli_memory
from engram.agents.errors import AgentError
from engram.config import Settings, resolve_settings
from engram.ledger import (
    ANY,
    NO_STREAM,
    Event,
    EventError,
    Expectation,
    Ledger,
    LedgerError,
    NewEvent,
)
from engram.projections.errors import ProjectionError
from engram.runtime import open_settings


class _Line(msgspec.Struct, forbid_unknown_fields=True):
    """One JSON line of ``engram append``."""

    stream: str
    kind: str
    payload: dict[str, Any]
    actor: str = "cli"
    id: str | None = None
    at: datetime | None = None
    causation_id: str | None = None
    correlation_id: str | None = None


class CliError(Exception):
    """A usage or input error reported to the user with exit code 2."""


def _settings(args: argparse.Namespace) -> Settings:
    return resolve_settings(
        args.ledger, config=args.config, pg_schema=args.pg_schema, durability=args.durability
    )


def _open(args: argparse.Namespace) -> Ledger:
    return open_settings(_settings(args))


def _expectation(text: str) -> Expectation:
    lowered = text.strip().lower()
    if lowered == "any":
        return ANY
    if lowered in ("no_stream", "no-stream", "none"):
        return NO_STREAM
    try:
        value = int(lowered)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected any, no_stream or a version >= 1, got {text!r}")
    return value


def parse_lines(lines: Iterable[str]) -> tuple[list[NewEvent], list[int]]:
    """Parse JSON lines into events; return them with their line numbers."""
    decoder = msgspec.json.Decoder(_Line)
    events: list[NewEvent] = []
    numbers: list[int] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            line = decoder.decode(raw)
        except msgspec.DecodeError as exc:
            raise CliError(f"line {number}: {exc}") from None
        events.append(NewEvent(**msgspec.structs.asdict(line)))
        numbers.append(number)
    if not events:
        raise CliError("no events to append: the input is empty")
    return events, numbers


def cmd_init(args: argparse.Namespace, out: IO[str]) -> int:
    s = _settings(args)
    with cli_memory.opened(s, catch_up=False) as memory:
        ledger = memory.ledger
        print(f"ledger ready at {s.ledger} ({ledger.backend_name}, from {s.source})", file=out)
        print(f"projections at {s.projection_store}", file=out)
        positions = memory.network.bootstrap()
        if positions:
            print(
                f"bootstrapped the core network: positions {positions[0]}..{positions[-1]}",
                file=out,
            )
        else:
            print("core network already present: nothing appended", file=out)
        print(f"head: {ledger.head()}", file=out)
    return 0


def cmd_append(args: argparse.Namespace, out: IO[str]) -> int:
    stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    with stream:
        events, numbers = parse_lines(stream)
    with _open(args) as ledger:
        try:
            positions = ledger.append(events, expect=args.expect)
        except EventError as exc:
            if exc.index is not None and exc.index < len(numbers):
                raise CliError(f"line {numbers[exc.index]}: {exc}") from None
            raise
    for position in positions:
        print(position, file=out)
    return 0


def _event_json(event: Event) -> dict[str, Any]:
    return {
        "position": event.position,
        "id": event.id,
        "stream": event.stream,
        "version": event.version,
        "kind": event.kind,
        "schema": event.schema,
        "actor": event.actor,
        "at": event.at.isoformat(),
        "payload": msgspec.to_builtins(event.payload),
        "causation_id": event.causation_id,
        "correlation_id": event.correlation_id,
        "hash": event.hash.hex(),
    }


def _print_events(events: Iterable[Event], fmt: str, out: IO[str]) -> int:
    count = 0
    for event in events:
        count += 1
        if fmt == "json":
            print(json.dumps(_event_json(event), ensure_ascii=False), file=out, flush=True)
            continue
        payload = msgspec.json.encode(event.payload).decode()
        if len(payload) > 80:
            payload = payload[:79] + "…"
        print(
            f"{event.position:>8}  {event.at:%Y-%m-%d %H:%M:%S}  {event.stream}@{event.version}  "
            f"{event.kind}  {event.actor}  {payload}",
            file=out,
            flush=True,
        )
    return count


def cmd_log(args: argparse.Namespace, out: IO[str]) -> int:
    with _open(args) as ledger:
        if args.follow:
            events: Iterable[Event] = ledger.follow(
                args.after, kinds=args.kind, streams=args.stream, timeout=args.timeout
            )
        else:
            events = ledger.read(args.after, kinds=args.kind, streams=args.stream, limit=args.limit)
        _print_events(events, args.format, out)
    return 0


def cmd_verify(args: argparse.Namespace, out: IO[str]) -> int:
    with _open(args) as ledger:
        report = ledger.verify(
            expect_head=args.head,
            expect_hash=args.hash,
            progress=lambda n: print(f"verified {n:,}…", file=sys.stderr),
        )
    print(report, file=out)
    return 0 if report.ok else 1


def cmd_sql(args: argparse.Namespace, out: IO[str]) -> int:
    from engram.ledger.audit import open_audit
    from engram.projections.store import STORE_FILE

    store = Path(_settings(args).projection_store, STORE_FILE)
    extra = {"projections": str(store)} if store.is_file() else {}
    with (
        _open(args) as ledger,
        open_audit(ledger.audit_target(), _kinds(ledger), extra_attachments=extra) as session,
    ):
        result = session.query(args.query)
    text = {"table": result.to_table, "csv": result.to_csv, "json": result.to_json}[args.format]()
    out.write(text if text.endswith("\n") else text + "\n")
    return 0


def _kinds(ledger: Ledger) -> dict[str, type[msgspec.Struct]]:
    return {spec.name: spec.type for spec in ledger.registry}


def cmd_bench(args: argparse.Namespace, out: IO[str]) -> int:
    from engram import bench

    return bench.run(args)


def cmd_demo(args: argparse.Namespace, out: IO[str]) -> int:
    from engram.demo import run_demo

    return run_demo(args.dir, out)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``engram`` command."""
    parser = argparse.ArgumentParser(prog="engram", description=__doc__)
    parser.add_argument("--version", action="version", version=f"engram {engram.__version__}")
    parser.add_argument("--ledger", help="SQLite path or postgresql:// URL (env ENGRAM_LEDGER)")
    parser.add_argument("--config", help="TOML config file (env ENGRAM_CONFIG)")
    parser.add_argument("--pg-schema", help="PostgreSQL schema of the ledger (default engram)")
    parser.add_argument("--durability", choices=["full", "fast"], help="default full")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("init", help="create the ledger if needed and bootstrap the core network")

    p = sub.add_parser("append", help="append JSON lines as one atomic batch")
    p.add_argument("file", nargs="?", default="-", help="JSON lines file, or - for stdin")
    p.add_argument("--expect", type=_expectation, default=ANY, help="any | no_stream | VERSION")

    p = sub.add_parser("log", help="print events in position order")
    p.add_argument("--after", type=int, default=0, help="start after this position")
    p.add_argument("--kind", action="append", help="only this kind (repeatable)")
    p.add_argument("--stream", action="append", help="only this stream (repeatable)")
    p.add_argument("--limit", type=int, help="at most this many events")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    p.add_argument("--timeout", type=float, help="with --follow: stop after this idle time (s)")
    p.add_argument("--format", choices=["table", "json"], default="table")

    p = sub.add_parser(
        "verify", help="recompute the hash chain; exit 1 naming the first bad position"
    )
    p.add_argument("--head", type=int, help="a head position recorded earlier (detects truncation)")
    p.add_argument("--hash", help="the hash recorded with --head")

    p = sub.add_parser(
        "sql",
        help="run a read-only SQL audit query (DuckDB) over the ledger and, as"
        " projections.<table>, the projection store",
    )
    p.add_argument("query", help='e.g. "SELECT kind, count(*) FROM events GROUP BY kind"')
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")

    p = sub.add_parser("bench", help="run the benchmarks and print ratios to references")
    from engram import bench

    bench.add_arguments(p)

    p = sub.add_parser("demo", help="run a multi-agent session on a fresh SQLite ledger")
    p.add_argument("--dir", help="directory for the demo ledger (default: a new temp dir)")
    _MEMORY_COMMANDS.update(cli_memory.add_commands(sub))
    return parser


_MEMORY_COMMANDS: dict[str, cli_memory.Command] = {}


_COMMANDS = {
    "init": cmd_init,
    "append": cmd_append,
    "log": cmd_log,
    "verify": cmd_verify,
    "sql": cmd_sql,
    "bench": cmd_bench,
    "demo": cmd_demo,
}


def main(argv: Sequence[str] | None = None, out: IO[str] | None = None) -> int:
    """Run the ``engram`` command; return its exit code."""
    args = build_parser().parse_args(argv)
    name = " ".join(filter(None, [args.command, getattr(args, "graph_command", None)]))
    try:
        if name in _MEMORY_COMMANDS:
            return _MEMORY_COMMANDS[name](_settings(args), args, out or sys.stdout)
        return _COMMANDS[args.command](args, out or sys.stdout)
    except (CliError, LedgerError, ProjectionError, AgentError, OSError) as exc:
        print(f"engram {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
