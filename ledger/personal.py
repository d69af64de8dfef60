"""Walking an event stream's personal fields (ADR 0039, ADR 0086), and hiding them.

Which fields of which kinds are personal is the settings' (``Settings.personal()``) or a
sealer's; this walks them once for every reader that needs them: the key split, an audit
opened as a subject, forgetting's sweep of the embedding cache. :func:`masked` hides another
subject's private ones where an event is shown (``engram log``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

import msgspec

from engram.ledger.events import Event
from engram.ledger.shred import DEFAULT_PERSONAL, FORGOTTEN, PRIVATE, subject_of

if TYPE_CHECKING:
    from engram.ledger.store import Ledger

__all__ = ["masked", "personal_fields", "retracted", "retracted_positions"]


def personal_fields(
    events: Iterable[Event],
    personal: Mapping[str, Sequence[str]],
    subject: str | None = None,
) -> Iterator[tuple[Event, dict[str, object]]]:
    """Yield each event of ``events`` with its personal fields' values, by field name.

    ``personal`` names each kind's personal fields; an event of another kind is skipped.
    With ``subject``, only that subject's events (:func:`subject_of`), typed payloads only:
    an untyped (dict) payload is an unknown kind's, whose subject cannot be told. Values
    are as the ledger handed them: sealed text read as stored, opened text read opened.
    """
    for event in events:
        names = personal.get(event.kind)
        if not names:
            continue
        payload = event.payload
        if isinstance(payload, dict):
            if subject is None:
                yield event, {name: payload.get(name) for name in names}
            continue
        if subject is None or subject_of(event.actor, payload) == subject:
            yield event, {name: getattr(payload, name, None) for name in names}


def masked(
    event: Event, viewer: str | None, personal: Mapping[str, Sequence[str]] = DEFAULT_PERSONAL
) -> Event:
    """Return ``event`` as ``viewer`` may see it: another subject's private fields hidden.

    A recall's query is private to the recalling agent; an item's personal fields are
    private when its ``visibility`` is ``private``. Hidden fields read :data:`PRIVATE`.
    """
    fields = personal.get(event.kind)
    payload = event.payload
    if event.kind == "concept.upserted" and not isinstance(payload, dict):
        return _concept_masked(event, viewer)
    if not fields or isinstance(payload, dict):
        return event
    private = event.kind == "memory.recalled" or getattr(payload, "visibility", None) == "private"
    if not private or subject_of(event.actor, payload) == viewer:
        return event
    hidden = {
        name: PRIVATE
        for name in fields
        if isinstance(getattr(payload, name, None), str) and getattr(payload, name) != FORGOTTEN
    }
    if not hidden:
        return event
    return msgspec.structs.replace(event, payload=msgspec.structs.replace(payload, **hidden))


def _concept_masked(event: Event, viewer: str | None) -> Event:
    """Return a private concept as another agent sees it: its label :data:`PRIVATE`, its
    payload empty. A concept is not sealed (its fields are in the file and in SQL), but the
    views that read ``[private]`` for another agent's memory read it for its concept too."""
    payload = event.payload
    if getattr(payload, "visibility", None) != "private" or payload.agent == viewer:
        return event
    hidden = msgspec.structs.replace(payload, label=PRIVATE, payload={})
    return msgspec.structs.replace(event, payload=hidden)


def retracted(event: Event, positions: AbstractSet[int]) -> Event:
    """Return ``event`` with its text and question read as :data:`FORGOTTEN` when it is a
    reflection at one of ``positions``: retracted, drawn from a forgotten subject's memories
    (``reflection.retracted``, ADR 0110). Its author's key still opens it; what it says is
    the forgotten subject's."""
    if event.kind != "memory.reflected" or event.position not in positions:
        return event
    payload = msgspec.structs.replace(event.payload, text=FORGOTTEN, question=FORGOTTEN)
    return msgspec.structs.replace(event, payload=payload)


def retracted_positions(ledger: Ledger) -> set[int]:
    """Return the positions of the reflections ``reflection.retracted`` withdrew (ADR 0110):
    what :func:`retracted` reads as :data:`FORGOTTEN` wherever an event is shown."""
    return {p for r in ledger.read(kinds=["reflection.retracted"]) for p in r.payload.positions}
