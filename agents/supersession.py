"""Supersession: a memory replaces earlier ones, by an event, reviewable and reversible.

An agent says it (``observe(..., supersedes=[...])`` or :func:`supersede`), or detection
proposes it when a memory is observed (:func:`detect`): among the agent's earlier memories
that name the same subject (a name: :func:`_subject`), quote the same ids and numbered
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
import re
import sqlite3
import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import msgspec
import numpy as np

from engram.agents import statements
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
from engram.agents.matching import codes, stem
from engram.ledger import NewEvent
from engram.ledger.catalog import (
    MemorySuperseded,
    SupersessionProposed,
    SupersessionReverted,
    SupersessionReviewed,
)
from engram.projections import lexical, semantic, supersession
from engram.projections.counts import check_count
from engram.projections.errors import ProjectionError, QueryError

if TYPE_CHECKING:
    from engram.agents.memory import AgentMemory

__all__ = [
    "POLICIES",
    "THRESHOLDS",
    "Candidate",
    "Finding",
    "candidates",
    "detect",
    "revert",
    "review",
    "routed_judge",
    "supersede",
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
#: The threshold when the new memory says that something changed (:data:`CHANGE_WORDS`):
#: the 95th percentile of the others, not the 99th, since a sentence announcing a change
#: tells that an earlier one stopped being true (ADR 0075).
ANNOUNCED = {"hash": 0.13, "neural": 0.24}
#: The threshold when the two memories give values of one format in place of each other
#: (:func:`same_format`): a region code for a region code, a release for a release, a time
#: of day for a time of day. The format says which attribute the value is of, where the
#: words around it may not ("moved the shipper over to eu-west-1" of "lives in the
#: ap-south-1 region"); the cosine need only not say they speak of unrelated things
#: (ADR 0115).
FORMATTED = {"hash": 0.0, "neural": 0.1}
#: Words that announce a change of state, stemmed (:func:`stem`): "moved", "now", "no
#: longer", "switched", "instead", "new"...
CHANGE_WORDS = frozenset(
    stem(w)
    for w in (
        "now", "new", "moved", "relocated", "switched", "changed", "instead", "longer",
        "anymore", "became", "replaced", "transferred", "joined", "left", "started", "quit",
        "nowadays", "currently",
        # A state's value set anew (ADR 0106): what an agent's notes about things say.
        "upgraded", "downgraded", "rescheduled", "postponed", "renamed", "updated", "rotated",
        "migrated", "reassigned", "raised", "lowered", "increased", "decreased", "reduced",
        # A release changed: "rolled the gateway forward to 2.5.0", "bumped it to 3.2" (ADR 0115).
        "rolled", "bumped",
    )
)  # fmt: skip
#: How many candidates, most similar first, are compared without the name.
COMPARED = 5
#: How many candidates, most similar first, a routed model judges in one request.
JUDGED = 3
_CANDIDATES = 20


def _checked(memory: AgentMemory, positions: Sequence[int], what: str) -> list[int]:
    """Return ``positions`` if each holds a live memory of this agent; else raise."""
    return memory.own_memories(positions, "supersedes", f"{what}: ")


def check_supersedes(memory: AgentMemory, replaces: Sequence[int]) -> list[int]:
    """Check ``replaces`` before a memory is observed to replace them; return them."""
    return _checked(memory, replaces, "supersedes")


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
    if valid_from is not None and not isinstance(valid_from, datetime):
        raise QueryError(f"valid_from must be a datetime, got {type(valid_from).__name__}")
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        try:
            said = supersession.already(conn, new, olds)
        except sqlite3.Error:  # a store without the supersessions projection
            said = {}
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


class Candidate(NamedTuple):
    """An earlier memory a new one may replace, and the rule's evidence."""

    position: int
    text: str
    similarity: float  # cosine of the two memories' vectors
    said: float  # cosine of what they say of the subject: its name taken out of both
    attribute: frozenset[str]  # content words both hold beyond the names
    values: tuple[frozenset[str], frozenset[str]]  # (the old's own words, the new's own)


class Finding(NamedTuple):
    """What detection decided: the memories replaced, the cosine, how and why; ``by`` the
    memory that replaces them where it is not the one observed (a memory told late of an
    earlier time, replaced by one observed before it; ADR 0116)."""

    replaces: list[int]
    similarity: float
    method: str  # "overlap": the offline rule; "model": a routed model judged
    reason: str
    by: int | None = None


def candidates(memory: AgentMemory, position: int, text: str) -> list[Candidate]:
    """Return the earlier memories ``text`` (observed at ``position``) may replace, the most
    alike in what they say of the subject first (:func:`_candidates`)."""
    return _candidates(memory, position, text)[0]


def _candidates(
    memory: AgentMemory, position: int, text: str, only: int | None = None
) -> tuple[list[Candidate], list[tuple[int, str]]]:
    """Return the memories ``text`` (observed at ``position``) may replace, the most alike in
    what they say of the subject first, and those that passed every rule but their time: the
    ones dated after it, each with its text, the most alike first.

    Candidates are the agent's memories (``only`` that one, where given) naming the same
    subject, quoting the same ids and
    numbered occurrences (:func:`_labels`), not replaced already, dated no later than the new
    memory, whose content differs from the new memory's both ways; the :data:`COMPARED` most
    similar (cosine of the stored vectors) are compared again with the subject's name taken
    out of both texts, since the name alone makes any two sentences about one person alike
    (ADR 0075). A memory its speaker tells in the first person ("I moved to Berlin") also
    meets the first-person memories of the same speaker, compared without their first-person
    words (ADR 0116).
    """
    if memory.embedder is None or not statements.statement(text):
        return [], []
    memory.engine.wait_for(max(position, only or 0))
    said = _Said(text, announces(text), statements.state_values(text, now=True))
    with memory.engine.read() as conn:
        try:
            subject = statements.subject(conn, text)
            held = _of_subject(memory, conn, position, said, subject)
            # Spoken of in the first person, and of nothing the memories name alike ("We
            # moved the shipper to eu-west-1" speaks of the shipper), the subject is the
            # speaker, whose name the text does not say; like an unnamed thing's, its change
            # must be said (ADR 0116).
            person = statements.first_person(text)
            spoken = (
                _of_speaker(memory, conn, position, said, person)
                if person is not None and not held and (said.change or said.values)
                else []
            )
        except (ProjectionError, sqlite3.Error):
            return [], []
        kinds = {h.position: "person" for h in spoken} | {h.position: "subject" for h in held}
        pool = {h.position: h.text for h in (*spoken, *held) if only is None or h.position == only}
        if not pool:
            return [], []
        # A memory told late of an earlier time ("moved to Berlin", dated March, observed
        # after "lives in Paris", dated May) replaces nothing dated after it: what is true is
        # what was true last, by the time each memory is of, not the order they were told.
        told = {e.position: e.at for e in memory.ledger.get([position, *pool])}
        later = {p: t for p, t in pool.items() if told[p] > told[position]}
        pool = {p: t for p, t in pool.items() if told[p] <= told[position]}
        stored = semantic.vectors_of(conn, [*pool, *later])
        replaced = set(supersession.replacements(conn, [*pool, *later]))
    vector = np.asarray(memory.embedder.embed([text])[0], dtype=np.float32)

    def alike(texts: dict[int, str]) -> list[tuple[float, int, str]]:
        return sorted(
            (
                (float(np.frombuffer(stored[p], dtype=np.float32) @ vector), p, t)
                for p, t in texts.items()
                if p in stored and p not in replaced
            ),
            reverse=True,
        )[:COMPARED]

    near, after = alike(pool), [(p, t) for _, p, t in alike(later)]
    if not near:
        return [], after
    # What a statement says without its subject is in no ledger: kept by no cache.
    pairs = [
        side for _, old, old_text in near
        for side in _bare(text, old_text, kinds[old], subject, said.phrases.get(old, ()))
    ]  # fmt: skip
    bare = np.asarray(memory.embedder.embed_transient(pairs), dtype=np.float32)
    cosines = [float(bare[2 * i] @ bare[2 * i + 1]) for i in range(len(near))]
    mine, names = statements.content(text), statements.names(text)
    found = []
    for i, (similarity, old, old_text) in enumerate(near):
        theirs = statements.content(old_text)
        found.append(
            Candidate(
                old, old_text, similarity, cosines[i],
                (mine & theirs) - names - statements.names(old_text),
                (theirs - mine, mine - theirs),
            )
        )  # fmt: skip
    return sorted(found, key=lambda c: (-c.said, -c.similarity, -c.position)), after


class _Said:
    """What detection reads of the new memory once: its text, whether it announces a change,
    the state values it gives now, its content words, ids and labels; and, found on the
    way, the phrase it shares with each unnamed candidate."""

    def __init__(self, text: str, change: bool, values: frozenset[str]) -> None:
        self.text, self.change, self.values = text, change, values
        self.content = statements.content(text)
        self.ids, self.labels = set(codes(text)), statements.labels(text)
        # The ids before the word announcing the change name what changed ("Commit 355b349
        # bumped the logging library"), where the ones after it may be the values it gives
        # ("moved the gateway to port 9090"): an old memory without them is another thing.
        self.named = set(codes(text[: _announced_at(text)])) if change else set()
        self.phrases: dict[int, tuple[str, ...]] = {}

    def may_replace(self, position: int, old: _Held) -> bool:
        """Say whether ``old`` may be replaced as far as its shape (a statement), its content
        and its ids go: the subject, the owner and the time are weighed apart."""
        return (
            old.position != position and statements.statement(old.text)
            and statements.differs(self.content, statements.content(old.text), self.change)
            and statements.same_occurrences(
                self.ids, self.labels, old.text, self.change, self.values
            )
            and self.named <= set(codes(old.text))
        )  # fmt: skip


class _Held(Protocol):
    """An earlier memory as a search finds it."""

    @property
    def position(self) -> int: ...

    @property
    def agent(self) -> str: ...

    @property
    def text(self) -> str: ...


def _of_subject(
    memory: AgentMemory,
    conn: sqlite3.Connection,
    position: int,
    said: _Said,
    subject: str | None,
) -> list[_Held]:
    """Return the earlier memories that name the subject of the new one (a name, or an
    unnamed thing by the words both name it by) and may be replaced by it."""
    # Unnamed, the new memory must say that something changed, or give a state's value
    # anew ("is on release 2.5.0"; ADR 0109).
    if subject is None or (subject == "" and not (said.change or said.values)):
        return []
    # An index small enough to search whole is searched with every word: pruning leaves out
    # the words half its rows hold, which in a young store are the very words the new memory
    # shares with what it replaces (ADR 0112).
    hits = lexical.search(
        conn, subject or said.text, _CANDIDATES, agent=memory.agent,
        types=lexical.MEMORY_TYPES, prune=lexical.row_count(conn) > lexical.MAX_POSTINGS,
    )  # fmt: skip
    held: list[_Held] = [
        h for h in hits if h.agent == memory.agent and said.may_replace(position, h)
    ]
    if not subject:
        # Unnamed, what both speak of is the longest run of words they share (ADR 0106).
        said.phrases.update({h.position: statements.shared_phrase(said.text, h.text) for h in held})
    # Two things named by the same words with their own modifiers stay two things: the
    # nightly and the weekly backup job, the staging and the production API (ADR 0109).
    named = (stem(subject),) if subject else ()
    return [
        h for h in held
        if (subject or (
            said.phrases[h.position] and not statements.other_things(said.text, h.text)
        ))
        and not statements.modified_apart(
            said.text, h.text, named or said.phrases[h.position], heads=not subject
        )
    ]  # fmt: skip


def _bare(
    text: str, old: str, kind: str, subject: str | None, phrase: tuple[str, ...]
) -> tuple[str, str]:
    """Return the two texts whose cosine says what they say of their subject: without the
    speaker's first-person words, without the subject's name, or without the phrase two
    unnamed memories share."""
    if kind == "person":
        return statements.impersonal(text), statements.impersonal(old)
    if subject:
        name = statements.name_run(text, subject)
        return statements.without(text, name, subject), statements.without(old, name, subject)
    return statements.dropped(text, phrase), statements.dropped(old, phrase)


class _Spoken(NamedTuple):
    """An earlier memory as the first-person search finds it."""

    position: int
    agent: str
    text: str


def _of_speaker(
    memory: AgentMemory, conn: sqlite3.Connection, position: int, said: _Said, person: str
) -> list[_Held]:
    """Return the agent's earlier memories nearest in meaning to the one at ``position`` that
    speak of the same speaker in the first person (:func:`statements.first_person`) and may
    be replaced by it: their words for the subject are pronouns, which name nothing a word
    search could find (ADR 0116)."""
    searcher = memory.searcher
    vector = semantic.vectors_of(conn, [position]).get(position)
    if searcher is None or vector is None:
        return []
    searcher.sync(conn)
    found = searcher.search(
        np.frombuffer(vector, dtype=np.float32), _CANDIDATES, agent=memory.agent,
        types=lexical.MEMORY_TYPES,
    )  # fmt: skip
    texts = lexical.texts(conn, [h.position for h in found if h.position != position])
    owners = lexical.owners(conn, list(texts))
    spoken = [_Spoken(p, owners.get(p, ""), t) for p, t in sorted(texts.items())]
    return [
        h for h in spoken
        if h.agent == memory.agent and statements.first_person(h.text) == person
        and said.may_replace(position, h)
    ]  # fmt: skip


def threshold(memory: AgentMemory, text: str = "", old: str | None = None) -> float:
    """Return the cosine, names taken out, from which the offline rule takes a candidate
    (``old``, when given) for the new memory ``text``: lower when ``text`` announces a
    change, lowest when the two give values of one format in place of each other."""
    provider = memory.embedder.fingerprint.provider if memory.embedder is not None else ""
    if old is not None and same_format(text, old):
        table = FORMATTED
    else:
        table = ANNOUNCED if announces(text) else THRESHOLDS
    return table["hash" if provider == "hash" else "neural"]


def same_format(text: str, old: str) -> bool:
    """Say whether ``text`` gives one value in place of one of ``old``'s, written in the same
    structured format (:func:`value_format`): "eu-west-1" for "ap-south-1", "2.5.0" for
    "3.1.0", "02:30" for "05:15". Each quotes exactly one code the other does not: one value
    of one attribute replaced (ADR 0115)."""
    mine, theirs = set(codes(text)), set(codes(old))
    if len(mine - theirs) != 1 or len(theirs - mine) != 1:
        return False
    (given,), (gone,) = mine - theirs, theirs - mine
    shape = value_format(given)
    return shape is not None and shape == value_format(gone)


_SHAPE_RUN = re.compile(r"[^\W\d_]+|\d+")


def value_format(code: str) -> str | None:
    """Return the format ``code`` is written in, or None where it is not a value's notation.

    The format is the code's shape (each run of letters "a", of digits "9", separators kept:
    "eu-west-1" is "a-a-9") up to its second separator, so a release's pre-release tag is
    still a release ("4.0.0-rc1" and "2.4.1" are "9.9."). A value's notation has structure:
    two separators (a region, a release, a date, an address) or a clock's colon. A code with
    one separator is a word of prose as often ("15-minute", "13-14", an id like "HE-85"),
    and says nothing of which attribute it gives (ADR 0115)."""
    shape = _SHAPE_RUN.sub(lambda m: "9" if m.group()[0].isdigit() else "a", code)
    separators = [i for i, c in enumerate(shape) if c not in "a9"]
    if len(separators) < 2 and ":" not in shape:
        return None
    return shape if len(separators) < 2 else shape[: separators[1] + 1]


def announces(text: str) -> bool:
    """Say whether ``text`` announces a change of state (:data:`CHANGE_WORDS`)."""
    return any(stem(w) in CHANGE_WORDS for w in lexical.tokens(text))


_WORD = re.compile(r"[^\W_]+")


def _announced_at(text: str) -> int:
    """Return where the first word announcing a change starts in ``text`` (its length when
    none does)."""
    for found in _WORD.finditer(text):
        if stem(found.group().casefold()) in CHANGE_WORDS:
            return found.start()
    return len(text)


def detect(memory: AgentMemory, position: int, text: str) -> Finding | None:
    """Return what the memory ``text`` (observed at ``position``) replaces, if anything.

    With a routed model (``memory.supersede_judge``), the model judges the most similar
    :data:`JUDGED` candidates; on a model error, or without one, the offline rule takes the
    most similar candidate whose cosine reaches :func:`threshold`.
    """
    found, after = _candidates(memory, position, text)
    forward = _decide(memory, text, found)
    if forward is not None or not after:
        return forward
    # Told late of an earlier time, the new memory may be what a memory dated after it
    # replaced ("lives in Vancouver", told after "moved to Toronto" but dated before it): the
    # rule runs from the later one, with the new one its only candidate (ADR 0116).
    for later, later_text in after[:REVERSED]:
        back = _decide(memory, later_text, _candidates(memory, later, later_text, position)[0])
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
    # its threshold below the cosines above it (ADR 0115).
    best = next((c for c in found if c.said >= threshold(memory, text, c.text)), None)
    if best is None:
        return None
    return Finding([best.position], best.said, "overlap", _evidence(best))


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
    memory: AgentMemory, proposal: int, decision: str, *, reviewer: str, note: str = ""
) -> int:
    """Apply or refuse the pending proposal at ``proposal``; return the review's position."""
    check_count(proposal, "proposal", "a ledger position")
    if not isinstance(note, str):
        raise QueryError(f"note must be a string, got {type(note).__name__}")
    if decision not in ("applied", "refused"):
        raise QueryError(f"decision must be 'applied' or 'refused', got {decision!r}")
    _check_reviewer(reviewer)
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = supersession.proposal(conn, proposal)
    if found is None:
        raise UnknownMemoryError(f"position {proposal} holds no supersession proposal")
    if found.status != "pending":
        raise QueryError(f"the proposal at {proposal} is {found.status} already")
    verdict: Literal["applied", "refused"] = "applied" if decision == "applied" else "refused"
    payload = SupersessionReviewed(
        proposal=proposal, decision=verdict, reviewer=reviewer, note=note
    )
    event = NewEvent.of(payload, stream=f"agent:{found.agent}", actor=reviewer)
    return memory.ledger.append(event)[0]


def revert(memory: AgentMemory, event: int, *, reviewer: str, note: str = "") -> int:
    """Undo the supersession applied at ``event``, whoever's memories it joins (appended to
    their agent's stream); return the revert's position."""
    _check_reviewer(reviewer)
    check_count(event, "event", "a ledger position")
    if not isinstance(note, str):
        raise QueryError(f"note must be a string, got {type(note).__name__}")
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = supersession.of_event(conn, event)
        live = supersession.applied(conn, event)
    if found is None or not live:
        raise UnknownMemoryError(f"position {event} holds no supersession in force")
    payload = SupersessionReverted(supersession=event, reviewer=reviewer, note=note)
    return memory.ledger.append(
        NewEvent.of(payload, stream=f"agent:{found.agent}", actor=reviewer)
    )[0]


def _check_reviewer(reviewer: object) -> None:
    """A reviewer is the events' actor: a non-empty name of at most 512 characters."""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise QueryError("reviewer must be a non-empty name")
    if len(reviewer) > 512 or reviewer != reviewer.strip():
        raise QueryError(
            f"reviewer must be a name of at most 512 characters without surrounding spaces, "
            f"got {len(reviewer)} characters"
        )
