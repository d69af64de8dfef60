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

from agents.importance import HeuristicScorer, ImportanceScorer
from ledger import Event, Ledger, NewEvent
from ledger.catalog import MemoryObserved, MemoryRecalled, MemoryType, RecalledItem, Visibility
from projections import lexical
from projections.embedder import Embedder
from projections.engine import ProjectionEngine
from projections.errors import ProjectionError, QueryError
from projections.queries import check_as_of
from projections.salience import DEFAULT_RATE
from projections.semantic import VectorSearcher

#: Component weights of the final score. Min-max normalisation stretches small recency and
#: importance differences among candidates to the full 0..1 range, so they get a light touch
#: until the LoCoMo benchmark settles them; pass ``weights=`` to change them per recall.
DEFAULT_WEIGHTS: dict[str, float] = {"relevance": 1.0, "recency": 0.05, "importance": 0.05}
RRF_K = 60
FALLBACK_WINDOW = 5000


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
    ) -> None:
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
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

    def recall(
        self,
        query: str,
        k: int = 10,
        *,
        as_of: datetime | None = None,
        types: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None,
        record: bool = True,
    ) -> RecallResult:
        """Return the ``k`` memories that matter most for ``query`` as of a time."""
        if not isinstance(query, str) or not query.strip():
            raise QueryError("query must be a non-empty string")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
            raise QueryError(f"k must be an int in 1..1000, got {k!r}")
        when = as_of or datetime.now(UTC)
        at_us = check_as_of(when)
        w = _weights(weights)
        self.engine.wait_for(self.ledger.head())
        fetch = max(3 * k, 30)
        with self.engine.read() as conn:
            ranked, fallback = self._candidates(conn, query, fetch, types)
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
        self, conn: sqlite3.Connection, query: str, fetch: int, types: Sequence[str] | None
    ) -> tuple[dict[int, tuple[float, tuple[str, ...]]], str | None]:
        lists: dict[str, list[int]] = {}
        problems: list[str] = []
        try:
            hits = lexical.search(conn, query, fetch, agent=self.agent, types=types)
            lists["lexical"] = [h.position for h in hits]
        except (ProjectionError, sqlite3.Error) as exc:
            problems.append(f"lexical index unavailable ({exc})")
        if self.embedder is not None and self.searcher is not None:
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
                fused[position] = (score + 1.0 / (RRF_K + rank), (*via, path))
        return fused, None

    def _fallback(
        self, query: str, fetch: int, types: Sequence[str] | None
    ) -> dict[int, tuple[float, tuple[str, ...]]]:
        words = set(lexical.tokens(query))
        head = self.ledger.head()
        scored: list[tuple[float, int]] = []
        for event in self.ledger.read(max(head - FALLBACK_WINDOW, 0), kinds=["memory.observed"]):
            p = event.payload
            if p.visibility != "public" and p.agent != self.agent:
                continue
            if types and p.type not in types:
                continue
            overlap = len(words & set(lexical.tokens(p.text)))
            if overlap:
                scored.append((overlap / math.sqrt(len(words) or 1), event.position))
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
        order = sorted(positions, key=lambda p: (-total[p], -relevance[p], p))
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
    merged = dict(DEFAULT_WEIGHTS)
    if weights is not None:
        unknown = set(weights) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise QueryError(f"weights: unknown component(s) {sorted(unknown)}")
        for name, value in weights.items():
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise QueryError(f"weights[{name!r}] must be a number >= 0, got {value!r}")
            merged[name] = float(value)
    return merged


def _minmax(values: Mapping[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {p: (v - low) / span if span > 0 else 1.0 for p, v in values.items()}
