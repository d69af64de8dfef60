"""The event envelope: what a caller appends (:class:`NewEvent`) and reads (:class:`Event`)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

import msgspec


class Expect(enum.Enum):
    """Special expectations of a stream's version for optimistic concurrency.

    An ``int`` expectation means "the stream is exactly at this version" (>= 1).
    """

    ANY = "any"
    NO_STREAM = "no_stream"


ANY = Expect.ANY
NO_STREAM = Expect.NO_STREAM

#: One expectation, or a mapping of stream -> expectation for a batch over several streams.
Expectation = Expect | int


class NewEvent(msgspec.Struct, kw_only=True, frozen=True):
    """An event to append.

    ``payload`` is an instance of the kind's registered Struct (or a mapping that converts to
    it). ``id`` is generated (UUIDv7) when omitted; supply it to make a retry idempotent.
    ``at`` is the event's UTC time, taken at append when omitted; it must be timezone-aware.
    """

    stream: str
    kind: str
    payload: Any
    actor: str = "system"
    id: str | None = None
    at: datetime | None = None
    causation_id: str | None = None
    correlation_id: str | None = None


class Event(msgspec.Struct, frozen=True, gc=False):
    """A stored event, read back from the ledger.

    ``payload`` is the kind's current Struct (upcast from older schemas), or a plain ``dict``
    when the reader does not know the kind.
    """

    position: int
    id: str
    stream: str
    version: int
    kind: str
    schema: int
    actor: str
    at: datetime
    payload: Any
    causation_id: str | None
    correlation_id: str | None
    hash: bytes
