"""The base of every engram payload and the field types the kinds share (ADR 0007).

Payloads are frozen msgspec Structs that refuse unknown fields; :class:`Payload` says so once.
The catalog (:mod:`engram.ledger.catalog`) and its families (``catalog_learning``,
``catalog_adapters``, ``catalog_supersession``) build on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Literal

import msgspec

UInt16 = Annotated[int, msgspec.Meta(ge=0, le=65535)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
Text = Annotated[str, msgspec.Meta(min_length=1)]
Strength = Annotated[float, msgspec.Meta(ge=0.0, le=1e6)]
Importance = Annotated[int, msgspec.Meta(ge=1, le=10)]
#: Who may see an item: everyone, or only the agent that wrote it.
Visibility = Literal["public", "private"]
#: A ledger position as SQLite and PostgreSQL store it (a signed 64-bit integer, from 1).
Position = Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]
#: An event's id as the ledger stores it: a lowercase hyphenated UUID.
EventId = Annotated[
    str, msgspec.Meta(pattern=r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
]


class Payload(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """The base of a kind's payload: frozen, keyword-only, no unknown field."""


def check_distinct(values: Sequence[int], name: str) -> None:
    """Refuse ``values`` (a payload's positions) that name one position more than once."""
    if len(set(values)) != len(values):
        repeated = sorted(p for p, n in Counter(values).items() if n > 1)
        raise ValueError(f"{name} must not repeat, got {repeated} more than once")
