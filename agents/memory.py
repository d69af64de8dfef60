"""The memory stream: an agent observes into the ledger and recalls what matters.

``recall`` gathers candidates from the lexical (BM25) and the semantic (FAISS) index, fuses
the two rankings (reciprocal rank fusion, over-fetching), lets the strongest candidates cue
the memories told next to them in their episode (bloom, :mod:`engram.agents.contiguity`,
ADR 0025), and scores every candidate on an absolute scale (ADR 0051): ``relevance`` is a
calibrated probability that the item answers the query, from the share of the query's
content words it holds (a quoted id counts whole), its cosine and its fused rank, and of the
query's names the share no memory holds (ADR 0090: the same for every item); ``score``
weighs it by recency (the age since observation, a half-life in days: ADR 0050) and
importance as a weighted geometric mean, and orders the result. Copies of one memory fold
into one item, and a memory another one replaced is served below it, labelled (ADR 0052).
An agent recalls its own items and public items, never another agent's private ones,
whichever path served them. A recall is appended as ``memory.recalled`` (unless
``record=False``), which the salience index replays as a bump.

What the numbers mean: ``score`` and ``relevance`` are in 0..1 and comparable across queries;
``min_score`` floors ``score`` (default :data:`DEFAULT_MIN_SCORE`), so a query nothing answers
gets few or no items; ``bm25`` and ``cosine`` are each path's raw score; ``match`` keeps ADR
0019's meaning. ``as_of=T`` recalls what the store knew at ``T``: memories observed after
``T`` are left out, recalls after ``T`` do not count, archivals and supersessions after ``T``
do not apply; ``valid_at=T`` asks what was true at ``T``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import NamedTuple

from msgspec import UNSET

from engram.agents import scopes
from engram.agents.arguments import (
    check_agent,
    check_query,
    check_text,
    check_valid_at,
    checked_numbers,
    checked_paths,
    checked_positions,
    checked_tags,
)
from engram.agents.calibration import Calibration, calibration_for
from engram.agents.completion import Completer
from engram.agents.errors import MemoryOwnerError, UnknownMemoryError
from engram.agents.folding import copied_replacements, copy_rows, fold, grouped, not_yet_true
from engram.agents.gathering import Gathering
from engram.agents.importance import HeuristicScorer, ImportanceScorer
from engram.agents.matching import (
    Candidate,
    Matching,
    cosines,
    note_detail,
    share_ceilings,
    work_out,
)
from engram.agents.ordering import (
    CURRENT_STATE_BOOST,
    below_replacements,
    ceilings,
    lazily,
    relevance_of,
    wants_current,
    with_replacements,
)
from engram.agents.quoted import held, id_floors
from engram.agents.recalled import Recalled, RecallResult
from engram.agents.typed import NO_VALUE, asked, kind_texts, owned
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    MemoryArchived,
    MemoryObserved,
    MemoryRecalled,
    MemoryType,
    RecalledItem,
    Visibility,
)
from engram.projections import lexical, salience, supersession, timetravel
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.salience import DEFAULT_RATE
from engram.projections.semantic import VectorSearcher
from engram.projections.timetravel import check_as_of

#: Exponents of the score's weighted geometric mean (ADR 0050): ``relevance ** r ×
#: recency ** t × (0.5 + importance / 2) ** i``. A year-old memory keeps 88% of its
#: relevance, a memory rated 1 keeps 90% against one rated 10; pass ``weights=`` to change
#: them per recall ({"relevance": 1, "recency": 0, "importance": 0}: relevance alone).
DEFAULT_WEIGHTS: dict[str, float] = {"relevance": 1.0, "recency": 0.05, "importance": 0.15}
#: The age, in days, at which recency halves: ``1 / (1 + age / HALF_LIFE_DAYS)``, a
#: hyperbolic decay that still tells a 30-day-old fact from a 60-day-old one, and a year from
#: two (ADR 0050). The age counts from the newest candidate the query can serve (known by
#: its time, true by its valid time), else from that time: a store whose newest memory is
#: months old (imported history, an idle agent, a replayed ledger) still tells a change
#: from what it changed (ADR 0108).
HALF_LIFE_DAYS = 30.0
_US_PER_DAY = 86_400_000_000
#: A replaced memory's score is multiplied by this: findable, below its replacement (ADR 0052).
REPLACED_WEIGHT = 0.3
#: What detection does with a memory that seems to replace an earlier one (ADR 0052): off for
#: a bare AgentMemory (as the benches use it); an opened engram takes ``supersede``, "apply".
SUPERSEDE_POLICIES = ("apply", "review", "off")
DEFAULT_SUPERSEDE = "off"
#: Reciprocal rank fusion's constant (score = sum over paths of weight / (RRF_K + rank)): 10,
#: not the customary 60, separates the top ranks more, better on LoCoMo @5/@10/@20 (ADR 0014).
RRF_K = 10
#: The candidate paths recall can use; both by default (hybrid recall).
PATHS = ("lexical", "semantic")
#: How much each path's reciprocal rank counts in the fusion. Neural vectors and BM25 are
#: peers (equal weights measured best on LoCoMo); hash vectors are a weak, lexical-like
#: signal that pulls hybrid recall below BM25 alone at any larger weight, so their path only
#: breaks ties and fills in where no word matches (ADR 0014).
DEFAULT_FUSION: dict[str, float] = {"lexical": 1.0, "semantic": 1.0}
FUSION_BY_PROVIDER: dict[str, dict[str, float]] = {"hash": {"lexical": 1.0, "semantic": 0.02}}
#: The default floor on ``score``, on the calibrated scale (ADR 0072): an item below it is
#: relevant less than one time in twenty, so ten such items (recall's default ``k``) hold
#: less than half an answer between them, more likely none than one. Chosen by that reading
#: of the scale, not by a bench's best threshold; held apart by conversation, it tells
#: LoCoMo and BEAM questions from questions of another conversation 92% and 91% of the time
#: with MiniLM, a question's names no memory holds lowering its items (ADR 0090). Pass
#: ``min_score=0`` for every candidate.
DEFAULT_MIN_SCORE = 0.05


class AgentMemory(Gathering):
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
        half_life_days: float = HALF_LIFE_DAYS,
        supersede: str = DEFAULT_SUPERSEDE,
        supersede_judge: Completer | None = None,
    ) -> None:
        """``fusion`` weighs each path's reciprocal rank (default: by the embedder's
        provider, :data:`FUSION_BY_PROVIDER`, else :data:`DEFAULT_FUSION`); ``bloom`` lets
        the strongest candidates cue their episode neighbours (:mod:`engram.agents.contiguity`);
        ``prune`` searches the query's words within the postings budget (:func:`lexical.terms`;
        ``"share"``: ADR 0026's rule);
        ``rrf_k`` is the fusion's rank constant (:data:`RRF_K`; 60 is textbook RRF);
        ``half_life_days`` is the age at which recency halves (:data:`HALF_LIFE_DAYS`);
        ``supersede`` is what detection does when an observed memory seems to replace an
        earlier one: ``apply``, ``review`` (propose) or ``off``
        (:mod:`engram.agents.supersession`); ``supersede_judge``, a routed model that judges
        detection's candidates (None: the offline rule alone)."""
        check_agent(agent)
        if fusion is None:
            provider = embedder.fingerprint.provider if embedder is not None else ""
            fusion = FUSION_BY_PROVIDER.get(provider, DEFAULT_FUSION)
        self.fusion = checked_numbers(fusion, DEFAULT_FUSION, "fusion")
        if not isinstance(rrf_k, int) or isinstance(rrf_k, bool) or not 0 <= rrf_k <= 10_000:
            raise QueryError(f"rrf_k must be an int in 0..10000, got {rrf_k!r}")
        self.rrf_k = rrf_k
        if (
            not isinstance(half_life_days, int | float)
            or isinstance(half_life_days, bool)
            or not 0 < half_life_days <= 36_500
        ):
            raise QueryError(
                f"half_life_days must be a number in (0, 36500], got {half_life_days!r}"
            )
        self.half_life_days = float(half_life_days)
        if supersede not in SUPERSEDE_POLICIES:
            raise QueryError(f"supersede must be one of {SUPERSEDE_POLICIES}, got {supersede!r}")
        self.supersede_policy = supersede
        self.supersede_judge = supersede_judge
        self.agent = agent
        self.ledger = ledger
        self.engine = engine
        self.embedder = embedder
        self.searcher = searcher
        self.scorer = scorer or HeuristicScorer()
        self.rate = rate
        self.bloom, self.prune = bloom, prune
        #: Work out relevance only down the final order (ADR 0068); False: for every
        #: candidate, as the reference the property test and the latency bench compare with.
        self.lazy = True
        #: The calibration of a recall the vectors took part in (None: the embedder
        #: family's, :data:`engram.agents.calibration.CALIBRATIONS`); the benches' ablations set it.
        self.calibration: Calibration | None = None

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
        supersedes: Sequence[int] = (),
        valid_from: datetime | None = None,
    ) -> int:
        """Append an observation, plan or thought; return its position.

        Without ``importance`` the scorer rates it, once; the rating is stored in the event.
        Bad values (empty text, importance outside 1..10, unknown type or visibility) are
        refused by the ledger with an error naming the field; nothing is written.

        ``supersedes`` names earlier memories of this agent the new one replaces (another
        agent's public memories are replaced by detection alone; ADR 0166, 0171), no longer
        true from ``valid_from`` (default: the new memory's time), said in the observation's
        own event (ADR 0121), checked first: a bad position writes nothing. Without it,
        detection may propose or apply a replacement, as the agent's policy says (ADR 0052).
        """
        from engram.agents import supersession  # it builds on this module

        check_text(text)
        replaces = supersession.check_supersedes(self, supersedes)
        valid_from = supersession.check_valid_from(valid_from, replaces)
        tags = checked_tags(tags, source)
        if importance is None and isinstance(text, str) and text and isinstance(type, str):
            importance = self.scorer.score(text, type)  # any other type: the ledger refuses it
        payload = MemoryObserved(
            agent=self.agent,
            text=text,
            type=type,
            importance=importance,
            visibility=visibility,
            source=source,
            tags=list(tags),
            supersedes=replaces or UNSET,  # one event: a revision is written whole (ADR 0121)
            valid_from=valid_from or UNSET,
        )
        event = NewEvent(
            stream=f"agent:{self.agent}",
            kind="memory.observed",
            payload=payload,
            actor=self.agent,
            at=at,
        )
        position = self.ledger.append(event)[0]
        if not replaces:
            supersession.after_observe(self, position, text)
        return position

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
        self.own_memories(wanted, "archives")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            facts = salience.memory_facts(conn, wanted)
        archived = sorted(p for p, f in facts.items() if f.archived)
        if archived:
            raise UnknownMemoryError(f"position(s) {archived} hold memories archived already")
        payload = MemoryArchived(agent=self.agent, positions=wanted, reason=reason)
        archival = NewEvent(
            stream=f"agent:{self.agent}", kind="memory.archived", payload=payload, actor=self.agent
        )
        return self.ledger.append(archival)[0]

    def supersede(
        self, position: int, replaces: Sequence[int], *, valid_from: datetime | None = None
    ) -> int:
        """Say that this agent's memory at ``position`` replaces earlier ones of its own (a
        revision); return the ``memory.superseded`` position. A bad argument writes nothing."""
        from engram.agents import supersession

        return supersession.supersede(self, position, replaces, valid_from=valid_from)

    def proposals(self) -> list[supersession.Proposal]:
        """Return the supersessions detection proposed for this agent's memories, pending."""
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            return supersession.pending(conn, self.agent)

    def review_supersession(
        self, proposal: int, decision: str, *, reviewer: str, note: str = ""
    ) -> int:
        """Decide a pending proposal about this agent's memories: "applied" or "refused"."""
        from engram.agents import supersession as act

        return act.review(self, proposal, decision, reviewer=reviewer, note=note, own=True)

    def revert_supersession(self, event: int, *, reviewer: str, note: str = "") -> int:
        """Undo a supersession of this agent's memories: the old one is current again."""
        from engram.agents import supersession as act

        return act.revert(self, event, reviewer=reviewer, note=note, own=True)

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
        min_score: float | None = None,
        scope: str = "memories",
        valid_at: datetime | None = None,
    ) -> RecallResult:
        """Return the ``k`` memories (or other items: ``scope``, agents.scopes) for ``query``.

        ``as_of`` (default: now, with everything the store holds) recalls what the store knew
        then: no memory observed after it, no recall after it counted, no archival after it
        applied. ``min_score`` (0..1) drops items whose ``score`` is below it, before the
        ``k`` best are taken: fewer than ``k``, or none, may come back (None: for memories
        :data:`DEFAULT_MIN_SCORE`, for other scopes 0).

        ``paths`` narrows the candidates to one index (``("lexical",)`` or ``("semantic",)``);
        the keyword fallback serves only when every path asked for is unavailable, and the
        result says why. ``scope``: memories, scars, victories, reflections or all.

        ``valid_at`` asks what was true at that time (valid time), where ``as_of`` asks what
        the store knew (record time): a memory replaced from a time after ``valid_at`` is
        served as current, one not yet true then is left out (ADR 0052). A replaced memory
        is served below what replaced it, labelled with it (``replaced_by``).
        """
        check_query(query)
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
            raise QueryError(f"k must be an int in 1..1000, got {k!r}")
        if not isinstance(scope, str):  # checked against the scopes where it is used
            known = ["memories", *(s for s in scopes.SCOPES if s != "memories"), "all"]
            raise QueryError(f"scope must be one of {known}, got {scope!r}")
        if min_score is None:  # the calibrated floor is memory recall's; scopes keep theirs
            min_score = DEFAULT_MIN_SCORE if scope == "memories" else 0.0
        if (
            not isinstance(min_score, int | float)
            or isinstance(min_score, bool)
            or not 0 <= min_score <= 1
        ):
            raise QueryError(f"min_score must be a number in 0..1, got {min_score!r}")
        check_valid_at(valid_at, scope)
        if scope != "memories":
            return scopes.recall(
                self, query, k, scope, as_of=as_of, record=record, floor=min_score, types=types
            )
        when = as_of or datetime.now(UTC)
        at_us = check_as_of(when)
        valid_us = at_us if valid_at is None else check_as_of(valid_at, "valid_at")
        types = lexical.memory_types(types)  # scars and reflections share the indexes
        w = checked_numbers(weights or {}, DEFAULT_WEIGHTS, "weights")
        use = checked_paths(paths, PATHS)
        self.engine.wait_for(self.ledger.head())
        fetch = max(3 * k, 30)
        cut = None if as_of is None else at_us
        ask = _Ask(query, k, at_us, cut, w, float(min_score), valid_us)
        with self.engine.read() as conn:
            known_at = (
                nullcontext(conn)
                if as_of is None
                else timetravel.known_at(
                    conn, self.ledger, when, rate=self.rate, projections=("salience",)
                )
            )
            with known_at as known:
                ranked, fallback, matching = self._candidates(
                    conn, known, query, fetch, types, use, cut
                )
                # The fallback's candidates bring no replacement of their own (ADR 0152).
                replaced = self._replacements(
                    conn, ranked, types, cut, valid_us, bring=matching is not None
                )
                items = self._score(conn, known, ranked, matching, ask, replaced) if ranked else []
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

    # -- scoring ---------------------------------------------------------------------------

    def _score(
        self,
        conn: sqlite3.Connection,
        known: sqlite3.Connection,
        ranked: dict[int, Candidate],
        matching: Matching | None,
        ask: _Ask,
        replaced: dict[int, int],
    ) -> list[Recalled]:
        """Score every candidate on the absolute scale, fold copies, keep the ``k`` best;
        ``replaced`` maps each replaced candidate to what replaced it.

        ``relevance`` is the calibrated probability that the item answers the query
        (ADR 0051); ``score`` weighs it by recency and importance as a weighted geometric
        mean (ADR 0050). Copies of one memory fold into the best-scored one (ADR 0052); the
        floor applies to ``score`` after the order is set.
        """
        positions = sorted(ranked)
        facts = salience.memory_facts(known, positions)
        rows = copy_rows(conn, positions)
        w = ask.weights
        rec_w = w["recency"] * (CURRENT_STATE_BOOST if wants_current(ask.query) else 1.0)
        calibration = None
        best = 1.0
        if matching is not None:
            ran = [p for p, on in (("lexical", matching.weights), ("semantic", matching.vector))
                   if on is not None]  # fmt: skip
            best = sum(self.fusion[p] for p in ran) / (self.rrf_k + 1) or 1.0
            calibration = (
                self._calibration()
                if matching.vector is not None
                else calibration_for("", semantic=False)
            )
            matching.saturate = calibration.saturated != 0
            matching.passages = calibration.passage != 0
            matching.lengths = calibration.share_length != 0
            if calibration.detail and matching.vector is not None:
                note_detail(ranked, positions, matching)
        relevance: dict[int, float] = {}
        recency: dict[int, float] = {}
        importance: dict[int, float] = {}
        total: dict[int, float] = {}
        observed_at = {
            p: rows[p].observed_us if p in rows else facts[p].updated_us
            for p in positions
            if p in rows or p in facts
        }
        # Ages count from the store's present as the query sees it (ADR 0108): the newest
        # candidate that can be served (known by the query's time, true by the valid time
        # asked), or that time if no candidate is.
        present = min(ask.at_us, ask.valid_us)
        anchor = max((t for t in observed_at.values() if t <= present), default=present)
        for p in positions:
            fact = facts.get(p)
            age_days = max(anchor - observed_at.get(p, anchor), 0) / _US_PER_DAY
            recency[p] = 1.0 / (1.0 + age_days / self.half_life_days)
            imp = None if fact is None else fact.importance
            importance[p] = (float(imp) if imp is not None else 5.0) / 10
        # True from a replacement's stated valid time, not from its telling (ADR 0156, 0160).
        told = {p: rows[p].observed_us for p in positions if p in rows}
        untrue = not_yet_true(conn, told, ask.cut, ask.valid_us, ask.at_us)
        positions = [p for p in positions if p not in untrue]  # not yet true: not served

        def scored(term: float, p: int) -> float:
            """Return the score of ``p`` with ``term`` for its relevance's term."""
            value = term * recency[p] ** rec_w * (0.5 + importance[p] / 2) ** w["importance"]
            return float(value * (REPLACED_WEIGHT if p in demoted else 1.0))

        # The query-level terms (ADR 0090, ADR 0095): the same for every item of the query.
        absent = (matching.absent, matching.absent_names) if matching is not None else (0.0, 0.0)
        detail = matching.detail if matching is not None else 0.0
        # The memory holding the ids the query quotes is relevant whatever else (ADR 0117);
        # one holding no value of the kind it asks for is no answer (ADR 0120).
        floors = id_floors(positions, matching) if matching is not None else {}
        kind = asked(ask.query) if matching is not None else None
        other = owned(ask.query) if matching is not None else None  # another owner's (0169)
        # One holding the ids quoted, which its replacement does not, is asked about (ADR 0136).
        demoted = {p: n for p, n in replaced.items() if not held(floors, p) or held(floors, n)}

        def work(batch: Sequence[int]) -> None:
            """Work out the relevance and the score of ``batch`` (ADR 0051)."""
            texts: Mapping[int, str] = {}
            if matching is not None:
                work_out(ranked, batch, matching)
                texts = kind_texts(kind or other, batch, matching)
            for p in batch:
                c = ranked[p]
                if calibration is None:
                    relevance[p] = c.match or 0.0
                else:
                    relevance[p] = relevance_of(calibration, c, best, absent, detail)
                if p in floors:  # (the least, the share kept)
                    relevance[p] = max(relevance[p], floors[p][0]) * floors[p][1]
                if kind is not None and not kind.held(texts.get(p, "")):
                    relevance[p] = min(relevance[p], NO_VALUE)
                if other is not None and other.apart(texts.get(p, "")):
                    relevance[p] = min(relevance[p], NO_VALUE)
                total[p] = scored(relevance[p] ** w["relevance"], p)

        # A replaced memory floored out by its weight still brings in its replacement, which
        # takes its relevance: floor only once the replacements are in.
        first = ask._replace(min_score=0.0) if replaced else ask
        if calibration is None or matching is None or not self.lazy:
            work(positions)
            ranking = sorted(positions, key=lambda p: (-total[p], -p))
            kept, folded = fold(ranking, rows, matching)
            order = [p for p in kept if total[p] >= first.min_score][: ask.k]
        else:
            cosines(ranked, positions, matching)  # one batched read: the ceiling's tightest
            most = share_ceilings(positions, matching)  # the texts read, not split
            tops = ceilings(calibration, ranked, positions, matching, best, most)
            tops.update({p: max(tops[p], lo) * kept for p, (lo, kept) in floors.items()})
            bound = {p: scored(tops[p] ** w["relevance"], p) for p in positions}
            order, folded = lazily(positions, bound, total, work, first, rows, matching)
        if replaced:
            for p, n in copied_replacements(folded, replaced).items():  # (ADR 0155)
                replaced[p] = n
                if not held(floors, p) or held(floors, n):
                    demoted[p] = n
            order = with_replacements(order, ranked, demoted, folded, relevance, work)
            for p in order:  # a replacement brought in: its score with the relevance it took
                total[p] = scored(relevance[p] ** w["relevance"], p)
            order = sorted(order, key=lambda p: (-total[p], -p))
            order = below_replacements(order, total, demoted, ask.min_score)
            order = [p for p in order if total[p] >= ask.min_score][: ask.k]
        groups = grouped(conn, order, rows, folded, self.agent, ask.cut)
        events = self.ledger.get(order) if order else []
        items = []
        for p, event in zip(order, events, strict=True):
            if not scopes.visible_to(event, self.agent):
                continue  # the store's visibility is not the ledger's: an edited row (ADR 0141)
            c = ranked[p]
            group = groups.get(p, (p,))
            items.append(
                Recalled(
                    event,
                    total[p],
                    relevance[p],
                    recency[p],
                    importance[p],
                    c.via,
                    c.fused,
                    c.bm25,
                    c.cosine,
                    c.match or 0.0,
                    copies=len(group),
                    copy_positions=group,
                    # A copy does not replace what it copies (ADR 0119).
                    replaced_by=None if replaced.get(p) in group else replaced.get(p),
                )
            )
        return items

    def own_memories(self, positions: Sequence[int], verb: str, where: str = "") -> list[int]:
        """Return ``positions`` if each holds a memory this agent observed, else raise.

        ``verb`` and ``where`` word the refusal ("archives", "supersedes"; a prefix).

        Raises:
            UnknownMemoryError: a position holds no memory.
            MemoryOwnerError: a position holds another agent's memory.
        """
        wanted = checked_positions(positions)
        head = self.ledger.head()
        present = sorted(p for p in wanted if p <= head)
        events = {e.position: e for e in self.ledger.get(present)} if present else {}
        for position in wanted:
            event = events.get(position)
            if event is None or event.kind != "memory.observed":
                found = "no event" if event is None else f"a {event.kind} event"
                raise UnknownMemoryError(f"{where}position {position} holds {found}, not a memory")
            if event.payload.agent != self.agent:
                raise MemoryOwnerError(
                    f"{where}position {position} holds a memory of agent {event.payload.agent!r};"
                    f" agent {self.agent!r} {verb} only its own"
                )
        return wanted


class _Ask(NamedTuple):
    """What scoring one recall needs to know of the question."""

    query: str
    k: int
    at_us: int
    cut: int | None
    weights: Mapping[str, float]
    min_score: float
    valid_us: int  # the valid time asked about (default: the record time asked about)
