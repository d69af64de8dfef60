"""What an audit query returns, and how it renders: a text grid, CSV or JSON.

Dates, times, bytes, UUIDs, decimals and intervals render as text (ISO dates, hex bytes);
JSON columns embed as JSON in :meth:`AuditResult.to_json`.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = ["AuditResult"]


@dataclass(frozen=True)
class AuditResult:
    """Hold the columns and rows one audit query returned."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    types: list[str] = field(default_factory=list)

    def to_table(self, max_width: int = 60) -> str:
        """Render a plain-text grid, cutting cells longer than ``max_width`` with '…'."""
        if max_width < 1:
            raise ValueError("max_width must be at least 1")
        header = [_clip(name, max_width) for name in self.columns]
        body = [[_clip(_text(value, "NULL"), max_width) for value in row] for row in self.rows]
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        rule = "+" + "+".join("-" * (width + 2) for width in widths) + "+"

        def line(cells: list[str]) -> str:
            return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

        footer = f"({len(self.rows)} row{'' if len(self.rows) == 1 else 's'})"
        return "\n".join([rule, line(header), rule, *map(line, body), rule, footer])

    def to_csv(self) -> str:
        """Render CSV with a header row; NULL is the empty field."""
        out = io.StringIO()
        rows = [[_text(value, "") for value in row] for row in self.rows]
        csv.writer(out, lineterminator="\n").writerows([self.columns, *rows])
        return out.getvalue()

    def to_json(self) -> str:
        """Render a JSON array of objects, one per row; JSON columns are embedded as JSON."""
        parse = [kind == "JSON" for kind in self.types] or [False] * len(self.columns)
        objects = [
            {
                n: json.loads(v) if p and isinstance(v, str) else v
                for n, v, p in zip(self.columns, row, parse, strict=True)
            }
            for row in self.rows
        ]
        return json.dumps(objects, default=_json_default, ensure_ascii=False)


def _text(value: object, null: str) -> str:
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict | tuple):
        return json.dumps(value, default=_json_default, ensure_ascii=False)
    return str(_json_default(value) if isinstance(value, _CONVERTED) else value)


def _clip(text: str, width: int) -> str:
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


_CONVERTED = (dt.date, dt.time, bytes, bytearray, memoryview, uuid.UUID, Decimal, dt.timedelta)


def _json_default(value: object) -> object:
    """Return a JSON-ready stand-in for a date, time, bytes, UUID, Decimal or interval."""
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID | Decimal | dt.timedelta):
        return str(value)
    raise TypeError(f"cannot render {type(value).__name__} as JSON")
