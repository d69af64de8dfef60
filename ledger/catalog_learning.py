"""The learning loop's kinds: scars (ADR 0027), the suggestions drawn from them, their
review and writing, and the closing of a project (ADR 0080).

A scar records a failure or a victory; the learning step drafts a suggestion from scars (or
defers them, or joins them to an earlier suggestion); a person reviews it; an applied one is
written to its destination. A closed project's scars are drafted into its lesson. Gathered
with every other kind in :data:`engram.ledger.catalog.KINDS`.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import msgspec

from engram.ledger.payload import (
    EventId,
    Importance,
    Name,
    Payload,
    Position,
    Text,
    Visibility,
    check_distinct,
)

ScarKind = Literal["failure", "victory"]
Destination = Literal["rules", "instructions_file", "settings", "notes_inbox", "skill", "task"]
Decision = Literal["applied", "refused", "modified"]
WriteMode = Literal["appended", "replaced", "created"]


class ScarSources(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """Where a scar came from: ledger events, and the task, file and agent involved."""

    events: list[EventId] = []
    task: str | None = None
    file: str | None = None
    agent: str | None = None


class ScarRecorded(Payload, frozen=True):
    """A failure or a victory became data: what happened and the lesson drawn from it.

    For a failure the lesson says what was added to avoid a repeat; for a victory, the
    pattern to reproduce. ``importance`` is given, or scored once when recorded and stored
    here, so a rebuild never asks a model again.
    """

    __kind__: ClassVar[str] = "scar.recorded"

    agent: Name
    kind: ScarKind
    what: Text
    lesson: Text
    importance: Importance
    learnable: bool = True
    visibility: Visibility = "public"
    sources: ScarSources = ScarSources()
    tags: list[Name] = []


class ScarArchived(Payload, frozen=True):
    """Scars (``scar.recorded`` positions) left every index; the ledger keeps them."""

    __kind__: ClassVar[str] = "scar.archived"

    positions: Annotated[list[Position], msgspec.Meta(min_length=1)]
    reason: str | None = None

    def __post_init__(self) -> None:
        check_distinct(self.positions, "positions")


class FileDiff(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A proposed edit of one file: its path and the text before and after."""

    path: Text
    before: str
    after: str


class SuggestionProposed(Payload, frozen=True):
    """A concrete suggestion drawn from scars, waiting for a person to review it."""

    __kind__: ClassVar[str] = "suggestion.proposed"

    scars: Annotated[list[EventId], msgspec.Meta(min_length=1)]
    destination: Destination
    text: Text
    diff: FileDiff | None = None
    drafter: Name = "offline"


class SuggestionReviewed(Payload, frozen=True):
    """A person applied, refused or modified (and applied) a suggestion.

    ``text`` is the final text: the suggestion's own for ``applied``, the reviewer's edit
    for ``modified``, absent for ``refused``.
    """

    __kind__: ClassVar[str] = "suggestion.reviewed"

    suggestion: EventId
    decision: Decision
    reviewer: Name
    note: str = ""
    text: str | None = None
    always: bool = False  # a rule the reviewer marks always-on (tier 1), served everywhere
    destination: Destination | None = None  # where the reviewer sends it, if not as drafted


class SuggestionDeferred(Payload, frozen=True):
    """A learning step could not draft a suggestion for some scars; they stay waiting.

    ``reason`` says why (the model was unreachable, refused, or answered out of shape), so
    the learning queue shows it; the scars are tried again by a later step.
    """

    __kind__: ClassVar[str] = "suggestion.deferred"

    scars: Annotated[list[EventId], msgspec.Meta(min_length=1)]
    reason: Text
    drafter: Name = "offline"


class SuggestionJoined(Payload, frozen=True):
    """Later scars tell the mistake a suggestion was drafted from again: they join it.

    The suggestion keeps its status and text (a refused one stays refused); the scars are
    named by it, so they are not drafted again, and a rule drawn from it gains their words.
    """

    __kind__: ClassVar[str] = "suggestion.joined"

    suggestion: EventId
    scars: Annotated[list[EventId], msgspec.Meta(min_length=1)]
    drafter: Name = "offline"


class SuggestionWritten(Payload, frozen=True):
    """An applied suggestion was written to its destination's file or folder.

    ``sha256`` is the digest of the bytes written (the new file for ``created`` and
    ``replaced``, the appended text for ``appended``).
    """

    __kind__: ClassVar[str] = "suggestion.written"

    suggestion: EventId
    destination: Destination
    path: Text
    mode: WriteMode
    sha256: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]


class ProjectClosed(Payload, frozen=True):
    """A project (or a work session) closed: how it ended, and what it was estimated to take.

    Its scars are those tagged with the project's name or naming it as their task
    (``sources.task``); the post-project job drafts its lesson from them.
    """

    __kind__: ClassVar[str] = "project.closed"

    project: Name
    agent: Name
    outcome: str = ""
    estimate_hours: Annotated[float, msgspec.Meta(ge=0.0, le=1e6)] | None = None
    actual_hours: Annotated[float, msgspec.Meta(ge=0.0, le=1e6)] | None = None
