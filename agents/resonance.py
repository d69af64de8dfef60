"""Resonance: the candidates a context is cut from, found and scored over the projections.

:class:`Probe` holds one build's reads inside one snapshot of the projection store and runs
the first three steps of :func:`engram.agents.context.build_context` (ADR 0037): **probe**
(the semantic and lexical seeds, ``SEEDS`` each), **bloom** (up to ``hops`` hops from the
strongest ``BEAM`` nodes of each hop) and **score** (resonance, a weighted sum of components
in 0..1, with the rules, signals and doctrine offered beside the recalled items).
:class:`ContextWeights` says how resonance weighs its components and how far bloom and trim
go; :func:`frame_text` says what an item says in a frame.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime

import numpy as np

from engram.agents import doctrine, guidance, scopes
from engram.agents.folding import replaced_among
from engram.agents.frames import Candidate, frame_of, top_k
from engram.agents.memory import REPLACED_WEIGHT, AgentMemory
from engram.agents.ordering import below_replacements, lift_replacements
from engram.ledger import Event
from engram.projections import (
    activation,
    concepts,
    inbox,
    lexical,
    rules,
    salience,
    semantic,
    suggestions,
)
from engram.projections.errors import ProjectionError, QueryError
from engram.projections.timetravel import micros

#: Seeds each path brings (semantic and lexical, for memories and for concepts).
SEEDS = 32
#: How many of a hop's nodes (the strongest) spread to their neighbours.
BEAM = 16
#: What a bloomed neighbour keeps of its parent's pull per hop.
HOP_DECAY = 0.8
#: Items told this close to a memory (and at most this many positions away) are its episode.
EPISODE_GAP_US = 30 * 60 * 1_000_000
EPISODE_RADIUS = 3
_EPISODIC = (*lexical.MEMORY_TYPES, *lexical.SCAR_TYPES, *lexical.REFLECTION_TYPES)
_US_PER_DAY = 86_400_000_000


@dataclass(frozen=True)
class ContextWeights:
    """How resonance weighs its components, and how far bloom and trim go (ADR 0037).

    ``influence`` weighs the sway of ``influences`` connections (ADR 0083). Each node type
    keeps its top k (:data:`engram.agents.frames.TOP_K`, ADR 0082): ``top_k`` overrides
    some types (``{"snippet": 20}``), ``per_type`` gives every other type one cap.
    ``rules_clear`` is the background test's gap for situational rules (ADR 0092: those that
    stand this far clear of the rest are served; :data:`engram.agents.guidance.CLEAR` by
    default); None serves them by the margin of ADR 0077 instead (more rules, fewer apply).
    """

    similarity: float = 1.0
    edge: float = 0.5
    recency: float = 0.2
    usage: float = 0.1
    task: float = 0.3
    influence: float = 0.3
    hops: int = 2
    fanout: int = 6
    per_type: int | None = None
    half_life_days: float = 7.0
    top_k: Mapping[str, int] = field(default_factory=dict)
    rules_clear: float | None = guidance.CLEAR

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "top_k" or (f.name in ("per_type", "rules_clear") and value is None):
                continue
            if f.name in ("hops", "fanout", "per_type"):
                if not isinstance(value, int) or isinstance(value, bool):
                    raise QueryError(f"weights.{f.name} must be an int, got {value!r}")
            elif not isinstance(value, int | float) or isinstance(value, bool):
                raise QueryError(f"weights.{f.name} must be a number, got {value!r}")
            elif not math.isfinite(value) or value < 0:
                raise QueryError(f"weights.{f.name} must be finite and >= 0, got {value!r}")
        if not 0 <= self.hops <= 3:
            raise QueryError(f"weights.hops must be 0..3, got {self.hops}")
        if not 1 <= self.fanout <= 6:
            raise QueryError(f"weights.fanout must be 1..6, got {self.fanout}")
        if self.per_type is not None and not 1 <= self.per_type <= 100:
            raise QueryError(f"weights.per_type must be 1..100, got {self.per_type}")
        if self.half_life_days <= 0:
            raise QueryError(f"weights.half_life_days must be > 0, got {self.half_life_days}")
        if self.rules_clear is not None and not self.rules_clear <= 1:
            raise QueryError(f"weights.rules_clear must be 0..1, got {self.rules_clear}")
        if not isinstance(self.top_k, Mapping):
            raise QueryError(f"weights.top_k must map node types to ints, got {self.top_k!r}")
        for node_type, k in self.top_k.items():
            if not isinstance(node_type, str) or not node_type:
                raise QueryError(f"weights.top_k: a node type must be a name, got {node_type!r}")
            if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 100:
                raise QueryError(f"weights.top_k[{node_type!r}] must be an int 1..100, got {k!r}")

    def cap(self, node_type: str) -> int:
        """Return how many items of ``node_type`` the frames keep at most."""
        if node_type in self.top_k:
            return self.top_k[node_type]
        return self.per_type if self.per_type is not None else top_k(node_type)


@dataclass
class _Node:
    """A candidate while it is found and bloomed: where from, and how strongly pulled."""

    similarity: float = 0.0
    edge: float = 0.0
    hop: int = 0
    concept: str | None = None  # the concept id, for a concept


class Probe:
    """One build's reads, inside one snapshot of the projection store."""

    def __init__(
        self, memory: AgentMemory, conn: sqlite3.Connection, query: str, task: str, cut: int | None
    ) -> None:
        self.memory, self.conn, self.cut = memory, conn, cut
        self.agent = memory.agent
        self.query_terms = lexical.terms(conn, query, prune=False).weights
        self.task, self.task_words = task, set(lexical.tokens(task))
        self.query = query
        self.vector: np.ndarray | None = None
        self.notes: list[str] = []
        self.sway: dict[str, tuple[frozenset[str], float]] = {}
        #: What is offered beside the recalled items, each scored by :meth:`_ledger_items`
        #: into its frame: a new source is one more entry.
        self.sources: list[Callable[[ContextWeights, int], list[Candidate]]] = [
            self._rules,
            self._signals,
        ]

    def influences(self, at: datetime) -> None:
        """Read the sway ``influences`` connections put on each neuron concept now."""
        try:
            read = activation.influence(self.conn, at, rate=self.memory.rate)
        except sqlite3.Error:  # no neuron graph in this store: nothing sways
            return
        self.sway = {c: (frozenset(lexical.tokens(c)), v) for c, v in read.items()}

    def _influence(self, event: Event, text: str) -> float:
        """Return the sway on the concepts ``event`` stands for: its author's role, or the
        words of a concept it holds every one of (ADR 0083)."""
        if not self.sway:
            return 0.0
        author = getattr(event.payload, "agent", None)
        words = set(lexical.tokens(text))
        total = sum(
            value
            for concept, (needed, value) in self.sway.items()
            if concept == author or (needed and needed <= words)
        )
        return min(total, 1.0)

    def seeds(self) -> dict[int, _Node]:
        """Return the semantic and lexical seeds, memories and concepts, by position."""
        found: dict[int, _Node] = {}
        for types in (_EPISODIC, lexical.CONCEPT_TYPES):
            try:
                hits = lexical.search(
                    self.conn, self.query, SEEDS, agent=self.agent, types=types, as_of_us=self.cut
                )
            except (ProjectionError, sqlite3.Error) as exc:
                self.notes.append(f"lexical index unavailable ({exc})")
                hits = []
            for h in hits:
                node = found.setdefault(h.position, _Node())
                node.similarity = max(node.similarity, h.match)
            self._semantic(found, types)
        return found

    def _semantic(self, found: dict[int, _Node], types: tuple[str, ...]) -> None:
        memory = self.memory
        if memory.embedder is None or memory.searcher is None:
            return
        try:
            if self.vector is None:
                memory.searcher.sync(self.conn)
                self.vector = np.ascontiguousarray(
                    memory.embedder.embed_transient([self.query])[0], dtype=np.float32
                )
            hits = memory.searcher.search(self.vector, SEEDS, agent=self.agent, types=types)
        except Exception as exc:  # a model or index failure degrades, never fails the build
            self.notes.append(f"semantic index unavailable ({type(exc).__name__}: {exc})")
            return
        for h in hits:
            node = found.setdefault(h.position, _Node())
            node.similarity = max(node.similarity, min(max(h.score, 0.0), 1.0))

    def bloom(self, found: dict[int, _Node], weights: ContextWeights) -> None:
        """Add up to ``hops`` hops of neighbours: concept links and memories' episodes."""
        if weights.hops == 0 or not found:
            return
        concept_at = lexical.concept_ids(self.conn, list(found))
        for position, concept_id in concept_at.items():
            found[position].concept = concept_id
        frontier = dict.fromkeys(found, 1)
        for hop in range(1, weights.hops + 1):
            pull = {p: max(found[p].similarity, found[p].edge) for p in frontier}
            # Only the strongest nodes of a hop spread: the bloom stays bounded.
            frontier = dict.fromkeys(sorted(pull, key=lambda p: (-pull[p], p))[:BEAM], hop)
            fresh: dict[int, float] = {}
            ids = {c: p for p in frontier if (c := found[p].concept) is not None}
            if ids:
                reached = concepts.spread(
                    self.conn, list(ids), agent=self.agent, fanout=weights.fanout
                )
                for concept_id, targets in reached.items():
                    for target_position, target_id, weight in targets:
                        gain = pull[ids[concept_id]] * weight * HOP_DECAY
                        if gain > fresh.get(target_position, 0.0):
                            fresh[target_position] = gain
                        found.setdefault(target_position, _Node(hop=hop)).concept = target_id
            episodic = [p for p in frontier if not found[p].concept]
            if episodic:
                near = lexical.neighbours(
                    self.conn,
                    episodic,
                    EPISODE_RADIUS,
                    agent=self.agent,
                    gap_us=EPISODE_GAP_US,
                    types=_EPISODIC,
                    as_of_us=self.cut,
                )
                for position, around in near.items():
                    for target, distance in sorted(around, key=lambda t: t[1])[: weights.fanout]:
                        gain = pull[position] * HOP_DECAY**distance
                        if gain > fresh.get(target, 0.0):
                            fresh[target] = gain
            frontier = {}
            for target, gain in fresh.items():
                node = found.setdefault(target, _Node(hop=hop))
                if gain > node.edge:
                    if node.edge == 0 and node.similarity == 0:
                        frontier[target] = hop  # reached for the first time: expand it next
                    node.edge = gain
            if not frontier:
                return

    def score(
        self, found: dict[int, _Node], weights: ContextWeights, at_us: int
    ) -> list[Candidate]:
        """Read the candidates' events and score them; add the rules and signals."""
        events = {e.position: e for e in self.memory.ledger.get(sorted(found))} if found else {}
        cosines = self._cosines(list(found))
        usage = self._usage(list(found))
        refused = self._refused(list(events.values()))
        seen = [
            (position, node, event) for position, node in found.items()
            if (event := events.get(position)) is not None and self._visible(event)
            and (self.cut is None or micros(event.at) <= self.cut)
        ]  # fmt: skip
        # Ages count from the newest candidate, or the frame's time if earlier (ADR 0108).
        anchor = min(at_us, max((micros(e.at) for _, _, e in seen), default=at_us))
        out: list[Candidate] = []
        for position, node, event in seen:
            text = frame_text(event, refused=event.id in refused)
            similarity = max(
                node.similarity,
                min(max(cosines.get(position, 0.0), 0.0), 1.0),
                lexical.share(self.query_terms, text),
            )
            components = {
                "similarity": similarity,
                "edge": node.edge,
                "recency": self._recency(event, anchor, weights),
                "usage": 1 - 1 / (1 + usage.get(position, 0)),
                "task": self._task(text),
                "influence": self._influence(event, text),
            }
            kind = _item_type(event)
            score = _resonance(components, weights)
            out.append(
                Candidate(
                    event, kind, frame_of(kind), score, components, node.hop, text,
                    refused=event.id in refused,
                )
            )  # fmt: skip
        out = self._below_replacements(out, at_us)
        for source in self.sources:
            out += source(weights, at_us)
        out += self._doctrine(events, found, weights, at_us)
        return out

    def _below_replacements(self, out: list[Candidate], at_us: int) -> list[Candidate]:
        """Return ``out`` with each replaced memory labelled with what replaced it and served
        below it (ADR 0052, 0106).

        A replacement that is a candidate too takes at least the resonance of what it
        replaced: it answers now what the replaced one answered ("rescheduled to 04:30" for
        a question about when the backup runs). The replaced one is weighed down as recall
        weighs it and scores just under its replacement.
        """
        replaced = replaced_among(
            self.conn, [c.event.position for c in out], self.cut, at_us, self.agent
        )
        if not replaced:
            return out
        scores = {c.event.position: c.score for c in out}
        lift_replacements(scores, replaced)
        for old in replaced:
            if old in scores:
                scores[old] *= REPLACED_WEIGHT
        below_replacements(list(scores), scores, replaced, 0.0)
        return [
            replace(c, score=scores[p], replaced_by=replaced.get(p))
            if scores[p] != c.score or p in replaced
            else c
            for c in out
            for p in (c.event.position,)
        ]

    def _doctrine(
        self, events: dict[int, Event], found: dict[int, _Node], weights: ContextWeights, at_us: int
    ) -> list[Candidate]:
        """Tier 2: the notes and skills the task calls for, or its scars link to (ADR 0079)."""
        held = {
            f"scar:{e.id}": max(found[p].similarity, found[p].edge)
            for p, e in events.items()
            if e.kind == "scar.recorded"
        }
        picked = doctrine.served(
            self.conn,
            f"{self.query} {self.task}",
            held,
            self.memory.embedder,
            clear=weights.rules_clear,
            in_force=self._in_force,
        )
        return [
            c
            for kind in ("note", "skill")
            for c in self._ledger_items(
                [(s.entry.position, s.score, s.entry.text) for s in picked if s.entry.kind == kind],
                kind,
                weights,
                at_us,
            )
        ]

    def _cosines(self, positions: list[int]) -> dict[int, float]:
        if self.vector is None or not positions:
            return {}
        try:
            return semantic.stored_cosines(self.conn, positions, self.vector)
        except sqlite3.Error:
            return {}

    def _usage(self, positions: list[int]) -> dict[int, int]:
        try:
            return salience.recall_counts(self.conn, positions)
        except sqlite3.Error:  # no salience projection in this store: no usage known
            return {}

    def _recency(self, event: Event, at_us: int, weights: ContextWeights) -> float:
        age_days = max(at_us - micros(event.at), 0) / _US_PER_DAY
        return math.exp(-age_days * math.log(2) / weights.half_life_days)

    def _task(self, text: str) -> float:
        if not self.task_words:
            return 0.0
        return len(self.task_words & set(lexical.tokens(text))) / len(self.task_words)

    def _visible(self, event: Event) -> bool:
        payload = event.payload
        visibility = getattr(payload, "visibility", "public")
        return visibility == "public" or getattr(payload, "agent", None) == self.agent

    @functools.cached_property
    def _in_force(self) -> tuple[list[rules.Rule], dict[str, list[str]]] | None:
        """The rules in force and their evidence, read once for the frame (the rules and the
        doctrine's background both weigh them); None where the store has no rule book."""
        try:
            every = rules.active(self.conn)
            return every, guidance.evidence_of(self.conn, every)
        except ProjectionError:
            return None

    def _rules(self, weights: ContextWeights, at_us: int) -> list[Candidate]:
        """The rules for this task: always-on ones, and situational ones it calls for by
        meaning (:mod:`engram.agents.guidance`); each agent's constraints, placed first."""
        in_force = self._in_force
        if in_force is None:
            return []
        every, evidence = in_force
        served = guidance.serve(
            every,
            f"{self.query} {self.task}",
            evidence,
            self.memory.embedder,
            clear=weights.rules_clear,
        )
        always = {s.rule.position for s in served if s.rule.always}
        return [
            replace(c, always=True) if c.event.position in always else c
            for c in self._ledger_items(
                [(s.rule.position, s.score, rules.one_line(s.rule.text)) for s in served],
                "rule",
                weights,
                at_us,
            )
        ]

    def _refused(self, events: Sequence[Event]) -> set[str]:
        """Return the ids of the scars among ``events`` whose lesson a reviewer refused."""
        ids = [e.id for e in events if e.kind == "scar.recorded"]
        if not ids:
            return set()
        try:
            return suggestions.refused_scars(self.conn, ids)
        except ProjectionError:
            return set()

    def _signals(self, weights: ContextWeights, at_us: int) -> list[Candidate]:
        """The agent's unacknowledged signals: its scratchpad."""
        try:
            pending = inbox.pending(self.conn, self.agent, limit=SEEDS)
        except ProjectionError:
            return []
        return self._ledger_items(
            [
                (
                    s.position,
                    lexical.share(self.query_terms, f"{s.topic} {s.body}"),
                    f"{s.sender} → {s.topic}: {s.body}",
                )
                for s in pending
            ],
            "signal",
            weights,
            at_us,
        )

    def _ledger_items(
        self,
        found: Sequence[tuple[int, float, str]],
        kind: str,
        weights: ContextWeights,
        at_us: int,
    ) -> list[Candidate]:
        if not found:
            return []
        events = {e.position: e for e in self.memory.ledger.get([p for p, _, _ in found])}
        out = []
        for position, similarity, text in found:
            event = events[position]
            if self.cut is not None and micros(event.at) > self.cut:
                continue
            components = {
                "similarity": similarity,
                "edge": 0.0,
                "recency": self._recency(event, at_us, weights),
                "usage": 0.0,
                "task": self._task(text),
                "influence": self._influence(event, text),
            }
            score = _resonance(components, weights)
            out.append(Candidate(event, kind, frame_of(kind), score, components, 0, text))
        return out


def _resonance(components: dict[str, float], weights: ContextWeights) -> float:
    return float(sum(getattr(weights, name) * value for name, value in components.items()))


def _item_type(event: Event) -> str:
    if event.kind in ("memory.observed", "scar.recorded", "memory.reflected", "concept.upserted"):
        return lexical.item_text(event)[1]
    return event.kind


def frame_text(event: Event, *, refused: bool = False) -> str:
    """Return what an indexed item says in a frame: a memory's or reflection's text, a scar's
    what and lesson, a concept's indexed text.

    A scar whose lesson a reviewer ``refused`` says what happened only: the refused lesson
    never reaches an agent as guidance (ADR 0057).
    """
    p = event.payload
    if event.kind == "scar.recorded":
        return scopes.item_text(event, refused=refused)
    if event.kind == "concept.upserted":
        return lexical.concept_text(p.id, p.label, p.payload)
    return str(p.text)
