"""An agent's scars: record a failure or a victory with its lesson; archive scars.

A scar is one ``scar.recorded`` event on the agent's stream. Its importance (1..10) is the
one given, or scored once by the :class:`~engram.agents.importance.ImportanceScorer` when it
is recorded and stored in the event, so a rebuild never scores it again (DESIGN.md, rule 2).
The scars projection (:mod:`engram.projections.scars`) and both indexes take it in at the
next catch-up; ``AgentMemory.recall(query, scope="scars")`` (or ``victories``) serves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from engram.agents.errors import MemoryOwnerError, UnknownScarError
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ScarArchived, ScarKind, ScarRecorded, ScarSources, Visibility
from engram.projections import scars
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.renamed import renamed_keyword


class Scars:
    """One agent's scars over the shared ledger and the local projections."""

    def __init__(
        self,
        agent: str,
        ledger: Ledger,
        engine: ProjectionEngine,
        *,
        scorer: ImportanceScorer | None = None,
    ) -> None:
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
        self.agent = agent
        self.ledger = ledger
        self.engine = engine
        self.scorer = scorer or HeuristicScorer()

    @renamed_keyword("kind", "outcome")
    def record(
        self,
        outcome: ScarKind,
        what: str,
        lesson: str,
        *,
        importance: int | None = None,
        learnable: bool = True,
        visibility: Visibility = "public",
        sources: ScarSources | Mapping[str, Any] | None = None,
        tags: Sequence[str] = (),
        at: datetime | None = None,
    ) -> int:
        """Append a failure or a victory and its lesson; return its position.

        For a failure, ``lesson`` says what was added to avoid a repeat; for a victory, the
        pattern to reproduce. ``sources`` (event ids, task, file, agent) says where it came
        from. Without ``importance`` the scorer rates what and lesson once. Bad values are
        refused with an error naming the field; nothing is written.
        """
        if outcome not in ("failure", "victory"):
            raise QueryError(f"outcome must be 'failure' or 'victory', got {outcome!r}")
        for name, value in (("what", what), ("lesson", lesson)):
            if not isinstance(value, str) or not value.strip():
                raise QueryError(f"{name} must be a non-empty string, got {value!r}")
        if isinstance(tags, str):
            raise QueryError(f"tags must be a sequence of strings, got the string {tags!r}")
        if importance is None:
            importance = self.scorer.score(f"{what}\n{lesson}", outcome)
        payload = ScarRecorded(
            agent=self.agent,
            kind=outcome,
            what=what,
            lesson=lesson,
            importance=importance,
            learnable=learnable,
            visibility=visibility,
            sources=_sources(sources),
            tags=list(tags),
        )
        event = NewEvent(
            stream=f"agent:{self.agent}",
            kind="scar.recorded",
            payload=payload,
            actor=self.agent,
            at=at,
        )
        return self.ledger.append(event)[0]

    def archive(self, positions: Sequence[int], *, reason: str | None = None) -> int:
        """Archive scars by their positions; return the ``scar.archived`` position.

        Archived scars leave recall (a recall as of a time before the archival still sees
        them) and the scars list; the ledger keeps them. Everything is checked before
        anything is appended.

        Raises:
            QueryError: ``positions`` is empty, repeats one, or holds something other than
                ledger positions; ``reason`` is neither a string nor None.
            UnknownScarError: a position holds no ``scar.recorded`` event, or an archived
                scar.
            MemoryOwnerError: a position holds another agent's private scar.
        """
        if isinstance(positions, str | bytes) or not isinstance(positions, Sequence):
            raise QueryError(f"positions must be a sequence of ints, got {positions!r}")
        if not positions:
            raise QueryError("positions must not be empty")
        for p in positions:
            if not isinstance(p, int) or isinstance(p, bool) or not 1 <= p < 2**63:
                raise QueryError(f"positions must be ledger positions (ints >= 1), got {p!r}")
        if len(set(positions)) != len(positions):
            raise QueryError(f"positions must not repeat, got {list(positions)}")
        if reason is not None and not isinstance(reason, str):
            raise QueryError(f"reason must be a string or None, got {type(reason).__name__}")
        head = self.ledger.head()
        present = sorted(p for p in positions if p <= head)
        events = {e.position: e for e in self.ledger.get(present)} if present else {}
        for position in positions:
            event = events.get(position)
            if event is None or event.kind != "scar.recorded":
                found = "no event" if event is None else f"a {event.kind} event"
                raise UnknownScarError(f"position {position} holds {found}, not a scar")
            p = event.payload
            if p.visibility == "private" and p.agent != self.agent:
                raise MemoryOwnerError(
                    f"position {position} holds a private scar of agent {p.agent!r};"
                    f" agent {self.agent!r} cannot archive it"
                )
        self.engine.wait_for(head)
        with self.engine.read() as conn:
            rows = scars.by_positions(conn, positions)
        archived = sorted(p for p, row in rows.items() if row.archived_us is not None)
        if archived:
            raise UnknownScarError(f"position(s) {archived} hold scars archived already")
        payload = ScarArchived(positions=list(positions), reason=reason)
        archival = NewEvent(
            stream=f"agent:{self.agent}", kind="scar.archived", payload=payload, actor=self.agent
        )
        return self.ledger.append(archival)[0]


def _sources(sources: ScarSources | Mapping[str, Any] | None) -> ScarSources:
    """Return ``sources`` as ScarSources, naming the field that does not fit."""
    if sources is None:
        return ScarSources()
    if isinstance(sources, ScarSources):
        return sources
    if not isinstance(sources, Mapping):
        raise QueryError(f"sources must be a mapping or ScarSources, got {sources!r}")
    try:
        return msgspec.convert(dict(sources), ScarSources)
    except msgspec.ValidationError as exc:
        raise QueryError(f"sources: {exc}") from None
