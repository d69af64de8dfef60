"""The memory stream: an agent observes into the ledger and recalls what matters.

``recall`` gathers candidates from the lexical (BM25) and the semantic (FAISS) index, fuses
the two rankings (reciprocal rank fusion, over-fetching), lets the strongest candidates cue
the memories told next to them in their episode (bloom, :mod:`engram.agents.contiguity`,
ADR 0025), and scores them as Generative
Agents do: relevance, recency and importance, each min-max normalised over the candidates,
then weighted. Recency is the salience index's decay since the item was last touched
(observed or recalled), evaluated ``as_of``. An agent recalls its own items and public items,
never another agent's private ones, whichever path served them. A recall is appended as
``memory.recalled`` (unless ``record=False``), which the salience index replays as a bump.

What the numbers mean (ADR 0019): ``score`` and ``relevance`` rank the items of one result
and are relative to it (min-max normalised); ``bm25`` and ``cosine`` are each path's raw
score; ``match`` (0..1) says how well the item matches the query on a scale that does not
depend on the other results, and ``min_score`` is a floor on it, so a query that matches
nothing returns nothing. ``as_of=T`` recalls what the store knew at ``T``: memories observed
after ``T`` are left out, recalls after ``T`` do not count, archivals after ``T`` do not hide.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from engram.agents import contiguity
from engram.agents.arguments import checked_numbers, checked_paths, checked_positions
from engram.agents.errors import MemoryOwnerError, UnknownMemoryError
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.agents.matching import Candidate, Matching, work_out
from engram.ledger import Event, Ledger, NewEvent
from engram.ledger.catalog import (
    MemoryArchived,
    MemoryObserved,
    MemoryRecalled,
    MemoryType,
    RecalledItem,
    Visibility,
)
from engram.projections import lexical, queries, semantic
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import ProjectionError, QueryError
from engram.projections.queries import check_as_of
from engram.projections.salience import DEFAULT_RATE
from engram.projections.semantic import VectorHit, VectorSearcher

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
#: The default floor on ``match``: none. On LoCoMo's 2,760 turns floors up to 0.05 removed no
#: evidence, but on a 30-turn conversation 0.05 cut BM25's recall@10 from 0.875 to 0.5: a
#: query word no item holds ("name" against "named") weighs most in a small corpus (ADR 0019).
#: Pass ``min_score=`` (0.05 sends nonsense away with hash vectors) for "nothing relevant".
DEFAULT_MIN_SCORE = 0.0


class Recalled(NamedTuple):
    """One recalled memory: the event behind it, its score and the score's components.

    ``score``, ``relevance``, ``recency`` and ``importance`` are normalised over the result's
    candidates: they order one result and mean nothing across queries. ``fused`` is the raw
    reciprocal-rank sum; ``bm25`` (FTS5's BM25, higher is better) and ``cosine`` (the query
    vector's cosine similarity) are the paths' raw scores, None where a path did not find
    the item (``cosine`` is filled in from the stored vector when only BM25 found it);
    ``match`` (0..1) says how well the item matches the query whatever the other results: the
    mean of each path's absolute match weighted as the fusion weighs the paths — for BM25
    the IDF-weighted share of the query's words the item holds, for vectors the cosine
    clipped to 0..1 — or, from the keyword fallback, the share of the query's words it holds.
    """

    event: Event
    score: float
    relevance: float
    recency: float
    importance: float
    via: tuple[str, ...]  # which paths found it: "lexical", "semantic", "fallback"
    fused: float = 0.0
    bm25: float | None = None
    cosine: float | None = None
    match: float = 0.0


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
        bloom: bool = True,
        prune: bool | str = True,
        rrf_k: int = RRF_K,
    ) -> None:
        """``fusion`` weighs each path's reciprocal rank (default: by the embedder's
        provider, :data:`FUSION_BY_PROVIDER`, else :data:`DEFAULT_FUSION`); ``bloom`` lets
        the strongest candidates cue their episode neighbours (:mod:`engram.agents.contiguity`);
        ``prune`` searches the query's words within the postings budget (:func:`lexical.terms`;
        ``"share"``: ADR 0026's rule);
        ``rrf_k`` is the fusion's rank constant (:data:`RRF_K`; 60 is textbook RRF)."""
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
        if fusion is None:
            provider = embedder.fingerprint.provider if embedder is not None else ""
            fusion = FUSION_BY_PROVIDER.get(provider, DEFAULT_FUSION)
        self.fusion = checked_numbers(fusion, DEFAULT_FUSION, "fusion")
        if not isinstance(rrf_k, int) or isinstance(rrf_k, bool) or not 0 <= rrf_k <= 10_000:
            raise QueryError(f"rrf_k must be an int in 0..10000, got {rrf_k!r}")
        self.rrf_k = rrf_k
        self.agent = agent
        self.ledger = ledger
        self.engine = engine
        self.embedder = embedder
        self.searcher = searcher
        self.scorer = scorer or HeuristicScorer()
        self.rate = rate
        self.bloom, self.prune = bloom, prune

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

        Archived memories leave every recall path: only a recall as of a time before the
        archival serves them again. Everything is checked before anything is appended; on
        any error nothing is written.

        Raises:
            QueryError: ``positions`` is empty, repeats one, or holds something other than
                ledger positions (ints >= 1); ``reason`` is neither a string nor None.
            UnknownMemoryError: a position holds no ``memory.observed`` event, or an
                archived one.
            MemoryOwnerError: a position holds another agent's memory.
        """
        wanted = checked_positions(positions)
        if reason is not None and not isinstance(reason, str):
            raise QueryError(f"reason must be a string or None, got {type(reason).__name__}")
        head = self.ledger.head()
        present = sorted(p for p in wanted if p <= head)
        events = {e.position: e for e in self.ledger.get(present)} if present else {}
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
            facts = queries.memory_facts(conn, wanted)
        archived = sorted(p for p, f in facts.items() if f.archived)
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
        min_score: float = DEFAULT_MIN_SCORE,
        scope: str = "memories",
    ) -> RecallResult:
        """Return the ``k`` memories (or other items: ``scope``, agents.scopes) for ``query``.

        ``as_of`` (default: now, with everything the store holds) recalls what the store knew
        then: no memory observed after it, no recall after it counted, no archival after it
        applied. ``min_score`` (0..1) drops items whose ``match`` is below it, before the
        ``k`` best are taken: fewer than ``k``, or none, may come back.

        ``paths`` narrows the candidates to one index (``("lexical",)`` or ``("semantic",)``);
        the keyword fallback serves only when every path asked for is unavailable, and the
        result says why. ``scope``: memories, scars, victories, reflections or all.
        """
        if not isinstance(query, str) or not query.strip():
            raise QueryError("query must be a non-empty string")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
            raise QueryError(f"k must be an int in 1..1000, got {k!r}")
        if (
            not isinstance(min_score, int | float)
            or isinstance(min_score, bool)
            or not 0 <= min_score <= 1
        ):
            raise QueryError(f"min_score must be a number in 0..1, got {min_score!r}")
        if scope != "memories":  # imported here: scopes builds on this module
            from engram.agents.scopes import recall

            return recall(
                self, query, k, scope, as_of=as_of, record=record, floor=min_score, types=types
            )
        when = as_of or datetime.now(UTC)
        at_us = check_as_of(when)
        types = lexical.memory_types(types)  # scars and reflections share the indexes
        w = _weights(weights)
        use = checked_paths(paths, PATHS)
        self.engine.wait_for(self.ledger.head())
        fetch = max(3 * k, 30)
        cut = None if as_of is None else at_us
        with self.engine.read() as conn:
            known_at = (
                nullcontext(conn)
                if as_of is None
                else queries.known_at(
                    conn, self.ledger, when, rate=self.rate, projections=("salience",)
                )
            )
            with known_at as known:
                ranked, fallback, matching = self._candidates(
                    conn, known, query, fetch, types, use, cut
                )
                items = (
                    self._score(known, ranked, matching, at_us, w, k, min_score) if ranked else []
                )
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
        known: sqlite3.Connection,
        query: str,
        fetch: int,
        types: Sequence[str] | None,
        paths: frozenset[str],
        cut: int | None,
    ) -> tuple[dict[int, Candidate], str | None, Matching | None]:
        """Gather each path's ranked hits and fuse them; ``known`` holds salience as of the cut.

        Returns the candidates, why the fallback served (None: it did not), and what working
        out their ``match`` needs (None: the fallback set it)."""
        found: dict[str, list[tuple[int, float]]] = {}  # path: (position, raw score), ranked
        problems: list[str] = []
        matching = Matching(conn, self.fusion)
        if "lexical" in paths:
            try:
                terms = lexical.terms(conn, query, prune=self.prune)
                hits = lexical.search(
                    conn,
                    query,
                    fetch,
                    agent=self.agent,
                    types=types,
                    as_of_us=cut,
                    query_terms=terms,
                    match=False,
                )
                found["lexical"] = [(h.position, h.score) for h in hits]
                matching.weights = terms.weights
                matching.texts = {h.position: h.text for h in hits}
            except (ProjectionError, sqlite3.Error) as exc:
                problems.append(f"lexical index unavailable ({exc})")
        if "semantic" in paths and (self.embedder is None or self.searcher is None):
            problems.append("no embedder configured")
        elif "semantic" in paths:
            try:
                vector, near = self._semantic(conn, known, query, fetch, types, cut)
                found["semantic"] = [(h.position, h.score) for h in near]
                matching.vector = vector
            except Exception as exc:  # a model or index failure degrades, never fails recall
                problems.append(f"semantic index unavailable ({type(exc).__name__}: {exc})")
        if not found:
            why = "; ".join(problems) + ": keyword overlap on recent items"
            return self._fallback(query, fetch, types, cut), why, None
        fused: dict[int, Candidate] = {}
        for path, ranked in found.items():
            for rank, (position, raw) in enumerate(ranked, start=1):
                c = fused.setdefault(position, Candidate())
                c.fused += self.fusion[path] / (self.rrf_k + rank)
                c.via = (*c.via, path)
                if path == "lexical":
                    c.bm25 = raw
                else:
                    c.cosine = raw
        if self.bloom:
            self._bloom(conn, fused, types, cut)
        return fused, None, matching

    def _bloom(
        self,
        conn: sqlite3.Connection,
        fused: dict[int, Candidate],
        types: Sequence[str] | None,
        cut: int | None,
    ) -> None:
        """Let the strongest candidates cue their episode neighbours (agents.contiguity)."""
        scores = {p: c.fused for p, c in fused.items()}
        try:
            around = lexical.neighbours(
                conn,
                contiguity.seeds(scores),
                contiguity.RADIUS,
                agent=self.agent,
                gap_us=contiguity.EPISODE_GAP_US,
                types=types,
                as_of_us=cut,
            )
        except (ProjectionError, sqlite3.Error):
            return  # without the lexical index there is no episode to walk: recall as fused
        for position, score in contiguity.bloom(scores, around).items():
            c = fused.setdefault(position, Candidate())
            if not c.via:
                c.via = ("bloom",)
            c.fused = score

    def _semantic(
        self,
        conn: sqlite3.Connection,
        known: sqlite3.Connection,
        query: str,
        fetch: int,
        types: Sequence[str] | None,
        cut: int | None,
    ) -> tuple[npt.NDArray[np.float32], list[VectorHit]]:
        """Return the query vector and the nearest vectors; as of a cut, those known then."""
        embedder, searcher = self.embedder, self.searcher
        if embedder is None or searcher is None:
            raise QueryError("no embedder configured")
        searcher.sync(conn)
        vector = np.ascontiguousarray(embedder.embed([query])[0], dtype=np.float32)
        if cut is None or known is conn:  # nothing changed since the cut: the index holds it
            return vector, searcher.search(vector, fetch, agent=self.agent, types=types)
        # Memories archived after the cut left the index; score them as the index would.
        gone = lexical.archived_after(conn, cut, agent=self.agent, types=types)
        scores = semantic.similarities(embedder, vector, [text for _, text in gone])
        extra = [VectorHit(p, s) for (p, _), s in zip(gone, scores, strict=True)]
        want = fetch
        while True:
            hits = searcher.search(vector, want, agent=self.agent, types=types)
            pool = sorted([*hits, *extra], key=lambda h: (-h.score, h.position))
            facts = queries.memory_facts(known, [h.position for h in pool])
            live = [h for h in pool if (f := facts.get(h.position)) and not f.archived]
            if len(live) >= fetch or len(hits) < want:
                return vector, live[:fetch]
            want *= 4

    def _fallback(
        self, query: str, fetch: int, types: Sequence[str] | None, cut: int | None
    ) -> dict[int, Candidate]:
        words = set(lexical.tokens(query))
        head = self.ledger.head()
        scored: list[tuple[float, int, float]] = []
        archived: set[int] = set()
        window = self.ledger.read(
            max(head - FALLBACK_WINDOW, 0), kinds=["memory.observed", "memory.archived"]
        )
        for event in window:
            if cut is not None and check_as_of(event.at) > cut:
                continue
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
                share = overlap / (len(words) or 1)
                scored.append((overlap / math.sqrt(len(words) or 1), event.position, share))
        scored = [s for s in scored if s[1] not in archived]
        scored.sort(key=lambda s: (-s[0], -s[1]))
        return {
            position: Candidate(fused=score, via=("fallback",), match=share)
            for score, position, share in scored[:fetch]
        }

    # -- scoring ---------------------------------------------------------------------------

    def _score(
        self,
        known: sqlite3.Connection,
        ranked: dict[int, Candidate],
        matching: Matching | None,
        at_us: int,
        w: Mapping[str, float],
        k: int,
        min_score: float,
    ) -> list[Recalled]:
        """Score and order every candidate, then keep the ``k`` best whose match passes.

        The floor applies after the order is set, so it removes items and never reorders
        the ones it keeps. ``match`` is worked out in that order, ``k`` candidates at a time,
        until ``k`` pass: with no floor, for the ``k`` best alone.
        """
        positions = sorted(ranked)
        facts = queries.memory_facts(known, positions)
        relevance = {p: ranked[p].fused for p in positions}
        recency = {}
        importance = {}
        for p in positions:
            fact = facts.get(p)
            updated = at_us if fact is None else fact.updated_us
            hours = max(at_us - updated, 0) / 3_600_000_000
            recency[p] = self.rate**hours
            imp = None if fact is None else fact.importance
            importance[p] = float(imp) if imp is not None else 5.0
        rel_n, rec_n, imp_n = _minmax(relevance), _minmax(recency), _minmax(importance)
        total = {
            p: w["relevance"] * rel_n[p] + w["recency"] * rec_n[p] + w["importance"] * imp_n[p]
            for p in positions
        }
        ranking = sorted(positions, key=lambda p: (-total[p], -relevance[p], -p))
        order: list[int] = []
        for start in range(0, len(ranking), k):
            if len(order) >= k:
                break
            batch = ranking[start : start + k]
            if matching is not None:
                work_out(ranked, batch, matching)
            order += [p for p in batch if (ranked[p].match or 0.0) >= min_score]
        order = order[:k]
        events = self.ledger.get(order) if order else []
        items = []
        for p, event in zip(order, events, strict=True):
            c = ranked[p]
            items.append(
                Recalled(
                    event,
                    total[p],
                    rel_n[p],
                    rec_n[p],
                    imp_n[p],
                    c.via,
                    c.fused,
                    c.bm25,
                    c.cosine,
                    c.match or 0.0,
                )
            )
        return items


def _weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    return checked_numbers(weights or {}, DEFAULT_WEIGHTS, "weights")


def _minmax(values: Mapping[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    span = high - low
    return {p: (v - low) / span if span > 0 else 1.0 for p, v in values.items()}
