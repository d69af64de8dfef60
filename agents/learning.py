"""The learning step: draft suggestions from the scars waiting for one.

:func:`learn` takes learnable scars that no suggestion names, by importance, in batches, and
asks a :class:`~engram.agents.completion.Completer` (routed as the ``learn`` use) for a
:class:`Draft`: a destination and a text. The scar is scrubbed of personal data
(:mod:`engram.agents.privacy`) before the prompt is built, whatever the provider, and the
answer is scrubbed again. Each draft is appended as a ``suggestion.proposed`` event, so a
rebuild never calls a model (ADR 0028).

The default provider is offline: :func:`draft_offline` is extractive and deterministic. It
takes the lesson's first sentence and chooses the destination by what a scar is, not by a
list of verbs (ADR 0057): pending work goes to ``task``; a victory's pattern that is not an
instruction to ``skill``; any other lesson (a failure's lesson says what avoids a repeat)
becomes a situational rule when it fits on one short line, the instructions file otherwise.
Settings and the notes inbox are a reviewer's redirect, never an offline guess.

Repeats are found before drafting (:mod:`engram.agents.repeats`): scars that tell one
mistake are drafted as one suggestion, and a later repeat joins the suggestion drafted.

A model that is unreachable leaves the rest of the run's scars waiting; an answer that is
refused or out of shape leaves its scar waiting; either way one ``suggestion.deferred``
event records the scars and the reason, which the learning queue shows. Nothing raises.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import msgspec

from engram.agents import repeats
from engram.agents.completion import (
    Completer,
    CompletionError,
    CompletionUnavailableError,
    OfflineAnswer,
    OfflineCompleter,
    completer_for,
    load_completion_routing,
)
from engram.agents.errors import SuggestionInputError
from engram.agents.meaning import calibration_for, content_words, overlap
from engram.agents.privacy import scrub
from engram.ledger import ANY, NO_STREAM, ConcurrencyError, Ledger, NewEvent
from engram.ledger.catalog import (
    Destination,
    SuggestionDeferred,
    SuggestionJoined,
    SuggestionProposed,
)
from engram.projections import suggestions
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.rules import one_line

#: The longest text a rule may have (rules are loaded into every session).
MAX_RULE = 300
DEFAULT_BATCH = 10
#: Event ids of drafts are derived from (scar, drafter): a re-run after a crash is a no-op.
_NAMESPACE = uuid.UUID("6f1b2f5e-4c1a-5d9e-9a43-2f6c8e0b7d11")


class Draft(msgspec.Struct, frozen=True):
    """What a drafter answers for one scar: where the lesson should go and its text."""

    destination: Destination
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=4000)]


class ScarPrompt(msgspec.Struct, frozen=True):
    """The part of a scar a drafter sees (scrubbed), as the prompt's JSON."""

    kind: str
    what: str
    lesson: str
    importance: int


SYSTEM = (
    "You turn one lesson an AI agent learned (a failure or a victory) into one concrete "
    "suggestion a person will review. Choose the destination: 'rules' for a short "
    "instruction every session must follow (one line), 'instructions_file' for a longer "
    "instruction, 'settings' for a configuration change, 'skill' for a reusable procedure, "
    "'task' for work still to do, 'notes_inbox' for anything else. Write the text as the "
    "instruction itself, in the imperative, without personal data."
)

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_INSTRUCTION = re.compile(
    r"^(?:always|never|do|don't|do not|use|run|check|verify|prefer|avoid|make sure|ensure|"
    r"pin|add|keep|set|call|read|write|test|retry|wait|ask|log|validate|remove|stop|start|"
    r"before|after|when|if)\b|\b(?:must|should|need to|has to|have to)\b",
    re.IGNORECASE,
)
#: What marks a lesson as work still to do: a to-do or an open question anywhere, or a
#: lesson that opens with the work ("Follow up with the vendor", "Investigate why ...").
#: An instruction that speaks of following up or of later ("otherwise say we will follow
#: up", "retry later") is a rule, not a task (ADR 0181).
_TASK = re.compile(
    r"\b(?:todo|to-do|open question|still need to|still have to)\b"
    r"|^(?:follow[- ]up|investigate|look into|find out)\b",
    re.I,
)


def draft_offline(scar: ScarPrompt) -> Draft:
    """Draft a suggestion from a scar's own lesson, deterministically, without a model."""
    lesson = one_line(scar.lesson)
    first = _SENTENCE.split(lesson, maxsplit=1)[0].strip()
    # The whole lesson: its later sentences are steps of it, not to be dropped (ADR 0127).
    text = lesson[:1].upper() + lesson[1:]
    if text and text[-1] not in ".!?":
        text += "."
    if _TASK.search(lesson):
        return Draft("task", f"{text} (from: {one_line(scar.what)})")
    if scar.kind == "victory" and not _INSTRUCTION.search(first):
        return Draft("skill", f"{text} (worked when: {one_line(scar.what)})")
    # A failure's lesson says what avoids a repeat, whatever verb it starts with: a lesson
    # served when a task calls for it, or the instructions file when too long for one line.
    if len(text) <= MAX_RULE:
        return Draft("rules", text)
    return Draft("instructions_file", lesson)


def _offline_answer(system: str, prompt: str) -> Draft:
    return draft_offline(msgspec.json.decode(prompt.encode(), type=ScarPrompt))


#: The offline provider's answers for the learning step (pass to ``completer_for``).
OFFLINE_ANSWERS: dict[type[msgspec.Struct], OfflineAnswer] = {Draft: _offline_answer}


def offline_drafter() -> OfflineCompleter:
    """Return the default drafter: the offline provider answering :class:`Draft`."""
    return OfflineCompleter(OFFLINE_ANSWERS)


def routed_drafter(routing: str | os.PathLike[str] | None) -> Completer:
    """Return the drafter the routing file's ``[complete.learn]`` route names (offline by
    default); a missing or invalid file warns (``CompletionConfigWarning``) and drafts offline."""
    path = os.path.expanduser(routing) if routing else None
    return completer_for("learn", load_completion_routing(path), offline=OFFLINE_ANSWERS)


@dataclass
class Drafted:
    """One suggestion drafted for a scar (``position`` None in a dry run)."""

    scar: str
    suggestion: str
    destination: str
    text: str
    position: int | None
    scars: list[str] = field(default_factory=list)  # every scar it cites


@dataclass
class LearnReport:
    """What a learning step did: drafts, repeats joined, deferrals, what stays waiting."""

    drafted: list[Drafted] = field(default_factory=list)
    joined: list[tuple[str, str]] = field(default_factory=list)  # (suggestion, scar)
    deferred: list[tuple[str, str]] = field(default_factory=list)  # (scar id, reason)
    scrubbed: dict[str, int] = field(default_factory=dict)  # replacements in prompts
    filtered: dict[str, int] = field(default_factory=dict)  # replacements in answers
    waiting: int = 0  # scars still waiting after the step
    dry_run: bool = False


def learn(
    ledger: Ledger,
    engine: ProjectionEngine,
    completer: Completer | None = None,
    *,
    batch: int = DEFAULT_BATCH,
    limit: int | None = None,
    dry_run: bool = False,
    actor: str = "job:learn",
    embedder: Embedder | None = None,
) -> LearnReport:
    """Draft suggestions for the scars waiting for one, most important first.

    Repeats are found first (:func:`engram.agents.repeats.group`, by ``embedder`` and the
    content words): a waiting scar that tells the mistake of a suggestion drafted already
    joins it (``suggestion.joined``); waiting scars that tell one new mistake are drafted as
    one suggestion citing every one of them. ``batch`` suggestions are drafted, then
    appended together; ``limit`` caps the scars taken (default: all). ``dry_run`` drafts and
    reports but appends nothing.

    Raises:
        SuggestionInputError: ``batch`` or ``limit`` is not a positive int.
    """
    for name, value in (("batch", batch), ("limit", limit)):
        if value is None and name == "limit":
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SuggestionInputError(f"{name} must be a positive int, got {value!r}")
    drafter = completer or offline_drafter()
    engine.wait_for(ledger.head())
    with engine.read() as conn:
        everything = suggestions.waiting(conn)
        drafted = suggestions.members(conn)
    queue = everything[:limit] if limit is not None else everything
    report = LearnReport(dry_run=dry_run)
    groups = _groups(drafted, queue, embedder)
    joins = [
        NewEvent(
            stream=f"suggestion:{g.suggestion}",
            kind="suggestion.joined",
            payload=SuggestionJoined(
                suggestion=g.suggestion,
                scars=[t.id for t in g.joined],
                drafter=drafter.fingerprint[:512],
            ),
            actor=actor,
        )
        for g in groups
        if g.suggestion is not None and g.joined
    ]
    report.joined = [(str(e.payload.suggestion), s) for e in joins for s in e.payload.scars]
    if joins and not dry_run:
        ledger.append(joins)
    by_id = {w.id: w for w in queue}
    fresh = [[by_id[t.id] for t in g.joined] for g in groups if g.suggestion is None]
    fresh.sort(key=lambda scars: (-max(s.importance for s in scars), scars[0].position))
    down: str | None = None
    for start in range(0, len(fresh), batch):
        chunk = fresh[start : start + batch]
        proposals: list[NewEvent] = []
        failed: dict[str, list[str]] = {}
        for scars in chunk:
            ids = [s.id for s in scars]
            if down is not None:
                failed.setdefault(down, []).extend(ids)
                continue
            try:
                draft = _draft(drafter, _representative(scars, embedder), report)
            except CompletionUnavailableError as error:
                down = f"model unavailable: {error}"
                failed.setdefault(down, []).extend(ids)
                continue
            except CompletionError as error:
                failed.setdefault(f"{type(error).__name__}: {error}", []).extend(ids)
                continue
            proposals.append(_proposal(ids, draft, drafter.fingerprint, actor))
        deferrals = [
            NewEvent(
                stream="learning",
                kind="suggestion.deferred",
                payload=SuggestionDeferred(
                    scars=scars, reason=reason[:2000], drafter=drafter.fingerprint[:512]
                ),
                actor=actor,
            )
            for reason, scars in failed.items()
        ]
        report.deferred += [(s, r) for r, scars in failed.items() for s in scars]
        positions = {} if dry_run else _append(ledger, proposals + deferrals)
        for event in proposals:
            report.drafted.append(
                Drafted(
                    scar=event.payload.scars[0],
                    suggestion=str(event.id),
                    destination=event.payload.destination,
                    text=event.payload.text,
                    position=positions.get(str(event.id)),
                    scars=list(event.payload.scars),
                )
            )
    if dry_run:
        report.waiting = len(everything)
    else:
        engine.wait_for(ledger.head())
        with engine.read() as conn:
            report.waiting = len(suggestions.waiting(conn))
    return report


def _groups(
    drafted: Sequence[suggestions.Member],
    queue: Sequence[suggestions.Waiting],
    embedder: Embedder | None,
) -> list[repeats.Group]:
    """Group the waiting scars with the drafted ones they repeat, and among themselves: a
    repeat tells the same outcome, so failures and victories are grouped apart (a victory
    joined a failure's rule, and drafted no pattern of its own; ADR 0127)."""
    return [
        group
        for kind in dict.fromkeys([*(w.kind for w in queue)])
        for group in _grouped(
            [m for m in drafted if m.kind == kind], [w for w in queue if w.kind == kind], embedder
        )
    ]


def _grouped(
    drafted: Sequence[suggestions.Member],
    queue: Sequence[suggestions.Waiting],
    embedder: Embedder | None,
) -> list[repeats.Group]:
    """Group the waiting scars of one outcome with the drafted ones they repeat."""
    told = [(m.suggestion, repeats.Told(m.scar, m.position, m.what, m.lesson)) for m in drafted]
    waiting = [repeats.Told(w.id, w.position, w.what, w.lesson) for w in queue]
    vectors = lessons = happened = None
    calibration = calibration_for(embedder)
    if embedder is not None and waiting:
        every = [t for _, t in told] + waiting
        vectors, lessons = repeats.embedded(every, embedder)
        happened = repeats.situations(every, embedder)
    # A reviewer's decision, applied or refused, was on a lesson: a scar joins it only where
    # its lesson agrees too; one teaching another is drafted, not refused unread (ADR 0185).
    settled = frozenset(m.suggestion for m in drafted if m.status in ("applied", "refused"))
    return repeats.group(
        told, waiting, vectors, calibration, lessons=lessons, settled=settled, happened=happened
    )


def _representative(
    scars: Sequence[suggestions.Waiting], embedder: Embedder | None
) -> suggestions.Waiting:
    """Return the scar a group's suggestion is drafted from: one whose lesson fits a rule's
    line where any does, then the most important, then the one whose lesson shares the most
    content words with the others' (the group's centre).

    The tellings of one mistake teach one lesson in different words; a wording that fits a
    rule is served when a task calls for it, a longer one is only written to the
    instructions file no context frame reads, and the group's short tellings were lost
    with it (ADR 0165)."""
    if len(scars) == 1:
        return scars[0]
    words = [content_words(s.lesson) for s in scars]

    def centrality(i: int) -> float:
        return sum(overlap(words[i], w) for j, w in enumerate(words) if j != i)

    def fits(i: int) -> bool:
        # The offline draft's length: the lesson on one line, and a full stop it may gain.
        return len(one_line(scars[i].lesson)) < MAX_RULE

    best = max(range(len(scars)), key=lambda i: (fits(i), scars[i].importance, centrality(i), -i))
    return scars[best]


def _draft(drafter: Completer, scar: suggestions.Waiting, report: LearnReport) -> Draft:
    parts = [scrub(scar.what), scrub(scar.lesson)]
    for part in parts:
        for category, n in part.found.items():
            report.scrubbed[category] = report.scrubbed.get(category, 0) + n
    prompt = ScarPrompt(
        kind=scar.kind, what=parts[0].text, lesson=parts[1].text, importance=scar.importance
    )
    answer = drafter.complete(SYSTEM, msgspec.json.encode(prompt).decode(), Draft)
    cleaned = scrub(answer.text)
    for category, n in cleaned.found.items():
        report.filtered[category] = report.filtered.get(category, 0) + n
    text = cleaned.text.strip()
    destination = answer.destination
    if destination == "rules":
        text = one_line(text)
        if len(text) > MAX_RULE:  # too long to load into every session
            destination = "instructions_file"
    if not text:
        raise _EmptyAnswerError("the drafter answered an empty text")
    return Draft(destination, text)


class _EmptyAnswerError(CompletionError):
    pass


def suggestion_id(scar: str | Sequence[str], drafter: str) -> str:
    """Return the event id of the suggestion ``drafter`` drafts for ``scar`` (or a group)."""
    key = scar if isinstance(scar, str) else "|".join(sorted(scar))
    return str(uuid.uuid5(_NAMESPACE, f"{key}|{drafter}"))


def _proposal(scars: Sequence[str], draft: Draft, drafter: str, actor: str) -> NewEvent:
    event_id = suggestion_id(scars[0] if len(scars) == 1 else scars, drafter)
    return NewEvent(
        stream=f"suggestion:{event_id}",
        kind="suggestion.proposed",
        payload=SuggestionProposed(
            scars=list(scars),
            destination=draft.destination,
            text=draft.text,
            drafter=drafter[:512],
        ),
        actor=actor,
        id=event_id,
    )


def _append(ledger: Ledger, events: Sequence[NewEvent]) -> dict[str, int]:
    """Append a batch; if a suggestion's stream exists already (a concurrent step drafted
    it), append the others one by one and skip it."""
    if not events:
        return {}
    expect = {e.stream: NO_STREAM for e in events if e.kind == "suggestion.proposed"}
    try:
        positions = ledger.append(list(events), expect=expect or ANY)
        return {str(e.id): p for e, p in zip(events, positions, strict=True) if e.id}
    except ConcurrencyError:
        out = {}
        for event in events:
            try:
                (position,) = ledger.append(event, expect=expect.get(event.stream, ANY))
            except ConcurrencyError:
                continue
            if event.id:
                out[str(event.id)] = position
        return out
