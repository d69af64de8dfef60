"""`engram bench --suite quality`: what recall serves a user, on generated probes.

One figure per family of :mod:`engram.bench.quality_probes` (and of
:mod:`engram.bench.quality_notes`), each beside its goal:

- updates: the share of cases where the memory true now ranks above the one it replaced
  (the replaced one absent counts as above); the share of served memories the store knows
  replaced that carry the label, and how many stale ones were served unlabelled because
  detection did not find their replacement;
- copies: the distinct facts in a top 10 (copies of one fact count once);
- unanswerable: how often the documented default floor (``min_score``) tells answerable
  questions from unanswerable ones by whether anything is served, beside the best single
  threshold on the top score; ``unanswerable-notes`` is the same figure on a second family
  (:mod:`engram.bench.quality_notes`: other topics, other wording, a store of 300 notes),
  a check of the floor on questions it was not chosen on (ADR 0090);
- ids: the share of queries quoting an id whose one holder ranks first;
- updates-things: the updates figure on notes about things, not people
  (:mod:`engram.bench.quality_things`: held out, ADR 0106);
- detection (:mod:`engram.bench.quality_detection`): precision and recall of supersession
  detection, on the probes' templates and on held-out ones (people, and things).

Each runs with the hash embedder and, with the ``embeddings`` extra, all-MiniLM-L6-v2.
Recall runs with its defaults (the point is what a user gets without tuning), unrecorded.
The probes are generated from the run's seed (printed), so a run is reproducible.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from engram.agents.memory import DEFAULT_MIN_SCORE, AgentMemory
from engram.bench import quality_notes, quality_things
from engram.bench import quality_probes as probes
from engram.bench.common import Config, Figure, log, remove_tree
from engram.bench.quality_detection import detection_figures
from engram.bench.recall_bench import minilm
from engram.ledger import Ledger, default_registry
from engram.projections.base import Projection
from engram.projections.copies import Copies
from engram.projections.embedding import Embedder, HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.supersession import Supersessions, replacements

__all__ = ["GOALS", "quality", "run_probes"]

AGENT = "user"
#: The goals: the figure each family must reach.
GOALS = {"updates": 0.9, "copies": 9.5, "unanswerable": 0.9, "unanswerable-notes": 0.9,
         "ids": 1.0, "updates-things": 0.9}  # fmt: skip
UNITS = {"updates": "share", "copies": "distinct", "unanswerable": "share",
         "unanswerable-notes": "share", "ids": "share", "updates-things": "share"}  # fmt: skip


@dataclass
class Outcome:
    """One family's result under one embedder."""

    family: str
    value: float
    note: str = ""
    extra: dict[str, float] = field(default_factory=dict)


def recall_projections(embedder: Embedder) -> list[Projection]:
    """Return the projections recall reads, as the runtime configures them."""
    return [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder), Copies(), Supersessions()]


def _open(directory: str, embedder: Embedder) -> tuple[Ledger, ProjectionEngine, AgentMemory]:
    ledger = Ledger.open(
        os.path.join(directory, "ledger.db"), default_registry(), durability="fast"
    )
    store = os.path.join(directory, "store")
    engine = ProjectionEngine(ledger, store, recall_projections(embedder))
    searcher = VectorSearcher(store, embedder.dimension, str(embedder.fingerprint))
    # As an opened engram configures it by default (engram.config: supersede = "apply").
    memory = AgentMemory(
        AGENT, ledger, engine, embedder=embedder, searcher=searcher, supersede="apply"
    )
    return ledger, engine, memory


def _fill(memory: AgentMemory, store: probes.Store) -> dict[int, int]:
    """Observe the store's memories in time order; return ``index -> position``."""
    order = sorted(range(len(store.memories)), key=lambda i: (store.memories[i][1], i))
    return {i: memory.observe(store.memories[i][0], at=store.memories[i][1]) for i in order}


def _ask(
    directory: str,
    embedder: Embedder,
    stores: list[probes.Store],
    judge: Callable[[AgentMemory, probes.Case, dict[int, int], datetime], dict[str, float]],
    as_of: datetime,
) -> list[dict[str, float]]:
    results = []
    for number, store in enumerate(stores):
        where = os.path.join(directory, f"s{number}")
        os.makedirs(where)
        ledger, engine, memory = _open(where, embedder)
        try:
            positions = _fill(memory, store)
            engine.catch_up()
            results += [judge(memory, case, positions, as_of) for case in store.cases]
        finally:
            engine.close()
            ledger.close()
    return results


def _updates(
    memory: AgentMemory, case: probes.Case, positions: dict[int, int], as_of: datetime
) -> dict[str, float]:
    assert case.current is not None
    assert case.stale is not None
    result = memory.recall(case.query, 10, record=False, min_score=0.0, as_of=None)
    order = [r.event.position for r in result.items]
    current, stale = positions[case.current], positions[case.stale]
    won = current in order and (stale not in order or order.index(current) < order.index(stale))
    served_stale = [r for r in result.items if r.event.position == stale]
    labelled = [bool(getattr(r, "replaced_by", None)) for r in served_stale]
    with memory.engine.read() as conn:
        known = stale in replacements(conn, [stale])
    return {"won": float(won), "stale_served": float(bool(served_stale)),
            "labelled": float(any(labelled)), "known": float(known)}  # fmt: skip


def _copies(
    memory: AgentMemory, case: probes.Case, positions: dict[int, int], as_of: datetime
) -> dict[str, float]:
    group = {positions[i]: g for i, g in case.groups.items()}
    result = memory.recall(case.query, 10, record=False, min_score=0.0, as_of=None)
    facts = {group.get(r.event.position, -r.event.position) for r in result.items}
    folded = sum(max(getattr(r, "copies", 1) - 1, 0) for r in result.items)
    return {"distinct": float(len(facts)), "served": float(len(result.items)),
            "folded": float(folded)}  # fmt: skip


def _unanswerable(
    memory: AgentMemory, case: probes.Case, positions: dict[int, int], as_of: datetime
) -> dict[str, float]:
    every = memory.recall(case.query, 10, record=False, min_score=0.0, as_of=None)
    floored = memory.recall(case.query, 10, record=False, as_of=None)
    top = every.items[0].score if every.items else 0.0
    return {"answerable": float(case.answerable), "top": top, "served": len(floored.items),
            "kind": float(quality_notes.KINDS.index(case.family))
            if case.family in quality_notes.KINDS else -1.0}  # fmt: skip


def _ids(
    memory: AgentMemory, case: probes.Case, positions: dict[int, int], as_of: datetime
) -> dict[str, float]:
    assert case.target is not None
    result = memory.recall(case.query, 10, record=False, min_score=0.0, as_of=None)
    first = result.items[0].event.position if result.items else None
    return {"first": float(first == positions[case.target])}


def best_threshold(rows: list[dict[str, float]]) -> tuple[float, float]:
    """Return the threshold on the top score that best separates the two classes, and its
    accuracy (answerable: top >= threshold)."""
    tops = sorted({r["top"] for r in rows} | {0.0, 1.01})
    best = (0.0, 0.0)
    for t in tops:
        right = sum((r["top"] >= t) == bool(r["answerable"]) for r in rows)
        if right / len(rows) > best[1]:
            best = (t, right / len(rows))
    return best


def run_probes(embedder: Embedder, seed: int, scratch: str) -> list[Outcome]:
    """Generate the probes from ``seed`` and recall them over ``embedder``; return outcomes."""
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(days=400)
    rng = random.Random(seed)
    directory = tempfile.mkdtemp(prefix="quality-", dir=scratch)
    outcomes = []
    try:
        sets = {
            "updates": (probes.updates(rng, start), _updates),
            "copies": (probes.copies(rng, start), _copies),
            "unanswerable": (probes.unanswerable(rng, start), _unanswerable),
            "unanswerable-notes": (quality_notes.notes(rng, start), _unanswerable),
            "ids": (probes.ids(rng, start), _ids),
            # Its own generator, so the families above keep their draws (ADR 0106).
            "updates-things": (
                quality_things.thing_updates(random.Random(f"{seed}:things"), start),
                _updates,
            ),
        }
        for family, (stores, judge) in sets.items():
            rows = _ask(os.path.join(directory, family), embedder, stores, judge, now)
            outcomes.append(_outcome(family, rows))
    finally:
        remove_tree(directory)
    return outcomes


def _right(row: dict[str, float]) -> dict[str, float]:
    """Return whether the floor classed ``row``'s question right, as a row of one figure."""
    return {"right": float((row["served"] > 0) == bool(row["answerable"]))}


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else 0.0


def _outcome(family: str, rows: list[dict[str, float]]) -> Outcome:
    if family.startswith("updates"):
        stale = [r for r in rows if r["stale_served"]]
        replaced = [r for r in stale if r["known"]]
        labelled = _mean(replaced, "labelled") if replaced else 1.0
        return Outcome(
            family,
            _mean(rows, "won"),
            f"{sum(r['won'] for r in rows):.0f}/{len(rows)} current above stale; "
            f"replaced ones served labelled: {labelled:.0%} of {len(replaced)}; "
            f"stale ones served that detection missed: {len(stale) - len(replaced)}",
        )
    if family == "copies":
        return Outcome(
            family,
            _mean(rows, "distinct"),
            f"{_mean(rows, 'served'):.1f} served per query; "
            f"{_mean(rows, 'folded'):.1f} copies folded into them",
        )
    if family.startswith("unanswerable"):
        floor = DEFAULT_MIN_SCORE
        right = sum((r["served"] > 0) == bool(r["answerable"]) for r in rows) / len(rows)
        threshold, accuracy = best_threshold(rows)
        empty = [r["served"] for r in rows if not r["answerable"]]
        kinds = ""
        for number, kind in enumerate(quality_notes.KINDS):
            mine = [r for r in rows if r["kind"] == number]
            if mine:
                kinds += f"; {kind} right {_mean([_right(r) for r in mine], 'right'):.0%}"
        return Outcome(
            family,
            right,
            f"default floor {floor:g}; best single threshold {threshold:.3f} separates "
            f"{accuracy:.0%}; unanswerable get {sum(empty) / max(len(empty), 1):.1f} items" + kinds,
        )
    return Outcome(
        family, _mean(rows, "first"), f"{sum(r['first'] for r in rows):.0f}/{len(rows)} rank 1"
    )


def quality(config: Config) -> list[Figure]:
    """Run the probes with the hash embedder and MiniLM (if installed); each family's figure."""
    embedders: list[tuple[str, Embedder | None]] = [
        ("hash", HashEmbedder()),
        ("minilm", minilm(config.embedding_cache, onnx=True)),
    ]
    log(f"  quality probes: seed {config.seed}")
    figures = []
    for name, embedder in embedders:
        if embedder is None:
            missing = Figure(f"quality ({name})", "share", "goal", None)
            missing.skipped = "needs the 'embeddings' extra (all-MiniLM-L6-v2)"
            figures.append(missing)
            continue
        for outcome in run_probes(embedder, config.seed, config.scratch):
            goal = GOALS[outcome.family]
            figure = Figure(
                f"quality {outcome.family} ({name})", UNITS[outcome.family], "goal", 1.0
            )
            figure.engram_samples.append(outcome.value)
            figure.reference_samples.append(goal)
            figure.note = outcome.note
            figures.append(figure)
            log(f"    {name:6} {outcome.family:12} {outcome.value:6.3f} (goal {goal:g}): "
                f"{outcome.note}")  # fmt: skip
        figures += detection_figures(name, embedder, config.seed, config.scratch)
    return figures
