"""An erasure as the ledger appends it: ``subject.forgotten`` only after the subject's keys
are destroyed (ADR 0039, ADR 0124), and what the key store keeps of it meanwhile, so a
process killed between the two is finished by the next writer without appending it twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import msgspec

from engram.ledger.events import ANY, NewEvent
from engram.ledger.ids import new_id
from engram.ledger.kinds import KindRegistry
from engram.ledger.planning import prepare
from engram.ledger.shred import Sealer

__all__ = ["finished", "forgotten_first", "unfinished"]


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


def unfinished(event: NewEvent) -> str:
    """Return what the key store keeps of a ``subject.forgotten`` not appended yet."""
    payload = msgspec.to_builtins(event.payload)
    at = event.at.isoformat() if event.at is not None else None
    kept = {"id": event.id, "at": at, "actor": event.actor, "payload": payload}
    return msgspec.json.encode(kept).decode()


def finished(kept: str) -> NewEvent:
    """Return the ``subject.forgotten`` event :func:`unfinished` kept."""
    from engram.ledger.catalog import SubjectForgotten

    data = msgspec.json.decode(kept)
    return NewEvent.of(
        msgspec.convert(data["payload"], SubjectForgotten),
        stream="subjects",
        actor=data["actor"],
        id=data["id"],
        at=datetime.fromisoformat(data["at"]),
    )
