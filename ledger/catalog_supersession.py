"""Supersession's kinds (ADR 0052): a memory replaces earlier ones, proposed and reviewed."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

import msgspec

from engram.ledger.payload import Name, Payload, Position, check_distinct

SupersessionMethod = Literal["explicit", "detected", "reviewed"]


def _check_replaces(position: int, replaces: list[int], earlier: bool = True) -> None:
    """Refuse a memory replacing itself, a position twice, and, said by an agent (``earlier``),
    one recorded after it. Detection may find that a memory recorded earlier replaces one told
    late of an earlier time: what replaces what is read in the time the memories are of, and
    the events' positions only say when each was told (ADR 0116)."""
    check_distinct(replaces, "replaces")
    if position in replaces:
        raise ValueError(f"a memory does not replace itself; {position} is in replaces")
    later = sorted(p for p in replaces if p >= position)
    if earlier and later:
        raise ValueError(f"a memory replaces only earlier ones; {later} are not before {position}")


class MemorySuperseded(Payload, frozen=True):
    """A memory (``position``) replaced others: they are no longer true from ``valid_from``
    (None: from the replacing memory's own time) on. Said by an agent (``explicit``), they are
    recorded before it; found by detection, one may be recorded after it, told late of an
    earlier time (ADR 0116)."""

    __kind__: ClassVar[str] = "memory.superseded"

    agent: Name
    position: Position
    replaces: Annotated[list[Position], msgspec.Meta(min_length=1)]
    valid_from: datetime | None = None
    method: SupersessionMethod = "explicit"
    proposal: Position | None = None  # the supersession.proposed event it applies
    similarity: float | None = None
    reason: str = ""  # why detection found it: the rule's evidence or the model's words

    def __post_init__(self) -> None:
        _check_replaces(self.position, self.replaces, earlier=self.method == "explicit")


class SupersessionProposed(Payload, frozen=True):
    """Detection found memories a memory may replace (dated before it, recorded before or
    after it); a review decides."""

    __kind__: ClassVar[str] = "supersession.proposed"

    agent: Name
    position: Position
    replaces: Annotated[list[Position], msgspec.Meta(min_length=1)]
    similarity: float
    method: Name = "overlap"
    reason: str = ""  # why: the rule's evidence (subject, attribute, values) or the model's words

    def __post_init__(self) -> None:
        _check_replaces(self.position, self.replaces, earlier=False)


class SupersessionReviewed(Payload, frozen=True):
    """A person applied or refused a proposed supersession (``proposal``: its position)."""

    __kind__: ClassVar[str] = "supersession.reviewed"

    proposal: Position
    decision: Literal["applied", "refused"]
    reviewer: Name
    note: str = ""


class SupersessionReverted(Payload, frozen=True):
    """A supersession (the ``memory.superseded`` or applying review's position) was undone."""

    __kind__: ClassVar[str] = "supersession.reverted"

    supersession: Position
    reviewer: Name
    note: str = ""
