"""Supersession: a memory replaces earlier ones, by an event, reviewable and reversible.

An agent says it (``observe(..., supersedes=[...])`` or :func:`supersede`), or detection
proposes it when a memory is observed (:func:`detect`): among the agent's earlier memories
that name the same subject (the first capitalised word, when few memories hold it) and
quote the same ids (an id names a thing: two incident reports with two ids are two
incidents), the most similar one whose content differs from the new memory's — not a copy:
each holds words the other lacks — is a candidate when the cosine of their vectors reaches
the embedder's threshold (:data:`THRESHOLDS`), measured on generated pairs (ADR 0052). The
policy says what a candidate becomes: ``apply`` appends ``memory.superseded`` at once,
``review`` appends ``supersession.proposed`` for a person to apply or refuse, ``off`` runs
no detection. Every supersession can be reverted (:func:`revert`); recall then serves the
old memory as current.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from engram.agents.errors import UnknownMemoryError
from engram.agents.matching import STOPWORDS, codes, stem
from engram.ledger import NewEvent
from engram.ledger.catalog import (
    MemorySuperseded,
    SupersessionProposed,
    SupersessionReverted,
    SupersessionReviewed,
)
from engram.projections import copies, lexical, semantic, supersession
from engram.projections.errors import ProjectionError, QueryError

if TYPE_CHECKING:
    from engram.agents.memory import AgentMemory

__all__ = ["POLICIES", "THRESHOLDS", "detect", "revert", "review", "supersede"]

POLICIES = ("apply", "review", "off")
#: The cosine from which two memories naming the same entity speak of the same attribute.
#: On generated pairs (a fact and its change, beside a fact of another attribute of the same
#: person) MiniLM puts 95% of the changes above 0.55 and 95% of the others below 0.64; the
#: hash embedder separates them far less (medians 0.39 and 0.28; 95% of the others below
#: 0.39, yet a few reach 0.48), so at 0.5 it finds about a quarter of the changes (ADR 0052).
THRESHOLDS = {"hash": 0.5, "neural": 0.6}
_NAME = re.compile(r"\b[A-Z][\w'-]*")
_CANDIDATES = 20
#: The IDF from which a capitalised word names something: ln(9), held by at most about a
#: tenth of the memories ("Deploy" opening every other report is a topic, not a name).
RARE = 2.2


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
    Everything is checked before anything is appended.
    """
    (new,) = _checked(memory, [position], "position")
    olds = _checked(memory, replaces, "replaces")
    if any(old >= new for old in olds):
        raise QueryError(f"a memory replaces only earlier ones: {olds} are not all before {new}")
    if valid_from is not None and not isinstance(valid_from, datetime):
        raise QueryError(f"valid_from must be a datetime, got {type(valid_from).__name__}")
    when = valid_from or memory.ledger.get([new])[0].at
    payload = MemorySuperseded(agent=memory.agent, position=new, replaces=olds, valid_from=when)
    event = NewEvent.of(payload, stream=f"agent:{memory.agent}", actor=memory.agent)
    return memory.ledger.append(event)[0]


def detect(memory: AgentMemory, position: int, text: str) -> tuple[list[int], float] | None:
    """Return the earlier memory ``text`` (observed at ``position``) replaces, if any.

    Candidates share an entity with the new memory; the most similar one whose content
    differs is returned with its cosine when that reaches the threshold.
    """
    if memory.embedder is None:
        return None
    memory.engine.wait_for(position)
    mine = _content(text)
    with memory.engine.read() as conn:
        try:
            subject = _subject(conn, text)
            if subject is None:
                return None
            hits = lexical.search(
                conn, subject, _CANDIDATES, agent=memory.agent, types=lexical.MEMORY_TYPES
            )
        except (ProjectionError, sqlite3.Error):
            return None
        ids = set(codes(text))
        held = [h for h in hits if h.agent == memory.agent and h.position < position]
        held = [h for h in held if _differs(mine, _content(h.text)) and set(codes(h.text)) == ids]
        if not held:
            return None
        stored = semantic.vectors_of(conn, [h.position for h in held])
        replaced = set(supersession.replacements(conn, [h.position for h in held]))
    vector = np.asarray(memory.embedder.embed([text])[0], dtype=np.float32)
    scored = [
        (float(np.frombuffer(stored[h.position], dtype=np.float32) @ vector), h.position)
        for h in held
        if h.position in stored and h.position not in replaced
    ]
    if not scored:
        return None
    similarity, best = max(scored)
    provider = memory.embedder.fingerprint.provider
    if similarity < THRESHOLDS["hash" if provider == "hash" else "neural"]:
        return None
    return [best], similarity


def _subject(conn: sqlite3.Connection, text: str) -> str | None:
    """Return the word naming what ``text`` speaks of: its first capitalised word (not a
    function word), when few memories hold it (an IDF of at least :data:`RARE`); else None."""
    named = [w for m in _NAME.findall(text) for w in lexical.tokens(m) if w not in STOPWORDS]
    if not named:
        return None
    weights = lexical.terms(conn, named[0], prune=False).weights
    return named[0] if weights.get(named[0], 0.0) >= RARE else None


def _content(text: str) -> frozenset[str]:
    return frozenset(
        stem(w) for w in lexical.tokens(text) if w not in STOPWORDS and w not in copies.FILLERS
    )


def _differs(new: frozenset[str], old: frozenset[str]) -> bool:
    """Say whether two memories say different things: each holds content the other lacks."""
    return bool(new - old) and bool(old - new)


def propose_or_apply(memory: AgentMemory, position: int, text: str) -> int | None:
    """Run detection for a memory just observed; append what the policy says. Return the
    appended event's position (None: nothing found, or the policy is off)."""
    if memory.supersede_policy == "off":
        return None
    found = detect(memory, position, text)
    if found is None:
        return None
    olds, similarity = found
    stream = f"agent:{memory.agent}"
    if memory.supersede_policy == "apply":
        at = memory.ledger.get([position])[0].at
        applied = MemorySuperseded(
            agent=memory.agent, position=position, replaces=olds, valid_from=at,
            method="detected", similarity=round(similarity, 6),
        )  # fmt: skip
        return memory.ledger.append(NewEvent.of(applied, stream=stream, actor=memory.agent))[0]
    proposed = SupersessionProposed(
        agent=memory.agent, position=position, replaces=olds, similarity=round(similarity, 6)
    )
    return memory.ledger.append(NewEvent.of(proposed, stream=stream, actor=memory.agent))[0]


def review(memory: AgentMemory, proposal: int, decision: str, *, reviewer: str) -> int:
    """Apply or refuse the pending proposal at ``proposal``; return the review's position."""
    if decision not in ("applied", "refused"):
        raise QueryError(f"decision must be 'applied' or 'refused', got {decision!r}")
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise QueryError("reviewer must be a non-empty name")
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        found = supersession.proposal(conn, proposal)
    if found is None:
        raise UnknownMemoryError(f"position {proposal} holds no supersession proposal")
    if found.status != "pending":
        raise QueryError(f"the proposal at {proposal} is {found.status} already")
    payload = SupersessionReviewed(proposal=proposal, decision=decision, reviewer=reviewer)  # type: ignore[arg-type]
    event = NewEvent.of(payload, stream=f"agent:{found.agent}", actor=reviewer)
    return memory.ledger.append(event)[0]


def revert(memory: AgentMemory, event: int, *, reviewer: str, note: str = "") -> int:
    """Undo the supersession applied at ``event``; return the revert's position."""
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise QueryError("reviewer must be a non-empty name")
    if not isinstance(event, int) or isinstance(event, bool) or event < 1:
        raise QueryError(f"event must be a ledger position, got {event!r}")
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        live = supersession.applied(conn, event)
    if not live:
        raise UnknownMemoryError(f"position {event} holds no supersession in force")
    payload = SupersessionReverted(supersession=event, reviewer=reviewer, note=note)
    return memory.ledger.append(
        NewEvent.of(payload, stream=f"agent:{memory.agent}", actor=reviewer)
    )[0]
