"""Print records as a table, CSV, a JSON array or JSON lines: one renderer for every command."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from itertools import islice
from typing import IO, Any
from uuid import UUID

import msgspec

FORMATS = ("table", "csv", "json", "jsonl")
#: Widths of a table are measured on its first page of rows; later rows keep them.
PAGE = 500
CELL = 60

Record = Mapping[str, Any]


def plain(value: Any) -> Any:
    """Return ``value`` as JSON-ready data: times as ISO text, bytes as hex, Structs as dicts;
    a value nested too deep for Python to walk (a pack's payload may nest some hundreds of
    levels) as its JSON text, never an error: what the ledger holds is always shown (a
    record's fields each on their own)."""
    if isinstance(value, Mapping):
        return {str(k): _shown(v) for k, v in value.items()}
    return _shown(value)


def _shown(value: Any) -> Any:
    try:
        return _plain(value)
    except RecursionError:
        try:
            return msgspec.json.encode(value).decode()
        except (RecursionError, TypeError, msgspec.EncodeError):
            return "(a value nested too deep to show)"


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, msgspec.Struct):
        return _plain(msgspec.to_builtins(value))
    return str(value)


def _cell(value: Any, *, table: bool = False) -> str:
    if table and isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    value = plain(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            f"{value:.6g}" if abs(value) >= 1e6 or (value and abs(value) < 1e-3) else f"{value:.4f}"
        )
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = str(value).replace("\n", " ")
    # A control character an agent wrote (an escape sequence retitling the terminal,
    # moving its cursor, colouring what follows) is shown, never obeyed.
    return _CONTROL.sub(_escaped, text) if table and _CONTROL.search(text) else text


#: Control characters, C0 (but the tab) and C1, and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _numeric(values: Iterable[Any]) -> bool:
    seen = False
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            return False
        seen = True
    return seen


def render(
    records: Iterable[Record],
    fmt: str,
    out: IO[str],
    *,
    columns: Sequence[str] | None = None,
    table_columns: Sequence[str] | None = None,
    widths: Mapping[str, int] | None = None,
    stream: bool = False,
) -> int:
    """Write ``records`` to ``out`` in ``fmt``; return how many were written.

    ``columns`` fixes the fields and their order (default: the first record's keys);
    ``table_columns`` narrows what the table shows. ``widths`` caps a table column (default
    60 characters). With ``stream`` every record is written and flushed as it arrives, so a
    table's widths come from its header alone (``log --follow``).
    """
    rows = iter(records)
    if fmt == "jsonl":
        return _jsonl(rows, out, stream)
    if fmt == "json":
        return _json(rows, out, stream)
    first = list(islice(rows, 1 if stream else PAGE))
    names = list(columns or (first[0].keys() if first else []))
    if fmt == "csv":
        return _csv(names, first, rows, out, stream)
    if fmt == "table":
        shown = list(table_columns or names)
        return _table(shown, first, rows, out, widths or {}, stream)
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def _jsonl(rows: Iterator[Record], out: IO[str], stream: bool) -> int:
    count = 0
    for record in rows:
        count += 1
        out.write(json.dumps(plain(record), ensure_ascii=False) + "\n")
        if stream:
            out.flush()
    return count


def _json(rows: Iterator[Record], out: IO[str], stream: bool) -> int:
    count = 0
    out.write("[")
    for count, record in enumerate(rows, start=1):
        out.write(
            ("\n  " if count == 1 else ",\n  ") + json.dumps(plain(record), ensure_ascii=False)
        )
        if stream:
            out.flush()
    out.write("\n]\n" if count else "]\n")
    return count


def _csv(
    names: list[str], first: list[Record], rest: Iterator[Record], out: IO[str], stream: bool
) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    count = 0
    for record in _chain(first, rest):
        count += 1
        writer.writerow([_cell(record.get(n)) for n in names])
        if stream:
            out.flush()
    return count


def _chain(first: list[Record], rest: Iterator[Record]) -> Iterator[Record]:
    yield from first
    yield from rest


def _table(
    names: list[str],
    first: list[Record],
    rest: Iterator[Record],
    out: IO[str],
    caps: Mapping[str, int],
    stream: bool,
) -> int:
    if not names:
        return 0
    right = {n: _numeric(r.get(n) for r in first) for n in names}
    width = {n: len(n) for n in names}
    if not stream:
        for record in first:
            for n in names:
                cell = _clip(_cell(record.get(n), table=True), caps.get(n, CELL))
                width[n] = max(width[n], len(cell))

    def line(cells: dict[str, str]) -> str:
        parts = [cells[n].rjust(width[n]) if right[n] else cells[n].ljust(width[n]) for n in names]
        return "  ".join(parts).rstrip() + "\n"

    out.write(line({n: n for n in names}))
    out.write(line({n: "-" * width[n] for n in names}))
    count = 0
    for record in _chain(first, rest):
        count += 1
        cells = {n: _clip(_cell(record.get(n), table=True), caps.get(n, CELL)) for n in names}
        out.write(line(cells))
        if stream:
            out.flush()
    return count
