"""The memory stream: an agent observes into the ledger and recalls what matters.

``recall`` gathers candidates from the lexical (BM25) and the semantic (FAISS) index, fuses
the two rankings (reciprocal rank fusion, over-fetching), and scores them as Generative
Agents do: relevance, recency and importance, each min-max normalised over the candidates,
then weighted. Recency is the salience index's decay since the item was last touched
(observed or recalled), evaluated ``as_of``. An agent recalls its own items and public items,
never another agent's private ones, whichever path served them. A recall is appended as
``memory.recalled`` (unless ``record=False``), which the salience index replays as a bump.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

from engram.agents.errors import MemoryOwnerError, UnknownMemoryError
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.ledger import Event, Ledger, NewEvent
from engram.ledger.catalog import (
    MemoryArchived,
    MemoryObserved,
    MemoryRecalled,
    MemoryType,
    RecalledItem,
    Visibility,
)
from engram.projections import lexical
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import ProjectionError, QueryError
from engram.projections.queries import check_as_of
from engram.projections.salience import DEFAULT_RATE
from engram.projections.semantic import VectorSearcher

#: Component weights of the final score. Min-max normalisation stretches small recency and
#: importance differences among candidates to the full 0..1 range, so they get a light
#: touch: on LoCoMo these cost hybrid recall under 1% at @5/@10/@20, where heavier ones cost
#: more (ADR 0014); pass ``weights=`` to change them per recall.
DEFAULT_WEIGHTS: dict[str, float] = {"relevance": 1.0, "recency": 0.05, "importance": 0.02}
#: Reciprocal rank fusion's constant: score = sum over paths of weight / (RRF_K + rank).
#: 10, not the customary 60: on LoCoMo it separates the top ranks more and measured better
#: at @5, @10 and @20 (ADR 0014).
RRF_K = 10
FALLBACK_WINDOW = 5000
#: The candidate paths recall can use; both by default (hybrid recall).
PATHS = ("lexical", "semantic")
#: How much each path's reciprocal rank counts in the fusion. Neural vectors and BM25 are
#: peers (equal weights measured best on LoCoMo); hash vectors are a weak, lexical-like
#: signal that pulls hybrid recall below BM25 alone at any larger weight, so their path only
#: breaks ties and fills in where no word matches (ADR 0014).
DEFAULT_FUSION: dict[str, float] = {"lexical": 1.0, "semantic": 1.0}
FUSION_BY_PROVIDER: dict[str, dict[str, float]] = {"hash": {"lexical": 1.0, "semantic": 0.02}}


class Recalled(NamedTuple):
    """One recalled memory: the event behind it, its score and the score's components."""

    event: Event
    score: float
    relevance: float
    recency: float
    importance: float
    via: tuple[str, ...]  # which paths found it: "lexical", "semantic", "fallback"


class RecallResult(NamedTuple):
    """What a recall served, and how."""

    query: str
    as_of: datetime
    items: list[Recalled]
    fallback: str | None  # why a degraded path was used, if one was
    recorded_at: int | None  # the memory.recalled event's position (None: not recorded)


class AgentMemory:
    """One agent's memory stream over the shared ledger and the local projections."""

    def __init__(
        self,
        agent: str,
        ledger: Ledger,
        engine: ProjectionEngine,
        *,
        embedder: Embedder | None = None,
        searcher: VectorSearcher | None = None,
        scorer: ImportanceScorer | None = None,
        rate: float = DEFAULT_RATE,
        fusion: Mapping[str, float] | None = None,
    ) -> None:
        """``fusion`` weighs each path's reciprocal rank (default: by the embedder's
        provider, :data:`FUSION_BY_PROVIDER`, else :data:`DEFAULT_FUSION`)."""
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
        if fusion is None:
            provider = embedder.fingerprint.provider if embedder is not None else ""
            fusion = FUSION_BY_PROVIDER.get(provider, DEFAULT_FUSION)
        self.fusion = _checked(fusion, DEFAULT_FUSION, "fusion")
        self.agent = agent
        self.ledger = ledger
        self.engine = engine
        self.embedder = embedder
        self.searcher = searcher
        self.scorer = scorer or HeuristicScorer()
        self.rate = rate

    def observe(
        self,
        text: str,
        *,
        type: MemoryType = "observation",
        importance: int | None = None,
        visibility: Visibility = "public",
        source: str | None = None,
        tags: Sequence[str] = (),
        at: datetime | None = None,
    ) -> int:
        """Append an observation, plan or thought; return its position.

        Without ``importance`` the scorer rates it, once; the rating is stored in the event.
        Bad values (empty text, importance outside 1..10, unknown type or visibility) are
        refused by the ledger with an error naming the field; nothing is written.
        """
        if importance is None and isinstance(text, str) and text:
            importance = self.scorer.score(text, type)
        payload = MemoryObserved(
            agent=self.agent,
            text=text,
            type=type,
            importance=importance,
            visibility=visibility,
            source=source,
            tags=list(tags),
        )
        event = NewEvent(
            stream=f"agent:{self.agent}",
            kind="memory.observed",
            payload=payload,
            actor=self.agent,
            at=at,
        )
        return self.ledger.append(event)[0]

    def archive(self, positions: Sequence[int], *, reason: str | None = None) -> int:
        """Archive some of this agent's memories; return the ``memory.archived`` position.

        Archived memories leave every index: no recall path serves them again. Everything is
        checked before anything is appended; on any error nothing is written.

        Raises:
            QueryError: ``positions`` is empty, repeats one, or holds something other than
                ledger positions (ints >= 1); ``reason`` is neither a string nor None.
            UnknownMemoryError: a position holds no ``memory.observed`` event, or an
                archived one.
            MemoryOwnerError: a position holds another agent's memory.
        """
        wanted = _positions(positions)
        if reason is not None and not isinstance(reason, str):
            raise QueryError(f"reason must be a string or None, got {type(reason).__name__}")
        events = self._events(sorted(wanted))
        for position in wanted:
            event = events.get(position)
            if event is None or event.kind != "memory.observed":
                found = "no event" if event is None else f"a {event.kind} event"
                raise UnknownMemoryError(f"position {position} holds {found}, not a memory")
            if event.payload.agent != self.agent:
                raise MemoryOwnerError(
                    f"position {position} holds a memory of agent {event.payload.agent!r};"
                    f" agent {self.agent!r} archives only its own"
                )
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            archived = _archived(conn, wanted)
        if archived:
            raise UnknownMemoryError(f"position(s) {archived} hold memories archived already")
        payload = MemoryArchived(agent=self.agent, positions=wanted, reason=reason)
        archival = NewEvent(
            stream=f"agent:{self.agent}", kind="memory.archived", payload=payload, actor=self.agent
        )
        return self.ledger.append(archival)[0]

    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        as_of: datetime | None = None,
        types: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None,
        record: bool = True,
        paths: Sequence[str] = PATHS,
    ) -> RecallResult:
        """Return the ``k`` memories that matter most for ``query`` as of a time.

        ``paths`` narrows the candidates to one index (``("lexical",)`` or
        ``("semantic",)``); the keyword fallback serves only when every path asked for is
        unavailable, and the result says why.
        """
        if not isinstance(query, str) or not query.strip():
            raise QueryError("query must be a non-empty string")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
            raise QueryError(f"k must be an int in 1..1000, got {k!r}")
        when = as_of or datetime.now(UTC)
        at_us = check_as_of(when)
        w = _weights(weights)
        use = _paths(paths)
        self.engine.wait_for(self.ledger.head())
        fetch = max(3 * k, 30)
        with self.engine.read() as conn:
            ranked, fallback = self._candidates(conn, query, fetch, types, use)
            if not ranked:
                items: list[Recalled] = []
            else:
                items = self._score(conn, ranked, at_us, w, k)
        recorded = None
        if record and items:
            payload = MemoryRecalled(
                agent=self.agent,
                query=query,
                as_of=when,
                items=[RecalledItem(position=r.event.position, score=r.score) for r in items],
            )
            recorded = self.ledger.append(
                NewEvent(
                    stream=f"agent:{self.agent}",
                    kind="memory.recalled",
                    payload=payload,
                    actor=self.agent,
                )
            )[0]
        return RecallResult(query, when, items, fallback, recorded)

    # -- candidates ------------------------------------------------------------------------

    def _candidates(
        self,
        conn: sqlite3.Connection,
        query: str,
        fetch: int,
        types: Sequence[str] | None,
        paths: frozenset[str],
    ) -> tuple[dict[int, tuple[float, tuple[str, ...]]], str | None]:
        lists: dict[str, list[int]] = {}
        problems: list[str] = []
        if "lexical" in paths:
            try:
                hits = lexical.search(conn, query, fetch, agent=self.agent, types=types)
                lists["lexical"] = [h.position for h in hits]
            except (ProjectionError, sqlite3.Error) as exc:
                problems.append(f"lexical index unavailable ({exc})")
        if "semantic" not in paths:
            pass
        elif self.embedder is not None and self.searcher is not None:
            try:
                self.searcher.sync(conn)
                vector = self.embedder.embed([query])[0]
                found = self.searcher.search(vector, fetch, agent=self.agent, types=types)
                lists["semantic"] = [h.position for h in found]
            except Exception as exc:  # a model or index failure degrades, never fails recall
                problems.append(f"semantic index unavailable ({type(exc).__name__}: {exc})")
        else:
            problems.append("no embedder configured")
        if not lists:
            return self._fallback(query, fetch, types), "; ".join(problems) + (
                ": keyword overlap on recent items"
            )
        fused: dict[int, tuple[float, tuple[str, ...]]] = {}
        for path, positions in lists.items():
            for rank, position in enumerate(positions, start=1):
                score, via = fused.get(position, (0.0, ()))
                fused[position] = (score + self.fusion[path] / (RRF_K + rank), (*via, path))
        return fused, None

    def _fallback(
        self, query: str, fetch: int, types: Sequence[str] | None
    ) -> dict[int, tuple[float, tuple[str, ...]]]:
        words = set(lexical.tokens(query))
        head = self.ledger.head()
        scored: list[tuple[float, int]] = []
        archived: set[int] = set()
        window = self.ledger.read(
            max(head - FALLBACK_WINDOW, 0), kinds=["memory.observed", "memory.archived"]
        )
        for event in window:
            p = event.payload
            if event.kind == "memory.archived":
                # As the projections read it: an archive reaches the observations before it.
                archived.update(position for position in p.positions if position < event.position)
                continue
            if p.visibility != "public" and p.agent != self.agent:
                continue
            if types and p.type not in types:
                continue
            overlap = len(words & set(lexical.tokens(p.text)))
            if overlap:
                scored.append((overlap / math.sqrt(len(words) or 1), event.position))
        scored = [s for s in scored if s[1] not in archived]
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return {position: (score, ("fallback",)) for score, position in scored[:fetch]}

    # -- scoring ---------------------------------------------------------------------------

    def _score(
        self,
        conn: sqlite3.Connection,
        ranked: dict[int, tuple[float, tuple[str, ...]]],
        at_us: int,
        w: Mapping[str, float],
        k: int,
    ) -> list[Recalled]:
        positions = sorted(ranked)
        facts: dict[int, tuple[int, int | None]] = {}
        for start in range(0, len(positions), 500):
            chunk = positions[start : start + 500]
            for position, updated, importance in conn.execute(
                "SELECT position, updated_us, importance FROM salience WHERE item_kind ="
                f" 'memory' AND position IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                facts[position] = (updated, importance)
        relevance = {p: ranked[p][0] for p in positions}
        recency = {}
        importance = {}
        for p in positions:
            updated, imp = facts.get(p, (at_us, None))
            hours = max(at_us - updated, 0) / 3_600_000_000
            recency[p] = self.rate**hours
            importance[p] = float(imp) if imp is not None else 5.0
        rel_n, rec_n, imp_n = _minmax(relevance), _minmax(recency), _minmax(importance)
        total = {
            p: w["relevance"] * rel_n[p] + w["recency"] * rec_n[p] + w["importance"] * imp_n[p]
            for p in positions
        }
        order = sorted(positions, key=lambda p: (-total[p], -relevance[p], -p))
        events = self._events(order[:k])
        return [
            Recalled(events[p], total[p], rel_n[p], rec_n[p], imp_n[p], ranked[p][1])
            for p in order[:k]
            if p in events
        ]

    def _events(self, positions: list[int]) -> dict[int, Event]:
        found: dict[int, Event] = {}
        for position in positions:
            for event in self.ledger.read(position - 1, limit=1):
                found[event.position] = event
        return found


def _weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    return _checked(weights or {}, DEFAULT_WEIGHTS, "weights")


def _checked(
    given: Mapping[str, float], defaults: Mapping[str, float], what: str
) -> dict[str, float]:
    """Return ``defaults`` overridden by ``given``: known names, numbers >= 0."""
    if not isinstance(given, Mapping):
        raise QueryError(f"{what} must be a mapping of name to number, got {given!r}")
    unknown = set(given) - set(defaults)
    if unknown:
        raise QueryError(f"{what}: unknown name(s) {sorted(unknown)}; known: {list(defaults)}")
    merged = dict(defaults)
    for name, value in given.items():
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not 0 <= value < math.inf
        ):
            raise QueryError(f"{what}[{name!r}] must be a number >= 0, got {value!r}")
        merged[name] = float(value)
    return merged


def _paths(paths: Sequence[str]) -> frozenset[str]:
    if isinstance(paths, str) or not isinstance(paths, Sequence) or not paths:
        raise QueryError(f"paths must be a non-empty sequence drawn from {PATHS}, got {paths!r}")
    unknown = set(paths) - set(PATHS)
    if unknown:
        raise QueryError(f"paths: unknown path(s) {sorted(unknown)}; known: {list(PATHS)}")
    return frozenset(paths)


def _positions(positions: Sequence[int]) -> list[int]:
    if isinstance(positions, str | bytes) or not isinstance(positions, Sequence) or not positions:
        raise QueryError(f"positions must be a non-empty sequence of ints, got {positions!r}")
    for position in positions:
        if not isinstance(position, int) or isinstance(position, bool) or not 1 <= position < 2**63:
            raise QueryError(f"positions must be ledger positions (ints >= 1), got {position!r}")
    if len(set(positions)) != len(positions):
        raise QueryError(f"positions must not repeat, got {list(positions)}")
    return list(positions)


def _archived(conn: sqlite3.Connection, positions: list[int]) -> list[int]:
    found: list[int] = []
    for start in range(0, len(positions), 500):
        chunk = positions[start : start + 500]
        found += [
            row[0]
            for row in conn.execute(
                "SELECT position FROM salience WHERE item_kind = 'memory' AND archived = 1"
                f" AND position IN ({','.join('?' * len(chunk))})",
                chunk,
            )
        ]
    return sorted(found)


def _minmax(values: Mapping[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {p: (v - low) / span if span > 0 else 1.0 for p, v in values.items()}
