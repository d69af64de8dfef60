"""The event envelope: what a caller appends (:class:`NewEvent`) and reads (:class:`Event`)."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

import msgspec

from engram.ledger.errors import EnvelopeError, KindRegistryError
from engram.ledger.kinds import kind_name


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

    @classmethod
    def of(
        cls,
        payload: msgspec.Struct,
        *,
        stream: str,
        actor: str = "system",
        id: str | None = None,
        at: datetime | None = None,
        causation_id: str | None = None,
        correlation_id: str | None = None,
    ) -> NewEvent:
        """Return the event carrying ``payload``, its kind named by the payload's type.

        Raises:
            EnvelopeError: the payload is not a Struct whose type names its kind (declares
                ``__kind__`` or was registered as a kind's payload).
        """
        if not isinstance(payload, msgspec.Struct):
            raise EnvelopeError(
                f"NewEvent.of: payload must be a kind's payload Struct, got "
                f"{type(payload).__name__}; for a mapping, give the kind: NewEvent(kind=...)",
                field="payload",
            )
        try:
            kind = kind_name(type(payload))
        except KindRegistryError as exc:
            raise EnvelopeError(f"NewEvent.of: {exc}", field="payload") from None
        return cls(
            stream=stream,
            kind=kind,
            payload=payload,
            actor=actor,
            id=id,
            at=at,
            causation_id=causation_id,
            correlation_id=correlation_id,
        )


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
