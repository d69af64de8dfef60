"""Canonical encoding: payload bytes, event time text, and the hash chain.

Payloads are stored as canonical JSON — msgspec's encoding of the kind's Struct with sorted
keys — and those bytes are never rewritten. The chain is
``hash(n) = sha256(hash(n-1) ‖ canonical(n))`` with ``hash(0)`` = 32 zero bytes, where
``canonical(n)`` is a compact JSON header of the envelope, a newline, then the payload bytes.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from engram.ledger.errors import EnvelopeError, PayloadError
from engram.ledger.kinds import KindSpec
from engram.ledger.shred import SEALED_PREFIX, Sealer, subject_of

GENESIS_HASH = bytes(32)

_encoder = msgspec.json.Encoder(order="sorted")
_encode_header = msgspec.json.Encoder().encode
#: A payload's canonical JSON (sorted keys), unchecked: :func:`encode_payload` validates.
encode_canonical = _encoder.encode
#: The compact JSON of a hash header's list, as :func:`canonical` and :func:`link` encode it.
encode_header = _encode_header
_sha256 = hashlib.sha256
#: The current second and its "YYYY-MM-DDTHH:MM:SS" text, replaced as a whole (thread-safe).
_second: tuple[int, str] = (-1, "")


def encode_payload(spec: KindSpec, payload: object, *, index: int, max_bytes: int) -> bytes:
    """Validate ``payload`` against ``spec`` and return its canonical JSON bytes.

    Raises:
        PayloadError: wrong type, a field that does not fit, a value JSON cannot hold
            (NaN, infinity, invalid unicode), or larger than ``max_bytes``.
    """
    if isinstance(payload, spec.type) and not (spec.times and naive(payload, spec.times)):
        # The common case, checked as below; anything unusual takes the path that explains.
        try:
            data = _encoder.encode(payload)
            decoded = spec.decoder.decode(data)
            if (not spec.compare or decoded == payload) and len(data) <= max_bytes:
                return data
        except Exception:  # the path below raises the explained error
            pass
    return _encode_checked(spec, payload, index, max_bytes)


def refuse_sealed_lookalike(
    spec: KindSpec, value: object, fields: Sequence[str], index: int
) -> None:
    """Raise PayloadError if a personal field of ``value`` begins with the sealed prefix:
    taken for a sealed value, it would be stored as if it were one, and no read of the
    ledger, sealed now or later, could open it again (ADR 0144)."""
    for name in fields:
        field_value = getattr(value, name, None)
        if type(field_value) is str and field_value.startswith(SEALED_PREFIX):
            raise PayloadError(
                f"event #{index} ({spec.name}): field `{name}` begins with {SEALED_PREFIX!r},"
                " which marks a sealed value; a personal field cannot begin so",
                index=index,
                field=name,
            )


def seal_payload(
    sealer: Sealer,
    spec: KindSpec,
    payload: object,
    data: bytes,
    event_id: str,
    actor: str,
    index: int,
    max_bytes: int = 1 << 30,
) -> bytes:
    """Return the canonical bytes of ``payload`` (validated as ``data``), personal fields sealed.

    Raises:
        PayloadError: the sealed payload is larger than ``max_bytes``, or its subject's name
            holds a NUL (no command line could name it to forget it).
    """
    value = payload if isinstance(payload, spec.type) else spec.decoder.decode(data)
    if "\x00" in (subject := subject_of(actor, value)):
        raise PayloadError(
            f"event #{index} ({spec.name}): its subject {subject!r} holds a NUL character; a"
            " sealed subject must be a name `engram forget` can be given",
            index=index,
            field="agent",
        )
    refuse_sealed_lookalike(spec, value, sealer.personal.get(spec.name, ()), index)
    sealed = _encoder.encode(sealer.seal(spec.name, event_id, actor, value))
    if len(sealed) > max_bytes:
        raise PayloadError(
            f"event #{index} ({spec.name}): payload is {len(sealed)} bytes once its personal"
            f" fields are sealed, over the limit of {max_bytes}",
            index=index,
            field="payload",
        )
    return sealed


def _encode_checked(spec: KindSpec, payload: object, index: int, max_bytes: int) -> bytes:
    where = f"event #{index} ({spec.name})"
    data = b""
    try:
        if isinstance(payload, spec.type):
            value: Any = payload
        elif isinstance(payload, Mapping):
            value = msgspec.convert(dict(payload), spec.type, str_keys=True)
        else:
            raise PayloadError(
                f"{where}: payload must be a {spec.type.__name__} or a mapping, "
                f"got {type(payload).__name__}",
                index=index,
                field="payload",
            )
        for name in naive(value, spec.times):
            raise PayloadError(
                f"{where}: field `{name}` is a naive datetime ({getattr(value, name)}); "
                "give it a time zone (e.g. tzinfo=timezone.utc)",
                index=index,
                field=name,
            )
        data = _encoder.encode(value)
        # Structs are not validated at construction, and the stored bytes must read back as
        # the value given: round-trip through the kind's decoder and compare.
        decoded = spec.decoder.decode(data)
        if spec.compare and decoded != value:
            raise _unfaithful(where, index, value)
    except msgspec.ValidationError as exc:
        if b"null" in data and _has_non_finite(msgspec.to_builtins(value)):
            raise _unfaithful(where, index, value) from None
        path = _field_of(str(exc))
        raise PayloadError(f"{where}: payload {exc}", index=index, field=path) from None
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        raise PayloadError(
            f"{where}: payload cannot be stored as JSON: {exc}", index=index, field="payload"
        ) from None
    if len(data) > max_bytes:
        raise PayloadError(
            f"{where}: payload is {len(data)} bytes, over the limit of {max_bytes}",
            index=index,
            field="payload",
        )
    return data


def naive(value: object, names: tuple[str, ...]) -> list[str]:
    """Return the fields of ``names`` whose value is a datetime without a time zone."""
    return [
        name
        for name in names
        if isinstance(when := getattr(value, name), datetime)
        and (when.tzinfo is None or when.utcoffset() is None)
    ]


def _unfaithful(where: str, index: int, value: object) -> PayloadError:
    if _has_non_finite(msgspec.to_builtins(value)):
        reason = "it holds NaN or infinity, which JSON cannot store"
    else:
        reason = "e.g. a datetime whose UTC offset has seconds; store such values in UTC"
    return PayloadError(
        f"{where}: payload does not read back as written: {reason}", index=index, field="payload"
    )


def _has_non_finite(value: object) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_non_finite(v) for v in value)
    return False


def _field_of(message: str) -> str:
    # msgspec ends its messages with "- at `$.field`" (or "... at `key` in `$`")
    found = re.search(r" - at `\$([^`]*)`$", message)
    return "payload" + found.group(1) if found else "payload"


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
        try:
            at = at.astimezone(UTC)
        except OverflowError:
            raise EnvelopeError(
                f"event #{index}: field `at` ({at.isoformat()}) is out of range in UTC",
                index=index,
                field="at",
            ) from None
    return at.isoformat(timespec="microseconds")


def utc_now_text() -> str:
    """Return the current UTC time as :func:`format_at` writes it, without a datetime.

    Equal to ``format_at(datetime.now(UTC))``; the date and time of day are formatted once
    per second, only the microseconds per call.
    """
    global _second
    micros = time.time_ns() // 1000
    seconds, fraction = divmod(micros, 1_000_000)
    cached, text = _second
    if cached != seconds:
        text = datetime.fromtimestamp(seconds, UTC).isoformat()[:19]
        _second = (seconds, text)
    return f"{text}.{fraction:06d}+00:00"


def canonical(fields: tuple[Any, ...]) -> bytes:
    """Return the bytes an event's hash covers.

    ``fields`` is a storage row without its hash: position, id, stream, version, kind,
    schema, actor, at (canonical text), payload, causation_id, correlation_id.
    """
    pos, id_, stream, version, kind, schema, actor, at, payload, caus, corr = fields
    header = _encode_header([pos, id_, stream, version, kind, schema, actor, at, caus, corr])
    return header + b"\n" + bytes(payload)


def chain(previous: bytes, canonical_bytes: bytes) -> bytes:
    """Return the hash of an event from its predecessor's hash and its canonical bytes."""
    return hashlib.sha256(previous + canonical_bytes).digest()


def link(previous: bytes, fields: tuple[Any, ...]) -> bytes:
    """Return ``chain(previous, canonical(fields))`` for a row about to be written.

    The append path's shortcut: ``payload`` must already be ``bytes`` (as
    :func:`encode_payload` returns it).
    """
    pos, id_, stream, version, kind, schema, actor, at, payload, caus, corr = fields
    header = _encode_header([pos, id_, stream, version, kind, schema, actor, at, caus, corr])
    return _sha256(previous + header + b"\n" + payload).digest()


def decode_payload(spec: KindSpec | None, data: bytes, schema: int) -> Any:
    """Decode stored payload bytes: the kind's Struct when known, else a plain dict."""
    if spec is None:
        return msgspec.json.decode(data)
    return spec.decode(data, schema)
