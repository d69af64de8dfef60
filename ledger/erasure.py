"""An erasure as the ledger appends it: ``subject.forgotten`` only after the subject's keys
are destroyed (ADR 0039, ADR 0124), and what the key store keeps of it meanwhile, so a
process killed between the two is finished by the next writer without appending it twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import msgspec

from engram.ledger.errors import ConfigError
from engram.ledger.events import ANY, NewEvent
from engram.ledger.ids import new_id
from engram.ledger.kinds import KindRegistry
from engram.ledger.planning import prepare
from engram.ledger.shred import Sealer

__all__ = ["finished", "forgotten_first", "stamped", "unfinished"]


def forgotten_first(
    events: Sequence[NewEvent] | NewEvent,
    sealer: Sealer,
    registry: KindRegistry,
    max_payload_bytes: int,
) -> tuple[Sequence[NewEvent] | NewEvent, list[str]]:
    """Destroy the keys of each subject a ``subject.forgotten`` of ``events`` names that
    still holds a live key, as ``Ledger.forget`` does, before the batch is appended; return
    the batch (each such event given an id and a time, so a crash is finished by
    ``Ledger.finish_forgets`` without appending it twice) and the subjects to mark done.

    The event attests an erasure: appended alone it told every audit that the subject's
    text was gone while the keys still opened it (ADR 0124). The batch is checked whole
    first, so a malformed one destroys nothing."""
    batch = [events] if isinstance(events, NewEvent) else events
    if not isinstance(batch, Sequence):
        return events, []  # prepare names what is wrong with a batch that is no sequence
    out = list(batch)
    pending: dict[str, NewEvent] = {}
    live: set[str] | None = None
    for index, event in enumerate(batch):
        if not isinstance(event, NewEvent) or event.kind != "subject.forgotten":
            continue
        payload = event.payload
        subject = (
            payload.get("subject") if isinstance(payload, Mapping)
            else getattr(payload, "subject", None)
        )  # fmt: skip
        if live is None:
            live = {k.subject for k in sealer.keys.subjects() if k.live}
        if not isinstance(subject, str) or subject not in live or subject in pending:
            continue
        out[index] = msgspec.structs.replace(
            event, id=event.id or new_id(), at=event.at or datetime.now(UTC)
        )
        pending[subject] = out[index]
    if not pending:
        return events, []
    prepare(out, ANY, registry, max_payload_bytes, sealer)
    for subject, event in pending.items():
        sealer.keys.forget(subject, unfinished=unfinished(event))
    return out, list(pending)


def stamped(also: object) -> list[NewEvent]:
    """Return ``also`` (events appended with a ``subject.forgotten``) each with an id and a
    time, so the batch kept until appended is the batch a crash's next writer appends.

    Raises:
        ConfigError: ``also`` is not a sequence of :class:`NewEvent`.
    """
    if not isinstance(also, Sequence) or not all(isinstance(e, NewEvent) for e in also):
        raise ConfigError(f"also must be a sequence of NewEvent, got {type(also).__name__}")
    now = datetime.now(UTC)
    return [msgspec.structs.replace(e, id=e.id or new_id(), at=e.at or now) for e in also]


def unfinished(event: NewEvent, also: Sequence[NewEvent] = ()) -> str:
    """Return what the key store keeps of a ``subject.forgotten`` not appended yet, with the
    events ``also`` appended in its batch (the retraction of reflections drawn from the
    subject's memories, ADR 0138), each with its id and time."""
    payload = msgspec.to_builtins(event.payload)
    at = event.at.isoformat() if event.at is not None else None
    kept = {
        "id": event.id, "at": at, "actor": event.actor, "payload": payload,
        "also": [
            {"kind": e.kind, "stream": e.stream, "actor": e.actor, "id": e.id,
             "at": None if e.at is None else e.at.isoformat(),
             "payload": msgspec.to_builtins(e.payload)}
            for e in also
        ],
    }  # fmt: skip
    return msgspec.json.encode(kept).decode()


def finished(kept: str) -> list[NewEvent]:
    """Return the ``subject.forgotten`` event :func:`unfinished` kept, then the events kept
    with it (none where an older version kept it)."""
    from engram.ledger.catalog import SubjectForgotten

    data = msgspec.json.decode(kept)
    forgotten = NewEvent.of(
        msgspec.convert(data["payload"], SubjectForgotten),
        stream="subjects",
        actor=data["actor"],
        id=data["id"],
        at=datetime.fromisoformat(data["at"]),
    )
    also = [
        NewEvent(
            stream=e["stream"], kind=e["kind"], payload=e["payload"], actor=e["actor"],
            id=e["id"], at=None if e["at"] is None else datetime.fromisoformat(e["at"]),
        )
        for e in data.get("also", ())
    ]  # fmt: skip
    return [forgotten, *also]
