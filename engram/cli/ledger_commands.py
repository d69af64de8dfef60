"""Commands over the ledger itself: init, append, log, verify, sql, kinds."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click
import msgspec

from engram.cli.app import cli, examples
from engram.cli.base import CliError, Finite, note, opened, output_format, redacted, state
from engram.cli.base import open_ledger as _open_ledger
from engram.cli.lines import bounded_lines, parse_lines
from engram.ledger import (
    ANY,
    FORGOTTEN,
    NO_STREAM,
    Event,
    EventError,
    Expectation,
    KindRegistry,
    Ledger,
)
from engram.ledger.personal import masked, personal_fields, retracted, retracted_positions
from engram.runtime import Memory, registry_for


class ExpectationType(click.ParamType):  # type: ignore[type-arg]  # generic in newer click
    """``any``, ``no_stream`` or a stream version >= 1."""

    name = "any|no_stream|VERSION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Parse ``value`` into an expectation."""
        if not isinstance(value, str):
            return value
        lowered = value.strip().lower()
        if lowered == "any":
            return ANY
        if lowered in ("no_stream", "no-stream", "none"):
            return NO_STREAM
        if lowered.isdigit() and int(lowered) >= 1:
            return int(lowered)
        self.fail(f"expected any, no_stream or a version >= 1, got {value!r}", param, ctx)


@cli.command(
    epilog=examples(
        "engram init",
        "engram --ledger team.db init",
        "engram --ledger postgresql://127.0.0.1:5432/engram init",
    )
)
def init() -> None:
    """Create the ledger if needed; append the core network once.

    Prints where the ledger, its projection store and its key store are (personal fields
    are sealed by default; back the key store up apart from the ledger). Running it again
    appends nothing.
    """
    out = state()
    settings = out.settings(create=True)
    with opened(settings, catch_up=False) as memory:
        ledger = memory.ledger
        where = redacted(settings.ledger)
        out.echo(f"ledger ready at {where} ({ledger.backend_name}, from {settings.source})")
        out.echo(f"projections at {settings.projection_store}")
        sealer = ledger.sealer
        out.echo(
            f"personal fields sealed, keys at {sealer.keys.path} (back it up apart from the"
            " ledger: without it they cannot be read)"
            if sealer is not None
            else "personal fields are not sealed (seal = false, or PostgreSQL without keys)"
        )
        positions = memory.network.bootstrap()
        if positions:
            out.echo(f"bootstrapped the core network: positions {positions[0]}..{positions[-1]}")
        else:
            out.echo("core network already present: nothing appended")
        out.echo(f"head: {ledger.head()}")


@cli.command(
    epilog=examples(
        "engram append events.jsonl --expect no_stream",
        """echo '{"stream": "neuron:n1", "kind": "neuron.activated", """
        """"payload": {"id": "n1", "strength": 0.7}}' | engram append""",
    )
)
@click.argument("file", type=click.File("rb"), default="-")
@click.option(
    "--expect",
    type=ExpectationType(),
    metavar="any|no_stream|N",
    default="any",
    show_default=True,
    help="The version every stream in the batch must be at: any, no_stream or a number.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="A summary line, or a JSON object with the positions.",
)
def append(file: IO[bytes], expect: Expectation, fmt: str) -> None:
    """Append JSON lines (a file or stdin) as one atomic batch.

    FILE defaults to stdin. Each line is one event:

    \b
      {"stream": "neuron:n1", "kind": "neuron.created",
       "payload": {"id": "n1", "concept": "perception", "type": "core"},
       "actor": "cli", "id": "0193...", "at": "2026-05-01T12:00:00Z",
       "causation_id": null, "correlation_id": null}

    stream, kind and payload are required; actor defaults to cli, id is generated, at is
    the time of the append. A bad line is reported with its number and nothing is written.
    engram kinds lists the kinds and their payload fields.
    """
    out = state()
    settings = out.settings(create=True)
    events, numbers = parse_lines(bounded_lines(file, settings.max_payload_bytes))
    erasing = any(e.kind == "subject.forgotten" for e in events)
    with opened(settings) if erasing else _open_ledger(settings) as handle:
        try:
            if isinstance(handle, Memory):
                # An erasure forgets as `engram forget` does: the embedding cache, the
                # reflections drawn from the subject (ADR 0138).
                positions = handle.append_erasing(events, expect)
            else:
                positions = handle.append(events, expect=expect)
        except EventError as exc:
            if exc.index is not None and exc.index < len(numbers):
                raise CliError(f"line {numbers[exc.index]}: {exc}") from None
            raise
    if fmt == "json":
        out.echo(msgspec.json.encode({"appended": len(positions), "positions": positions}).decode())
        return
    out.echo(f"appended {_summary(positions)}")


def _summary(positions: list[int]) -> str:
    count = f"{len(positions)} event{'' if len(positions) == 1 else 's'}"
    if len(positions) == 1:
        return f"{count}, position {positions[0]}"
    if positions == list(range(positions[0], positions[0] + len(positions))):
        return f"{count}, positions {positions[0]}..{positions[-1]}"
    return f"{count}, positions {', '.join(map(str, positions))}"


def _event_record(event: Event) -> dict[str, Any]:
    return {
        "position": event.position,
        "at": event.at,
        "stream": event.stream,
        "version": event.version,
        "kind": event.kind,
        "actor": event.actor,
        "payload": msgspec.to_builtins(event.payload),
        "id": event.id,
        "schema": event.schema,
        "causation_id": event.causation_id,
        "correlation_id": event.correlation_id,
        "hash": event.hash.hex(),
    }


@cli.command(
    epilog=examples(
        "engram log --kind neuron.activated --limit 20",
        "engram log --stream agent:alice --format jsonl | jq .payload.text",
        "engram log --follow --after 1000",
    )
)
@click.option("--after", type=click.IntRange(min=0), default=0, help="Start after this position.")
@click.option("--kind", "kinds", multiple=True, help="Only this kind (repeatable).")
@click.option("--stream", "streams", multiple=True, help="Only this stream (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many events.")
@click.option("--follow", "-f", is_flag=True, help="Keep printing events as they are appended.")
@click.option("--timeout", type=Finite(min=0), help="With --follow: stop after this idle time (s).")
@click.option(
    "--as",
    "viewer",
    metavar="AGENT",
    help="Show AGENT's private fields (its recall queries, private items); others read [private].",
)
@output_format()
def log(
    after: int,
    kinds: tuple[str, ...],
    streams: tuple[str, ...],
    limit: int | None,
    follow: bool,
    timeout: float | None,
    viewer: str | None,
    fmt: str,
) -> None:
    """Print events in position order, or follow new ones.

    The table shows the payload cut to 80 characters; csv, json and jsonl carry every field.
    Recall queries and private items' personal fields show [private] except to their own
    agent (--as); a forgotten subject's show [forgotten] (ADR 0039).
    """
    if timeout is not None and not follow:
        raise click.UsageError("--timeout applies only with --follow")
    out = state()
    settings = out.settings()
    with _open_ledger(settings, readonly=True) as ledger:
        kind_list, stream_list = list(kinds) or None, list(streams) or None
        events: Iterator[Event]
        if follow:
            events = ledger.follow(after, kinds=kind_list, streams=stream_list, timeout=timeout)
            if limit is not None:
                events = _first(events, limit)
        else:
            events = ledger.read(after, kinds=kind_list, streams=stream_list, limit=limit)
        personal = settings.personal()
        gone = (  # reflections drawn from a forgotten subject (ADR 0110)
            retracted_positions(ledger)
            if kind_list is None or "memory.reflected" in kind_list
            else set()  # no reflection is shown: the ledger is not read twice
        )
        out.render(
            (_event_record(retracted(masked(e, viewer, personal), gone)) for e in events),
            fmt,
            table_columns=["position", "at", "stream", "version", "kind", "actor", "payload"],
            widths={"payload": 80},
            stream=follow,
        )


def _first(events: Iterator[Event], limit: int) -> Iterator[Event]:
    for count, event in enumerate(events, start=1):
        yield event
        if count >= limit:
            return


@cli.command(
    epilog=examples(
        "engram verify",
        "engram verify --head 120000 --hash 9f2c...   # a head recorded elsewhere earlier",
        "engram verify --checkpoints /srv/anchors --public-key checkpoint.key.pub",
    )
)
@click.option(
    "--head", type=click.IntRange(min=1), help="A head position recorded earlier (needs --hash)."
)
@click.option("--hash", "head_hash", metavar="HEX", help="The hash recorded with --head.")
@click.option(
    "--checkpoints",
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of signed checkpoints (engram checkpoint) to check the ledger against.",
)
@click.option(
    "--public-key",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The public key that signed them (KEY.pub); needed with --checkpoints.",
)
def verify(
    head: int | None,
    head_hash: str | None,
    checkpoints: Path | None,
    public_key: Path | None,
) -> None:
    """Recompute the hash chain; exit 1 naming the first bad position.

    A chain cut at its tail, or rewritten and recomputed, is still a valid chain: check it
    against signed checkpoints (--checkpoints, ADR 0033), or give a head and its hash
    recorded elsewhere (--head with --hash).
    """
    if (head is None) != (head_hash is None):
        raise click.UsageError(
            "--head and --hash go together: a position and the hash recorded for it "
            "(engram verify prints both as 'head N, hash HEX'); give both or neither"
        )
    if head_hash is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", head_hash):
        raise click.BadParameter(
            f"must be the 64 hex digits engram verify printed, got {head_hash!r}",
            param_hint="--hash",
        )
    if (public_key is None) != (checkpoints is None):
        raise click.UsageError(
            "--checkpoints and --public-key go together: the folder, and the key you trust"
        )
    if checkpoints is not None and head is not None:
        raise click.UsageError("give --checkpoints or --head/--hash, not both")
    out = state()
    with _open_ledger(out.settings(), readonly=True) as ledger:
        bar, total = out.progress(), ledger.head()
        progress = None if bar is None else (lambda n: bar("verify", n, total))
        if checkpoints is not None and public_key is not None:
            from engram.ledger.checkpoints import (
                load_checkpoints,
                load_public_key,
                verify_checkpoints,
            )

            key = load_public_key(public_key)
            signed = verify_checkpoints(
                ledger, load_checkpoints(checkpoints, key), progress=progress
            )
            ok, text = signed.ok, str(signed)
        else:
            report = ledger.verify(expect_head=head, expect_hash=head_hash, progress=progress)
            ok, text = report.ok, str(report)
    out.echo(text)
    if not ok:
        raise click.exceptions.Exit(1)


@cli.command(
    epilog=examples(
        """engram sql "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC\"""",
        """engram sql "SELECT agent, text FROM memory_observed LIMIT 5" --format csv""",
        """engram sql "SELECT * FROM projections.salience_items LIMIT 3\"""",
    )
)
@click.argument("query")
@click.option(
    "--as",
    "subject",
    metavar="SUBJECT",
    help="Open SUBJECT's own sealed personal fields with the key store; others stay [sealed].",
)
@click.option(
    "--timeout",
    type=Finite(min=0),
    default=600.0,
    show_default=True,
    help="Stop a query still running after this many seconds (0: never).",
)
@output_format()
def sql(query: str, subject: str | None, timeout: float, fmt: str) -> None:
    """Run a read-only SQL query over the ledger (DuckDB).

    The query sees the ledger and the projection store. The table events holds every event; each
    kind has a view of its payload fields named after it (memory.observed is memory_observed);
    the projection store's tables are under projections. Positions exported to cold segments
    (engram cold export) are read from their Parquet files, each first checked against its
    manifest's sha256 and the ledger's hash at its end (engram cold verify recomputes the
    chain). Writes are refused.

    Sealed personal fields (observations' text, recall queries...) show [sealed] in the kind
    views, or [forgotten] once their subject was forgotten; with --as SUBJECT, SUBJECT's own
    show their text (the key store opens them). The events table holds them as stored.
    A query still running after --timeout seconds is stopped.
    """
    from engram.ledger.audit import open_audit
    from engram.ledger.cold import disagreement, segments
    from engram.projections.store import STORE_FILE

    out = state()
    settings = out.settings()
    store = Path(settings.projection_store, STORE_FILE)
    extra = {"projections": str(store)} if store.is_file() else {}
    kinds = _kinds(registry_for(settings))
    folder = Path(settings.cold_directory)
    found = segments(folder) if folder.is_dir() else []
    cold = [(s.path, s.last) for s in found]
    with _open_ledger(settings, readonly=True) as ledger:
        for segment in found:  # a segment read in place of the ledger's rows agrees with it
            why = disagreement(segment, ledger)
            if why is not None:
                raise CliError(
                    f"cold segment {segment.path} does not agree with the ledger: {why}; run"
                    " engram cold verify (nothing was queried)"
                )
        opened_fields = _opened_fields(ledger, subject) if subject is not None else []
        with open_audit(
            ledger.audit_target(),
            kinds,
            extra_attachments=extra,
            cold=cold,
            personal=settings.personal(),
            opened=opened_fields,
        ) as session:
            result = session.query(query, timeout=timeout or None)
    parse = [kind == "JSON" for kind in result.types] or [False] * len(result.columns)
    records = (
        {
            name: msgspec.json.decode(value) if json and isinstance(value, str) else value
            for name, value, json in zip(result.columns, row, parse, strict=True)
        }
        for row in result.rows
    )
    out.render(records, fmt, columns=result.columns)


def _opened_fields(ledger: Ledger, subject: str) -> list[tuple[str, str, str]]:
    """Return (event id, field, text) of every personal field of ``subject``'s events,
    opened by the ledger's key store; none without one (ADR 0086)."""
    if not subject.strip():
        raise click.UsageError("--as needs a subject")
    sealer = ledger.sealer
    if sealer is None:
        note("this ledger has no key store here: sealed fields stay [sealed]")
        return []
    events = ledger.read(kinds=[k for k in sealer.personal if k in ledger.registry])
    found: list[tuple[str, str, str]] = []
    for event, fields in personal_fields(events, sealer.personal, subject):
        found += [
            (event.id, name, value)
            for name, value in fields.items()
            if isinstance(value, str) and value != FORGOTTEN
        ]
    return found


def _kinds(registry: KindRegistry) -> dict[str, type[msgspec.Struct]]:
    return {spec.name: spec.type for spec in registry}


@cli.command(
    epilog=examples("engram kinds", "engram kinds --format json | jq '.[].kind' | sort -u")
)
@output_format()
def kinds(fmt: str) -> None:
    """List every event kind: its schema number and its payload fields.

    One row per payload field: its type, whether a line given to engram append must
    carry it, and its default otherwise. Reads no ledger.
    """
    out = state()
    registry = registry_for(out.settings(create=True))
    out.render(
        (row for spec in sorted(registry, key=lambda s: s.name) for row in _kind_rows(spec)),
        fmt,
        columns=["kind", "schema", "field", "type", "required", "default"],
    )


def _kind_rows(spec: Any) -> Iterator[dict[str, Any]]:
    fields = msgspec.structs.fields(spec.type)
    if not fields:
        yield {"kind": spec.name, "schema": spec.schema, "field": None, "type": None}
    for f in fields:
        default: Any = None
        if f.default is not msgspec.NODEFAULT:
            default = f.default
        elif f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        yield {
            "kind": spec.name,
            "schema": spec.schema,
            "field": f.encode_name,
            "type": type_name(f.type),
            "required": f.required,
            # An unset default (a field written only when given) reads as none.
            "default": None
            if f.required or default is msgspec.UNSET
            else msgspec.to_builtins(default),
        }


def type_name(tp: Any) -> str:
    """Write a payload field's type as a user reads it: ``str | None``, ``list[str]``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(map(type_name, args))}]"
    if tp is type(None):
        return "None"
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")
