"""Recall with a scope: memories, scars, victories, reflections, or all of them at once.

``AgentMemory.recall(query, k, scope=...)`` is one call whatever is recalled. The default
scope, ``memories``, is memory recall as it always was (hybrid, fused, min-max scored:
:mod:`engram.agents.memory`). Every other scope is an entry of :data:`SCOPES`: its name,
the item types it serves from the lexical and semantic indexes, and the function that
fetches and ranks them; adding a scope (the rules projection's, say) is adding an entry.

Scars, victories and reflections are ranked as the lessons loop asks (ADR 0027)::

    score = similarity × (1 + importance / 10) × exp(−age_days / 365)

``similarity`` is the cosine of the query's vector and the item's (clipped to 0..1), from the
semantic index; where vectors are unavailable (no embedder, a model down) the lexical
index's ``match`` (the IDF-weighted share of the query's words the item holds, 0..1) stands
in, and the result's ``fallback`` says so. ``age_days`` is the item's age as of the query's
``as_of``. Candidates are over-fetched from the semantic index until no unfetched item can
rank higher: the multiplier is at most 2 (importance 10, age 0), so once the k-th score
reaches twice the lowest similarity fetched the re-ranked top k is exact (with exact
search; HNSW is approximate anyway). Lexical hits join the candidates.

``all`` runs every other scope and merges their items by score; memories take part ranked
by the same formula (their cosine, their importance, their age), so one number orders them
all. What the scores mean: ``score`` is absolute (the same item and query give the same
score whatever else is stored), in 0..2. The bands (≥ 0.75 highly relevant, 0.65–0.75
relevant, below: check by hand) are read on ``similarity``; ADR 0027 gives what they mean
with the MiniLM and with the hash embedder.

The items are :class:`~engram.agents.memory.Recalled` as memory recall's are, with these
meanings outside the ``memories`` scope: ``score`` the formula, ``relevance`` and ``match``
the similarity, ``recency`` ``exp(−age_days/365)``, ``importance`` importance / 10, ``cosine``
and ``bm25`` the paths' raw scores, ``fused`` 0.

Visibility holds as for memories: an agent recalls its own items and public ones. Served
items are recorded in the ``memory.recalled`` event like memories, which the scars
projection replays as a recall of each served scar.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from engram.agents import guidance
from engram.agents.recalled import Recalled, RecallResult
from engram.ledger import Event, Ledger, NewEvent
from engram.ledger.catalog import MemoryRecalled, RecalledItem
from engram.projections import lexical, semantic, suggestions, timetravel
from engram.projections.embedding import Embedder
from engram.projections.errors import ProjectionError, QueryError
from engram.projections.semantic import VectorHit, VectorSearcher
from engram.projections.timetravel import check_as_of, micros

if TYPE_CHECKING:
    from engram.agents.memory import AgentMemory

#: The most ``(1 + importance/10) × exp(−age/365)`` can be: importance 10, age 0.
MAX_MULTIPLIER = 2.0
#: Importance of an item that carries none (a memory or reflection recorded without one).
DEFAULT_IMPORTANCE = 5
_US_PER_DAY = 86_400_000_000
_CHUNK = 64  # candidates read from the ledger at a time while ranking
#: Score bands, read on ``similarity`` (ADR 0027).
HIGHLY_RELEVANT = 0.75
RELEVANT = 0.65


def band(similarity: float) -> str:
    """Name the band a similarity falls in: highly relevant, relevant, or check by hand."""
    if similarity >= HIGHLY_RELEVANT:
        return "highly relevant"
    if similarity >= RELEVANT:
        return "relevant"
    return "check by hand"


def rerank_score(similarity: float, importance: int | None, age_days: float) -> float:
    """Return ``similarity × (1 + importance/10) × exp(−age_days/365)`` (age floored at 0)."""
    imp = DEFAULT_IMPORTANCE if importance is None else importance
    return similarity * (1 + imp / 10) * math.exp(-max(age_days, 0.0) / 365)


class Ask(NamedTuple):
    """One scoped recall's question: who asks, what, how many, as of when."""

    memory: AgentMemory
    conn: sqlite3.Connection
    query: str
    k: int
    at_us: int
    cut: int | None  # as_of in epoch microseconds when given, else None (everything)


class Ranked(NamedTuple):
    """What a scope's fetch returns: its items, best first, and why it degraded if it did."""

    items: list[Recalled]
    fallback: str | None


Fetch = Callable[[Ask, tuple[str, ...]], Ranked]


@dataclass(frozen=True)
class Scope:
    """A recallable scope: the item types it serves and how they are fetched and ranked."""

    name: str
    types: tuple[str, ...] = ()
    #: None: the indexed fetch (over-fetch from the indexes, re-rank by the formula).
    fetch: Fetch | None = None


def _rules(ask: Ask, types: tuple[str, ...]) -> Ranked:
    """Fetch the applied rules that meet the query by meaning, scored by how surely each
    applies (0..1; :func:`engram.agents.guidance.lookup`, as context frames rank them).

    A rule has no importance or age to weigh: it holds until a person replaces it. As of a
    time, only rules applied by then are served. Rules are for every agent (visibility does
    not apply: a person reviewed them for everyone).
    """
    try:
        found = guidance.lookup(ask.conn, ask.query, max(4 * ask.k, 20), ask.memory.embedder)
    except ProjectionError as exc:
        return Ranked([], f"rules unavailable ({exc})")
    if not found:
        return Ranked([], None)
    events = {e.position: e for e in ask.memory.ledger.get([r.position for r in found])}
    paths = ("lexical",) if ask.memory.embedder is None else ("semantic", "lexical")
    items = []
    for rule in found:
        event = events[rule.position]
        if ask.cut is not None and micros(event.at) > ask.cut:
            continue
        items.append(
            Recalled(
                event,
                rule.match,
                rule.match,
                0.0,
                0.0,
                paths,
                match=rule.match,
            )
        )
    return Ranked(items[: ask.k], None)


#: The scopes recall accepts, besides ``all``, which merges every one of them. ``memories``
#: alone is memory recall's own path; its entry here ranks memories within ``all``. ``rules``
#: are the applied suggestions of the rules projection, matched by meaning; ``concepts``
#: the concept tree's newest versions, indexed by label, id and payload (ADR 0037).
SCOPES: dict[str, Scope] = {
    s.name: s
    for s in (
        Scope("memories", lexical.MEMORY_TYPES),
        Scope("scars", ("failure",)),
        Scope("victories", ("victory",)),
        Scope("reflections", lexical.REFLECTION_TYPES),
        Scope("rules", ("rule",), fetch=_rules),
        Scope("concepts", lexical.CONCEPT_TYPES),
    )
}


def recall(
    memory: AgentMemory,
    query: str,
    k: int,
    scope: str,
    *,
    as_of: datetime | None = None,
    record: bool = True,
    floor: float = 0.0,
    types: Sequence[str] | None = None,
) -> RecallResult:
    """Recall ``k`` items of ``scope`` for ``query`` as ``memory``'s agent; record the recall.

    ``floor`` drops items whose similarity is below it. The caller (``AgentMemory.recall``)
    has checked ``query``, ``k`` and ``floor``; ``types`` filters memory recall only and is
    refused here (memory recall's ``weights`` and ``paths`` do not apply either).
    """
    if scope != "all" and scope not in SCOPES:
        known = ["memories", *(s for s in SCOPES if s != "memories"), "all"]
        raise QueryError(f"scope must be one of {known}, got {scope!r}")
    if types:
        raise QueryError(f"types filters memory recall only; scope {scope!r} takes none")
    when = as_of or datetime.now(UTC)
    at_us = check_as_of(when)
    memory.engine.wait_for(memory.ledger.head())
    chosen = list(SCOPES.values()) if scope == "all" else [SCOPES[scope]]
    items: list[Recalled] = []
    fallbacks: list[str] = []
    with memory.engine.read() as conn:
        ask = Ask(memory, conn, query, k, at_us, None if as_of is None else at_us)
        for s in chosen:
            ranked = (s.fetch or _indexed)(ask, s.types)
            items += [r for r in ranked.items if r.match >= floor]
            if ranked.fallback and ranked.fallback not in fallbacks:
                fallbacks.append(ranked.fallback)
        items.sort(key=lambda r: (-r.score, -r.event.position))
        items = [r for r in items if visible_to(r.event, memory.agent)]
        items = _refusals(conn, items[:k])
    recorded = None
    if record and items:
        payload = MemoryRecalled(
            agent=memory.agent,
            query=query,
            as_of=when,
            items=[RecalledItem(position=r.event.position, score=r.score) for r in items],
        )
        stream = f"agent:{memory.agent}"
        event = NewEvent(stream=stream, kind="memory.recalled", payload=payload, actor=memory.agent)
        recorded = memory.ledger.append(event)[0]
    return RecallResult(query, when, items, "; ".join(fallbacks) or None, recorded)


def visible_to(event: Event, agent: str) -> bool:
    """Say whether the ledger's ``event`` may be served to ``agent``: public, or its own. The
    projection store's copy of visibility and author is what recall searched by; this is
    the ledger's, checked before serving, so a store whose row was edited ("private" to
    "public", or the author) serves no one else's private item (ADR 0141)."""
    payload = event.payload
    if getattr(payload, "visibility", "public") != "private":
        return True
    return getattr(payload, "agent", event.actor) == agent


def _refusals(conn: sqlite3.Connection, items: list[Recalled]) -> list[Recalled]:
    """Return ``items`` with each scar whose lesson a reviewer refused marked ``refused``,
    its event's lesson blanked: the result carries what happened only, so an agent reading
    ``item.event.payload`` gets no refused guidance either (the ledger keeps the lesson)."""
    scars = [r.event.id for r in items if r.event.kind == "scar.recorded"]
    if not scars:
        return items
    try:
        refused = suggestions.refused_scars(conn, scars)
    except ProjectionError:  # no suggestions projection in this store: nothing was refused
        return items
    return [
        r._replace(refused=True, event=_without_lesson(r.event)) if r.event.id in refused else r
        for r in items
    ]


def _without_lesson(event: Event) -> Event:
    """Return a copy of the scar ``event`` whose payload's lesson is empty."""
    return msgspec.structs.replace(event, payload=msgspec.structs.replace(event.payload, lesson=""))


def item_text(event: Event, *, refused: bool = False) -> str:
    """Return what a recalled item says: a memory's or reflection's text, a scar's what and
    lesson, a concept's id and label.

    A scar whose lesson a reviewer ``refused`` says what happened only: the refused lesson
    never reaches an agent as guidance (ADR 0057).
    """
    if event.kind == "scar.recorded":
        if refused:
            return f"what happened: {event.payload.what}"
        return f"{event.payload.what} — lesson: {event.payload.lesson}"
    if event.kind == "concept.upserted":
        return f"{event.payload.id}: {event.payload.label}"
    text = getattr(event.payload, "text", None)
    # A listing quoting a position a raw append named, which holds no memory (ADR 0160).
    return str(text) if text is not None else f"(a {event.kind} event, not a memory)"


def held_events(ledger: Ledger, positions: Iterable[int]) -> list[Event]:
    """Return the events at ``positions`` (sorted) the ledger holds, for a listing to quote:
    a position past the head, which a raw append may name (``supersedes``), is left out
    rather than failing the listing (ADR 0160)."""
    head = ledger.head()
    wanted = sorted(p for p in set(positions) if 1 <= p <= head)
    return ledger.get(wanted) if wanted else []


def item_author(event: Event) -> str:
    """Return who a recalled item is from: its agent, or a rule's reviewer."""
    if event.kind == "suggestion.reviewed":
        return str(event.payload.reviewer)
    return str(event.payload.agent)


def item_type(event: Event) -> str:
    """Return a recalled item's type: a memory's type, a scar's kind, ``reflection``,
    ``concept`` or ``rule``."""
    if event.kind == "suggestion.reviewed":
        return "rule"
    return lexical.item_text(event)[1]


# -- the indexed scopes: over-fetch, then re-rank by the formula -------------------------------


@dataclass
class _Candidate:
    cosine: float | None = None
    bm25: float | None = None
    match: float | None = None  # lexical match, when the lexical path found it
    via: tuple[str, ...] = ()


def _indexed(ask: Ask, types: tuple[str, ...]) -> Ranked:
    """Fetch ``types`` from the semantic and lexical indexes and re-rank them by the formula.

    The nearest vectors are fetched in growing batches until no unfetched item can outrank
    the k-th (its similarity is at most the lowest fetched, its multiplier at most 2);
    lexical hits join the candidates.
    """
    memory, conn = ask.memory, ask.conn
    found: dict[int, _Candidate] = {}
    problems: list[str] = []
    search = None
    if memory.embedder is None or memory.searcher is None:
        problems.append("no embedder configured")
    else:
        try:
            search = _Nearest(ask, types, memory.embedder, memory.searcher)
            search.more(found)
        except Exception as exc:  # a model or index failure degrades, never fails recall
            problems.append(f"semantic index unavailable ({type(exc).__name__}: {exc})")
            search = None
    try:
        hits = lexical.search(
            conn,
            ask.query,
            max(4 * ask.k, 50),
            agent=memory.agent,
            types=types,
            as_of_us=ask.cut,
        )
        for h in hits:
            c = found.setdefault(h.position, _Candidate())
            c.bm25, c.match, c.via = h.score, h.match, (*c.via, "lexical")
    except (ProjectionError, sqlite3.Error) as exc:
        problems.append(f"lexical index unavailable ({exc})")
        if search is None:
            problems[-1] += ": nothing to rank"
    if search is not None:
        missing = [p for p, c in found.items() if c.cosine is None]
        for p, blob in (semantic.vectors_of(conn, missing) if missing else {}).items():
            found[p].cosine = float(np.frombuffer(blob, dtype=np.float32) @ search.vector)
    events: dict[int, Event | None] = {}  # None: recorded after the cut
    while True:
        items = _top(ask, found, events)
        if search is None or search.exhausted:
            break
        kth = items[ask.k - 1].score if len(items) >= ask.k else -1.0
        if kth >= MAX_MULTIPLIER * search.lowest:
            break
        search.more(found)
    fallback = None
    if problems:
        fallback = "; ".join(problems)
        if search is None and not fallback.endswith("nothing to rank"):
            fallback += ": lexical match stands in for similarity"
    return Ranked(items, fallback)


class _Nearest:
    """The semantic path of one scoped recall: nearest vectors, fetched in growing batches."""

    def __init__(
        self, ask: Ask, types: tuple[str, ...], embedder: Embedder, searcher: VectorSearcher
    ) -> None:
        self.ask, self.types, self.searcher = ask, types, searcher
        searcher.sync(ask.conn)
        self.vector = np.ascontiguousarray(
            embedder.embed_transient([ask.query])[0], dtype=np.float32
        )
        self.extra: list[VectorHit] = []
        # Items archived after the cut left the index: score them too. latest_change (cached
        # per store state) covers every archival time, so most reads skip the table scan.
        if ask.cut is not None and timetravel.latest_change(ask.conn, ("salience",)) > ask.cut:
            agent = ask.memory.agent
            gone = lexical.archived_after(ask.conn, ask.cut, agent=agent, types=types)
            scores = semantic.similarities(embedder, self.vector, [text for _, text in gone])
            self.extra = [VectorHit(p, s) for (p, _), s in zip(gone, scores, strict=True)]
        self.want = max(4 * ask.k, 50) // 4
        self.exhausted = False
        self.lowest = 1.0  # the lowest similarity fetched: no unfetched item is above it

    def more(self, found: dict[int, _Candidate]) -> None:
        """Fetch four times as many nearest vectors as last time into ``found``."""
        self.want *= 4
        hits = self.searcher.search(
            self.vector, self.want, agent=self.ask.memory.agent, types=self.types
        )
        for h in [*hits, *self.extra]:
            c = found.setdefault(h.position, _Candidate())
            if c.cosine is None:
                c.cosine, c.via = h.score, (*c.via, "semantic")
        self.exhausted = len(hits) < self.want
        if hits:
            self.lowest = max(min(h.score for h in hits), 0.0)


def _top(ask: Ask, found: dict[int, _Candidate], events: dict[int, Event | None]) -> list[Recalled]:
    """Return the ``k`` best candidates by the formula, best first.

    Candidates are read from the ledger in order of similarity, in chunks, until the next
    one could not reach the k-th score even with the largest multiplier: only the events
    that can rank are read.
    """
    order = sorted(found, key=lambda p: (-_similarity(found[p]), -p))
    best: list[Recalled] = []
    for start in range(0, len(order), _CHUNK):
        chunk = order[start : start + _CHUNK]
        if len(best) >= ask.k and MAX_MULTIPLIER * _similarity(found[chunk[0]]) < best[-1].score:
            break
        unread = [p for p in chunk if p not in events]
        for p in unread:
            events[p] = None
        for event in ask.memory.ledger.get(unread) if unread else ():
            if ask.cut is None or micros(event.at) <= ask.cut:
                events[event.position] = event
        scored = [_scored(ask, e, found[p]) for p in chunk if (e := events[p]) is not None]
        best = sorted([*best, *scored], key=lambda r: (-r.score, -r.event.position))[: ask.k]
    return best


def _similarity(c: _Candidate) -> float:
    """The candidate's similarity: its cosine clipped to 0..1, else its lexical match."""
    return min(max(c.cosine, 0.0), 1.0) if c.cosine is not None else c.match or 0.0


def _scored(ask: Ask, event: Event, c: _Candidate) -> Recalled:
    """Score one candidate by the formula; similarity is its cosine, else its lexical match."""
    similarity = _similarity(c)
    importance = getattr(event.payload, "importance", None)
    age_days = (ask.at_us - micros(event.at)) / _US_PER_DAY
    score = rerank_score(similarity, importance, age_days)
    imp = DEFAULT_IMPORTANCE if importance is None else importance
    recency = math.exp(-max(age_days, 0.0) / 365)
    return Recalled(
        event, score, similarity, recency, imp / 10, c.via, 0.0, c.bm25, c.cosine, similarity
    )
