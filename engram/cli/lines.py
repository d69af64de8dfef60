"""The JSON lines `engram append` reads: each a bounded line, decoded into an event, and
refused with its number where it is no event (ADR 0146, 0175)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, Any

import msgspec

from engram.agents.arguments import check_name, refuse_unwritable
from engram.cli.base import CliError
from engram.ledger import NewEvent
from engram.ledger.json_values import LONE_SURROGATE, nested_deeper
from engram.ledger.json_values import MAX_LINE_DEPTH as MAX_DEPTH
from engram.projections.errors import QueryError

__all__ = ["MAX_DEPTH", "bounded_lines", "parse_lines"]


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


def parse_lines(lines: Iterable[bytes | str]) -> tuple[list[NewEvent], list[int]]:
    """Parse JSON lines into events; return them with their line numbers.

    Lines are read as bytes, so input that is not UTF-8 is reported like any other bad line
    (its number, what is wrong) instead of failing the read.
    """
    decoder = msgspec.json.Decoder(_Line)
    events: list[NewEvent] = []
    numbers: list[int] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            if isinstance(raw, bytes):
                raw.decode("utf-8")  # a clear message for bytes outside strings too
            if nested_deeper(raw, MAX_DEPTH):
                raise RecursionError  # refused before the decoder nears the interpreter's limit
            line = decoder.decode(raw)
        except msgspec.DecodeError as exc:
            lone = LONE_SURROGATE.search(raw if isinstance(raw, str) else raw.decode())
            if lone is not None:  # the decoder says "truncated" of some (ADR 0146)
                raise CliError(
                    f"line {number}: a lone UTF-16 surrogate escape {lone.group()} at character"
                    f" {lone.start()}: text must be valid Unicode (a high surrogate \\ud800-"
                    "\\udbff followed by a low one \\udc00-\\udfff, or neither)"
                ) from None
            raise CliError(f"line {number}: {exc}") from None
        except UnicodeError:
            raise CliError(f"line {number}: not valid UTF-8{_bad_byte(raw)}") from None
        except RecursionError:
            raise CliError(f"line {number}: the JSON is nested too deeply") from None
        try:  # the agent a memory's event names is refused as `observe` refuses it (0175)
            check_name(line.payload.get("agent"), "payload agent")
            if line.kind == "memory.observed":  # ... and its text (ADR 0186)
                refuse_unwritable(line.payload.get("text"), "payload text")
        except QueryError as exc:
            raise CliError(f"line {number}: {exc}") from None
        events.append(NewEvent(**msgspec.structs.asdict(line)))
        numbers.append(number)
    if not events:
        raise CliError("no events to append: the input is empty")
    return events, numbers


def bounded_lines(file: IO[bytes], max_payload: int) -> Iterator[bytes]:
    """Yield the lines of ``file``, refusing one too long to hold a payload the ledger takes.

    A line is read up to a bound, so an input without line breaks (``/dev/zero``, a runaway
    file) is refused instead of read until memory runs out. The bound leaves room for a
    payload of ``max_payload`` bytes written with every character escaped.
    """
    limit = _LINE_FACTOR * max_payload + _LINE_SLACK
    number = 0
    while line := file.readline(limit + 1):
        number += 1
        if len(line) > limit:
            raise CliError(
                f"line {number}: longer than {limit:,} bytes (a payload may hold at most "
                f"{max_payload:,})"
            )
        yield line


#: A line of ``engram append`` may hold this many times the payload bound, plus the slack:
#: a JSON escape (``\u00e9``) writes a stored byte in up to six.
_LINE_FACTOR = 6
_LINE_SLACK = 64 << 10


def _bad_byte(raw: bytes | str) -> str:
    """Say where in the line its UTF-8 first breaks (the decoder only knows the string)."""
    if isinstance(raw, str):
        return ""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f" (byte {exc.start + 1}: 0x{raw[exc.start]:02x})"
    return ""
