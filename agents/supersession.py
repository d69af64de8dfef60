"""Supersession: a memory replaces earlier ones, by an event, reviewable and reversible.

An agent says it (``observe(..., supersedes=[...])`` or :func:`supersede`), or detection
proposes it when a memory is observed (:func:`detect`): among the agent's earlier memories
that name the same subject (:mod:`engram.agents.candidacy`), quote the same ids and numbered
occurrences (an id or "round 26" names a thing: two incidents, two rounds), and differ from
the new memory's content both ways (not a copy), the one that says the most similar thing
of the subject — cosine with the subject's name taken out of both texts — is taken when
that reaches the embedder's threshold (:data:`THRESHOLDS`, lower when the new memory
announces a change: :data:`ANNOUNCED`), measured on generated pairs (ADRs 0052, 0075). A
routed model (``[complete.supersede]``, :func:`routed_judge`) judges the best candidates
instead, the offline rule deciding on a model error. The policy says what a finding
becomes: ``apply`` appends ``memory.superseded`` at once, ``review`` appends
``supersession.proposed`` for a person or the agent to apply or refuse, ``off`` runs no
detection. Each records why. Every supersession can be reverted (:func:`revert`); recall
then serves the old memory as current.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, NamedTuple

import msgspec

from engram.agents.announcing import back_in_action
from engram.agents.arguments import DetectionWarning, check_name
from engram.agents.candidacy import (
    Candidate,
    announced,
    announces,
    candidates,
    same_format,
    search,
    value_format,
)
from engram.agents.completion import (
    Completer,
    CompletionConfigWarning,
    CompletionError,
    CompletionFormatError,
    OfflineRoute,
    completer_for,
    load_completion_routing,
)
from engram.agents.errors import UnknownMemoryError
from engram.agents.folding import same_numbers
from engram.agents.holders import holder_anew
from engram.agents.matching import sold_thing
from engram.agents.notes import as_stated
from engram.agents.relations import owner_given, same_relation
from engram.agents.shapes import instances_apart, value_anew
from engram.agents.typed import measures_apart, same_kind
from engram.ledger import NewEvent
from engram.ledger.catalog import (
    MemorySuperseded,
    SupersessionProposed,
    SupersessionReverted,
    SupersessionReviewed,
)
from engram.ledger.errors import EngramError
from engram.projections import lexical, salience, supersession
from engram.projections.counts import check_count
from engram.projections.errors import QueryError

if TYPE_CHECKING:
    from engram.agents.memory import AgentMemory

__all__ = [
    "MAX_NOTE",
    "POLICIES",
    "THRESHOLDS",
    "Candidate",
    "Finding",
    "announces",
    "candidates",
    "detect",
    "revert",
    "review",
    "routed_judge",
    "same_format",
    "supersede",
    "value_format",
]

POLICIES = ("apply", "review", "off")
#: The cosine of what two memories say of their subject (its name taken out of both) from
#: which the offline rule says the newer replaces the older. On generated pairs (a fact and
#: its change, beside another fact or an event of the same person), the whole sentences'
#: MiniLM cosines overlap (changes: median 0.68, 5% below 0.50; others: median 0.48, 5%
#: above 0.61): the name makes any two sentences about one person alike. Without it, 99%
#: of the others score below 0.28 with MiniLM and 0.17 with hash vectors; each threshold
#: sits just above that (ADR 0075).
THRESHOLDS = {"hash": 0.2, "neural": 0.3}
#: The threshold when the new memory says that something changed (its change words,
#: :data:`~engram.agents.candidacy.CHANGE_WORDS`): the 95th percentile of the others, not the
#: 99th, since a sentence announcing a change tells that an earlier one stopped being true
#: (ADR 0075).
ANNOUNCED = {"hash": 0.13, "neural": 0.24}
#: The threshold when the two memories give values of one format in place of each other
#: (:func:`same_format`): a region code for a region code, a release for a release, a time
#: of day for a time of day. The format says which attribute the value is of, where the
#: words around it may not ("moved the shipper over to eu-west-1" of "lives in the
#: ap-south-1 region"); the cosine need only not say they speak of unrelated things
#: (ADR 0115).
FORMATTED = {"hash": 0.0, "neural": 0.1}
#: The threshold when the new memory announces a change and both state one relation a
#: subject holds with one named thing at a time, where it lives or works
#: (:func:`~engram.agents.relations.same_relation`): the relation's words say which attribute
#: the names are the values of where the words saying it differ ("relocated to Porto" of
#: "lives in Berlin"); what is left of the two once their names are out is those differing
#: words, whose cosine says nothing more (MiniLM: 0.08 for "has started a new position at"
#: of "works for"; ADR 0154).
RELATED = -1.0
#: The threshold when the old memory gives only a thing's holder and the new one names
#: another, the change announced (:func:`~engram.agents.holders.holder_anew`): what is left of
#: the two without their shared words is their names, whose cosine says nothing (ADR 0150).
HOLDER = -1.0
#: How many candidates, most similar first, a routed model judges in one request.
JUDGED = 3


def _checked(memory: AgentMemory, positions: Sequence[int], what: str) -> list[int]:
    """Return ``positions`` if each holds a live memory of this agent; else raise. By hand,
    an agent replaces its own memories only: detection alone reaches another agent's public
    ones, by what the two say alike (ADR 0166, 0171)."""
    return memory.own_memories(positions, "supersedes", f"{what}: ")


def check_supersedes(memory: AgentMemory, replaces: Sequence[int]) -> list[int]:
    """Check ``replaces`` before a memory is observed to replace them; return them. Only an
    empty list or tuple says "nothing": 0, False or "" are bad values (ADR 0171)."""
    if isinstance(replaces, list | tuple) and not replaces:
        return []
    return _checked(memory, replaces, "supersedes")


def check_valid_from(valid_from: object, replaces: Sequence[int]) -> datetime | None:
    """Return ``valid_from`` in UTC (the ledger keeps no offset of seconds), refusing one
    that is not a datetime with a time zone (QueryError): a naive time names no moment, and
    a replacement must say when the old memories stopped being true; given without memories
    it ``replaces``, it would say nothing."""
    if valid_from is None:
        return None
    if not isinstance(valid_from, datetime):
        raise QueryError(f"valid_from must be a datetime, got {type(valid_from).__name__}")
    if valid_from.tzinfo is None or valid_from.utcoffset() is None:
        raise QueryError(
            f"valid_from {valid_from.isoformat()} has no time zone: give one"
            " (e.g. datetime(..., tzinfo=timezone.utc)); nothing was appended"
        )
    if not replaces:
        raise QueryError(
            "valid_from says when what a memory replaces stopped being true: give it with"
            " supersedes"
        )
    try:
        return valid_from.astimezone(UTC)
    except OverflowError:
        raise QueryError(
            f"valid_from {valid_from.isoformat()} is out of range in UTC; nothing was appended"
        ) from None


def supersede(
    memory: AgentMemory,
    position: int,
    replaces: Sequence[int],
    *,
    valid_from: datetime | None = None,
) -> int:
    """Say that the memory at ``position`` replaces ``replaces``; return the event's position.

    ``valid_from`` is when the old ones stopped being true (default: the new memory's time).
    Everything is checked before anything is appended; a replacement already in force is
    refused (one revert undoes one supersession).
    """
    (new,) = _checked(memory, [position], "position")
    olds = _checked(memory, replaces, "replaces")
    if any(old >= new for old in olds):
        raise QueryError(f"a memory replaces only earlier ones: {olds} are not all before {new}")
    valid_from = check_valid_from(valid_from, olds)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        try:
            said = supersession.already(conn, new, olds)
        except sqlite3.Error:  # a store without the supersessions projection
            said = {}
        try:
            retired = salience.memory_facts(conn, [new])[new].archived
        except (sqlite3.Error, KeyError):  # a store without salience: nothing says archived
            retired = False
    if retired:
        raise QueryError(
            f"memory {new} is archived: no recall serves it, so it cannot stand for what it"
            " would replace; nothing was appended"
        )
    if said:
        raise QueryError(
            f"memory {new} already replaces {sorted(said)} (supersession event"
            f" {', '.join(str(e) for e in sorted(set(said.values())))}): a second one would"
            " take two reverts to undo; nothing was appended"
        )
    when = valid_from or memory.ledger.get([new])[0].at
    payload = MemorySuperseded(agent=memory.agent, position=new, replaces=olds, valid_from=when)
    event = NewEvent.of(payload, stream=f"agent:{memory.agent}", actor=memory.agent)
    return memory.ledger.append(event)[0]


class Finding(NamedTuple):
    """What detection decided: the memories replaced, the cosine, how and why; ``by`` the
    memory that replaces them where it is not the one observed (a memory told late of an
    earlier time, replaced by one observed before it; ADR 0116)."""

    replaces: list[int]
    similarity: float
    method: str  # "overlap": the offline rule; "model": a routed model judged
    reason: str
    by: int | None = None


def threshold(memory: AgentMemory, text: str = "", old: str | None = None) -> float:
    """Return the cosine, names taken out, from which the offline rule takes a candidate
    (``old``, when given) for the new memory ``text``: lower when ``text`` announces a
    change, lowest when the two give values of one format in place of each other, or of
    one kind a pattern tells exactly (an email, an IP or a web address; ADR 0119), or are
    one sentence with one value given anew (ADR 0143); none when the new one announces a
    change and names another holder of what the old one gives only the holder of (ADR 0150).
    """
    provider = memory.embedder.fingerprint.provider if memory.embedder is not None else ""
    if old is not None and announces(text) and holder_anew(text, old):
        return HOLDER
    if old is not None and (
        same_format(text, old) or same_kind(text, old, exact=True) or value_anew(text, old)
    ):
        # One sentence with one value given anew (ADR 0123): what is left once the subject
        # is taken out is mostly that value, so its cosine says only how alike the two
        # values are ("The site manager is Dave Morgan" -> "... Priti Patel"; ADR 0143).
        table = FORMATTED
    elif old is not None and announces(text) and same_relation(text, old):
        return RELATED
    elif old is not None and sold_thing(text) and owner_given(old):
        return RELATED  # a sale of what the old one gives the owner of (ADR 0187)
    else:
        table = ANNOUNCED if announces(text) else THRESHOLDS
    return table["hash" if provider == "hash" else "neural"]


def detect(memory: AgentMemory, position: int, text: str) -> Finding | None:
    """Return what the memory ``text`` (observed at ``position``) replaces, if anything.

    With a routed model (``memory.supersede_judge``), the model judges the most similar
    :data:`JUDGED` candidates; on a model error, or without one, the offline rule takes the
    most similar candidate whose cosine reaches :func:`threshold`. A note written as a label
    and its value is read as the sentence it stands for (:func:`.notes.as_stated`).
    """
    text = as_stated(text)
    found, after = search(memory, position, text)
    forward = _decide(memory, text, found)
    if forward is not None or not after:
        return forward
    # Told late of an earlier time, the new memory may be what a memory dated after it
    # replaced ("lives in Vancouver", told after "moved to Toronto" but dated before it): the
    # rule runs from the later one, with the new one its only candidate (ADR 0116).
    for later, later_text in after[:REVERSED]:
        back = _decide(memory, later_text, search(memory, later, later_text, position)[0])
        if back is not None and back.replaces == [position]:
            return back._replace(by=later)
    return None


#: How many memories dated after a memory told late are tried as what replaced it.
REVERSED = 3


def _decide(memory: AgentMemory, text: str, found: list[Candidate]) -> Finding | None:
    """Return what the rule (or a routed model) decides of ``found``, the candidates of the
    memory ``text``."""
    if not found:
        return None
    judge = memory.supersede_judge
    if judge is not None:
        try:
            return _judged(judge, text, found[:JUDGED])
        except CompletionError:
            pass  # the offline rule decides, as if no model were routed
    # The most alike first; one further down is taken only where its values' format lowers
    # its threshold below the cosines above it (ADR 0115). Nearness alone is no change: two
    # facts of one subject sharing no word beyond it are two attributes as often ("manages
    # the platform team", "'s daughter plays the violin"; "has 250 employees",
    # "headquarters are in Chicago"). One of the two must announce a change ("gave up the
    # harp for the saxophone"), the new one give a value of the old one's format or kind,
    # or they share a word beyond the subject ("lives in", "at Stripe"; ADR 0119). Unannounced,
    # a relation with two things of a kind, each named by its own modifier ("handles repairs
    # at the Heron Close flat", "... the Canal Wharf flat"), holds with both (ADR 0132).
    change = announced(text)
    best = next(
        (
            c for c in found
            # A return to work replaces the memory that told its subject out of action,
            # however little else the two say alike (ADR 0167).
            if (c.said >= threshold(memory, text, c.text) or back_in_action(text, c.text))
            and (change or not instances_apart(text, c.text))
            and (change or not measures_apart(text, c.text))  # 5.8%, £5.10 (ADR 0185)
            and (
                change or c.shared or announces(c.text) or value_anew(text, c.text)
                or same_format(text, c.text) or same_kind(text, c.text)
            )
            # Unannounced, the same numbers told in other words are a retelling, or another
            # event of that day and hour, no value given anew ("18 rooms for the wedding,
            # arriving 12 June" / "The wedding party checks in 12 June with 18 rooms";
            # "Costume fitting: 12 April, 11am" / "a wig fitting on 12 April at 11am"; ADR
            # 0172): one value said anew in the same words still is (ADR 0123).
            and (change or value_anew(text, c.text) or not _numbers_retold(text, c.text))
        ),
        None,
    )  # fmt: skip
    if best is None:
        return None
    return Finding([best.position], best.said, "overlap", _evidence(best))


def _numbers_retold(text: str, old: str) -> bool:
    """Say whether ``text`` gives numbers, and the same ones as ``old``, as often each."""
    return any(ch.isdigit() for ch in text) and same_numbers(text, old)


def _unquoted(found: Finding) -> str:
    """Return a reason for ``found`` that quotes no word of the memories (one is private, or
    another agent's: ADR 0168, 0171)."""
    how = "a model judged" if found.method == "model" else f"cosine {found.similarity:.2f}"
    return f"{how}; the words of a private memory, or of another agent's, are not quoted"


def _evidence(c: Candidate) -> str:
    shared = ", ".join(sorted(c.attribute)) or "no word beyond the subject"
    old, new = (", ".join(sorted(v)) for v in c.values)
    return (
        f"shares {shared}; {old} -> {new}; cosine {c.said:.2f} without the name"
        f" ({c.similarity:.2f} with it)"
    )


class Verdict(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """A model's judgement: which earlier memories (their numbers) the new one replaces."""

    replaces: list[int]
    reason: str = ""


JUDGE_SYSTEM = (
    "You keep an AI agent's memory current. Given a NEW memory and numbered EARLIER "
    "memories of the same agent, say which earlier ones the new one makes no longer true: "
    "the same attribute of the same person or thing, now with another value (a move, a "
    "new job, a changed number). Two facts about different attributes both stay true; two "
    "events that both happened (round 2 and round 26) both stay true. Answer with JSON: "
    '{"replaces": [<numbers>], "reason": "<one short sentence>"}; [] when none.'
)


def _judged(judge: Completer, text: str, found: Sequence[Candidate]) -> Finding | None:
    """Ask ``judge`` which of ``found`` the new memory replaces."""
    prompt = msgspec.json.encode(
        {"new": text[:2000], "earlier": {str(i + 1): c.text[:2000] for i, c in enumerate(found)}}
    ).decode()
    verdict = judge.complete(JUDGE_SYSTEM, prompt, Verdict)
    if any(not 1 <= n <= len(found) for n in verdict.replaces):
        raise CompletionFormatError(
            f"the model named candidates {verdict.replaces} of {len(found)}"
        )
    chosen = [found[n - 1] for n in dict.fromkeys(verdict.replaces)]
    if not chosen:
        return None
    similarity = max(c.said for c in chosen)
    reason = f"{judge.fingerprint}: {verdict.reason.strip()[:500]}".rstrip(": ")
    return Finding(sorted(c.position for c in chosen), similarity, "model", reason)


def routed_judge(routing: str | os.PathLike[str] | None) -> Completer | None:
    """Return the completer the routing file's ``[complete.supersede]`` route names, or None
    when it is offline (the default): then the offline rule decides alone."""
    path = os.path.expanduser(routing) if routing else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompletionConfigWarning)  # the learning step warns
        table = load_completion_routing(path)
    if isinstance(table.route("supersede"), OfflineRoute):
        return None
    return completer_for("supersede", table)


def after_observe(memory: AgentMemory, position: int, text: str) -> int | None:
    """Run :func:`propose_or_apply` for a memory just stored. A failure is a
    :class:`DetectionWarning`, not an error: the memory is stored, and an error would have
    each retry store it again (ADR 0168)."""
    try:
        return propose_or_apply(memory, position, text)
    except (EngramError, sqlite3.Error) as error:
        warnings.warn(
            DetectionWarning(
                f"memory stored at position {position}; finding what it replaces failed: {error}"
            ),
            stacklevel=3,
        )
        return None


def propose_or_apply(memory: AgentMemory, position: int, text: str) -> int | None:
    """Run detection for a memory just observed; append what the policy says. Return the
    appended event's position (None: nothing found, or the policy is off)."""
    if memory.supersede_policy == "off":
        return None
    found = detect(memory, position, text)
    if found is None:
        return None
    stream = f"agent:{memory.agent}"
    similarity = round(found.similarity, 6)
    new = position if found.by is None else found.by
    # A reason quotes both memories' words; where one is private, the event (which the log,
    # the hub and every reader of the ledger show) quotes neither (ADR 0168); nor where they
    # are two agents': the event is sealed under its own agent's key, so forgetting the
    # other would leave its words here (ADR 0171).
    joined = memory.ledger.get([new, *found.replaces])
    if any(e.payload.visibility != "public" or e.payload.agent != memory.agent for e in joined):
        found = found._replace(reason=_unquoted(found))
    if memory.supersede_policy == "apply":
        at = memory.ledger.get([new])[0].at
        applied = MemorySuperseded(
            agent=memory.agent, position=new, replaces=found.replaces, valid_from=at,
            method="detected", similarity=similarity, reason=found.reason,
        )  # fmt: skip
        return memory.ledger.append(NewEvent.of(applied, stream=stream, actor=memory.agent))[0]
    proposed = SupersessionProposed(
        agent=memory.agent, position=new, replaces=found.replaces, similarity=similarity,
        method=found.method, reason=found.reason,
    )  # fmt: skip
    return memory.ledger.append(NewEvent.of(proposed, stream=stream, actor=memory.agent))[0]


def review(
    memory: AgentMemory,
    proposal: int,
    decision: str,
    *,
    reviewer: str,
    note: str = "",
    own: bool = False,
) -> int:
    """Apply or refuse the pending proposal at ``proposal``; return the review's position.
    With ``own``, only a proposal about ``memory``'s agent's memories (an agent's handle
    decides about its own; a reviewer's tools, the CLI and the hub, about anyone's)."""
    check_count(proposal, "proposal", "a ledger position")
    _check_note(note)
    if decision not in ("applied", "refused"):
        raise QueryError(f"decision must be 'applied' or 'refused', got {decision!r}")
    _check_reviewer(reviewer)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = supersession.proposal(conn, proposal)
    if found is None or (own and found.agent != memory.agent):
        whose = f" about {memory.agent}'s memories" if own else ""
        raise UnknownMemoryError(f"position {proposal} holds no supersession proposal{whose}")
    if found.status != "pending":
        raise QueryError(f"the proposal at {proposal} is {found.status} already")
    verdict: Literal["applied", "refused"] = "applied" if decision == "applied" else "refused"
    payload = SupersessionReviewed(
        proposal=proposal, decision=verdict, reviewer=reviewer, note=note
    )
    event = NewEvent.of(payload, stream=f"agent:{found.agent}", actor=reviewer)
    return memory.ledger.append(event)[0]


def revert(
    memory: AgentMemory, event: int, *, reviewer: str, note: str = "", own: bool = False
) -> int:
    """Undo the supersession applied at ``event``, whoever's memories it joins (appended to
    their agent's stream; with ``own``, only one ``memory``'s agent made, or one replacing
    a memory of that agent's: ADR 0171); return the revert's position."""
    _check_reviewer(reviewer)
    check_count(event, "event", "a ledger position")
    _check_note(note)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = supersession.of_event(conn, event)
        live = supersession.applied(conn, event)
        # The agent whose memory another's replaced may undo it: detection reaches other
        # agents' public memories, and their owner has the say over them too (ADR 0171).
        mine = found is not None and bool(lexical.own_texts(conn, found.replaces, memory.agent))
    if found is None or not live or (own and found.agent != memory.agent and not mine):
        whose = f" of {memory.agent}'s memories" if own else ""
        raise UnknownMemoryError(f"position {event} holds no supersession in force{whose}")
    payload = SupersessionReverted(supersession=event, reviewer=reviewer, note=note)
    return memory.ledger.append(
        NewEvent.of(payload, stream=f"agent:{found.agent}", actor=reviewer)
    )[0]


#: The longest note a review or a revert keeps, on every surface (ADR 0160).
MAX_NOTE = 2000


def _check_note(note: object) -> None:
    """A review's or a revert's note: a string of at most :data:`MAX_NOTE` characters."""
    if not isinstance(note, str):
        raise QueryError(f"note must be a string, got {type(note).__name__}")
    if len(note) > MAX_NOTE:
        raise QueryError(
            f"note is {len(note):,} characters, at most {MAX_NOTE:,}; nothing was written"
        )


def _check_reviewer(reviewer: object) -> None:
    """A reviewer is the events' actor: a non-empty name of at most 512 characters."""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise QueryError("reviewer must be a non-empty name")
    check_name(reviewer, "reviewer")
    if len(reviewer) > 512 or reviewer != reviewer.strip():
        raise QueryError(
            f"reviewer must be a name of at most 512 characters without surrounding spaces, "
            f"got {len(reviewer)} characters"
        )
