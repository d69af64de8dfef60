"""Canonical encoding: payload bytes, event time text, and the hash chain.

Payloads are stored as canonical JSON — msgspec's encoding of the kind's Struct with sorted
keys — and those bytes are never rewritten. The chain is
``hash(n) = sha256(hash(n-1) ‖ canonical(n))`` with ``hash(0)`` = 32 zero bytes, where
``canonical(n)`` is a compact JSON header of the envelope, a newline, then the payload bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from ledger.errors import EnvelopeError, PayloadError
from ledger.kinds import KindSpec

GENESIS_HASH = bytes(32)

_encoder = msgspec.json.Encoder(order="sorted")
_encode_header = msgspec.json.Encoder().encode


def encode_payload(spec: KindSpec, payload: object, *, index: int, max_bytes: int) -> bytes:
    """Validate ``payload`` against ``spec`` and return its canonical JSON bytes.

    Raises:
        PayloadError: wrong type, a field that does not fit, or larger than ``max_bytes``.
    """
    where = f"event #{index} ({spec.name})"
    try:
        if isinstance(payload, spec.type):
            # Structs are not validated at construction: round-trip through the decoder.
            value = spec.decoder.decode(_encoder.encode(payload))
        elif isinstance(payload, Mapping):
            value = msgspec.convert(dict(payload), spec.type, str_keys=True)
        else:
            raise PayloadError(
                f"{where}: payload must be a {spec.type.__name__} or a mapping, "
                f"got {type(payload).__name__}",
                index=index,
                field="payload",
            )
    except msgspec.ValidationError as exc:
        path = _field_of(str(exc))
        raise PayloadError(f"{where}: payload {exc}", index=index, field=path) from None
    data = _encoder.encode(value)
    if len(data) > max_bytes:
        raise PayloadError(
            f"{where}: payload is {len(data)} bytes, over the limit of {max_bytes}",
            index=index,
            field="payload",
        )
    return data


def _field_of(message: str) -> str:
    # msgspec ends its messages with "- at `$.field`"
    marker = "at `"
    at = message.rfind(marker)
    if at < 0:
        return "payload"
    return "payload" + message[at + len(marker) + 1 : message.rfind("`")]


def format_at(at: datetime, *, index: int | None = None) -> str:
    """Return ``at`` as fixed-width ISO-8601 UTC text with microseconds.

    Raises:
        EnvelopeError: ``at`` is not a timezone-aware datetime.
    """
    if not isinstance(at, datetime):
        raise EnvelopeError(
            f"event #{index}: field `at` must be a datetime, got {type(at).__name__}",
            index=index,
            field="at",
        )
    if at.tzinfo is None or at.utcoffset() is None:
        raise EnvelopeError(
            f"event #{index}: field `at` is a naive datetime ({at.isoformat()}); "
            "give it a timezone, e.g. datetime.now(UTC)",
            index=index,
            field="at",
        )
    if at.tzinfo is not UTC:
        at = at.astimezone(UTC)
    return at.isoformat(timespec="microseconds")


def parse_at(text: str) -> datetime:
    """Parse stored event time text back into an aware datetime."""
    return datetime.fromisoformat(text)


def canonical(
    position: int,
    id: str,
    stream: str,
    version: int,
    kind: str,
    schema: int,
    actor: str,
    at: str,
    causation_id: str | None,
    correlation_id: str | None,
    payload: bytes,
) -> bytes:
    """Return the bytes an event's hash covers."""
    header = _encode_header(
        [position, id, stream, version, kind, schema, actor, at, causation_id, correlation_id]
    )
    return header + b"\n" + payload


def chain(previous: bytes, canonical_bytes: bytes) -> bytes:
    """Return the hash of an event from its predecessor's hash and its canonical bytes."""
    return hashlib.sha256(previous + canonical_bytes).digest()


def decode_payload(spec: KindSpec | None, data: bytes, schema: int) -> Any:
    """Decode stored payload bytes: the kind's Struct when known, else a plain dict."""
    if spec is None:
        return msgspec.json.decode(data)
    return spec.decode(data, schema)
