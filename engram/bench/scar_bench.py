"""Scar recall: its latency beside memory recall's, and what the score bands mean.

- **Latency**: one store holds 10,000 memories and 10,000 scars (2,000 each with
  ``--quick``), their texts built from LoCoMo sentences, importance and age drawn (seeded),
  vectors from the hash embedder (the query embedding is in both figures alike). The LoCoMo
  questions are recalled (``k=10``, not recorded) with ``scope="scars"`` and, in turn, as
  plain memory recall: the reference is memory recall on the same store, so the ratio says
  what the scope's over-fetch and re-rank cost (> 1: scar recall is faster).
- **Bands**: the similarity scar recall reads its bands on (cosine of the query and the
  item), for pairs labelled from LoCoMo: a question and a turn that answers it (relevant), a
  question and a turn of another conversation (irrelevant). For the hash embedder and, with
  the ``embeddings`` extra, all-MiniLM-L6-v2: the share of each kind of pair in each band
  (≥ 0.75 highly relevant, 0.65–0.75 relevant, below: check by hand) and their medians.
"""

from __future__ import annotations

import random
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np

from engram.agents.memory import AgentMemory
from engram.agents.scopes import HIGHLY_RELEVANT, RELEVANT
from engram.bench import locomo
from engram.bench.common import Config, Figure, log, remove_tree
from engram.bench.recall_bench import minilm
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryObserved, ScarRecorded, Visibility
from engram.projections.embedding import Embedder, HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.scars import ScarsTable
from engram.projections.semantic import SemanticIndex, VectorSearcher

K = 10
NOW = datetime(2026, 11, 1, tzinfo=UTC)


def latency(config: Config) -> list[Figure]:
    """Scar recall (scope ``scars``) against memory recall on one store, per question."""
    n = 2_000 if config.quick else 10_000
    conversations = locomo.load(config.locomo)
    texts = locomo.synthetic_memories(conversations, 3 * n, config.seed + 12)
    questions = [q.text for c in conversations for q in c.questions]
    queries = random.Random(config.seed).sample(questions, min(len(questions), 200))
    root = f"{config.scratch}/scars"
    embedder = HashEmbedder()
    projections = [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder), ScarsTable()]
    try:
        with (
            Ledger.open(f"{root}.db", default_registry(), durability="fast") as ledger,
            ProjectionEngine(ledger, f"{root}.store", projections) as engine,
        ):
            _fill(ledger, texts, n, config.seed)
            log(f"  scar recall: catching up {ledger.head():,} events")
            engine.catch_up()
            store = f"{root}.store"
            searcher = VectorSearcher(store, embedder.dimension, str(embedder.fingerprint))
            agent = AgentMemory("a0", ledger, engine, embedder=embedder, searcher=searcher)
            return _measure(config, agent, queries, n)
    finally:
        remove_tree(f"{root}.store")


def _fill(ledger: Ledger, texts: list[str], n: int, seed: int) -> None:
    rng = random.Random(seed + 13)
    events = []
    for i in range(n):
        author = f"a{i % 8}"
        at = NOW - timedelta(days=rng.uniform(0, 730))
        visibility: Visibility = "private" if i % 10 == 0 else "public"
        events.append(
            NewEvent(
                stream=f"agent:{author}",
                kind="memory.observed",
                payload=MemoryObserved(
                    agent=author,
                    text=texts[i],
                    importance=rng.randint(1, 10),
                    visibility=visibility,
                ),
                id=str(uuid.UUID(int=(seed << 32) | (2 * i + 1))),
                at=at,
            )
        )
        events.append(
            NewEvent(
                stream=f"agent:{author}",
                kind="scar.recorded",
                payload=ScarRecorded(
                    agent=author,
                    kind=rng.choice(("failure", "failure", "victory")),
                    what=texts[n + i],
                    lesson=texts[2 * n + i],
                    importance=rng.randint(1, 10),
                    visibility=visibility,
                ),
                id=str(uuid.UUID(int=(seed << 32) | (2 * i + 2))),
                at=at,
            )
        )
    for start in range(0, len(events), 1_000):
        ledger.append(events[start : start + 1_000])


def _measure(config: Config, agent: AgentMemory, queries: list[str], n: int) -> list[Figure]:
    as_of = NOW + timedelta(days=1)
    for query in queries[:5]:  # warm: the vector index is loaded, caches are hot
        agent.recall(query, K, as_of=as_of, record=False, scope="scars")
        agent.recall(query, K, as_of=as_of, record=False)
    name = f"{n // 1000}k scars + {n // 1000}k memories"
    p50 = Figure(f"scar recall p50, {name}", "ms", "memory recall p50, same store", None)
    p99 = Figure(f"scar recall p99, {name}", "ms", "memory recall p99, same store", None)
    for rep in range(config.repeat):
        ours: list[float] = []
        plain: list[float] = []
        for i, query in enumerate(queries):
            calls = [("scars", ours), ("memories", plain)]
            for scope, times in calls if (i + rep) % 2 == 0 else calls[::-1]:
                started = time.perf_counter()
                agent.recall(query, K, as_of=as_of, record=False, scope=scope)
                times.append(1000 * (time.perf_counter() - started))
        for figure, q in ((p50, 50), (p99, 99)):
            figure.engram_samples.append(float(np.percentile(ours, q)))
            figure.reference_samples.append(float(np.percentile(plain, q)))
        log(f"  scar recall: repetition {rep + 1}/{config.repeat} done")
    note = (
        f"{len(queries)} LoCoMo questions, k={K}, as_of fixed, not recorded; hash vectors,"
        " query embedding included in both"
    )
    p50.note = p99.note = note
    return [p50, p99, *bands(config)]


def bands(config: Config) -> list[Figure]:
    """Where relevant and irrelevant LoCoMo pairs fall among the bands, per embedder."""
    conversations = locomo.load(config.locomo)
    rng = random.Random(config.seed + 14)
    relevant: list[tuple[str, str]] = []
    irrelevant: list[tuple[str, str]] = []
    for c, conversation in enumerate(conversations):
        turns = {t.dia_id: t.text for t in conversation.turns}
        others = [t.text for o in conversations[:c] + conversations[c + 1 :] for t in o.turns]
        for question in conversation.questions:
            answers = [turns[d] for d in sorted(question.evidence) if d in turns]
            if answers and others:
                relevant.append((question.text, rng.choice(answers)))
                irrelevant.append((question.text, rng.choice(others)))
    picked = sorted(rng.sample(range(len(relevant)), min(300, len(relevant))))
    relevant = [relevant[i] for i in picked]
    irrelevant = [irrelevant[i] for i in picked]
    embedders: list[tuple[str, Embedder | None]] = [
        ("hash", HashEmbedder()),
        ("MiniLM", minilm(config.embedding_cache)),
    ]
    figures = []
    for name, embedder in embedders:
        figure = Figure(f"relevant pairs at >= {RELEVANT}, {name}", "recall", "-", None)
        if embedder is None:
            figure.skipped = "needs the 'embeddings' extra (all-MiniLM-L6-v2)"
            figures.append(figure)
            continue
        good, bad = _cosines(embedder, relevant), _cosines(embedder, irrelevant)
        figure.engram_samples.append(_share(good, RELEVANT, 2.0))
        figure.note = (
            f"similarity of {len(good)} relevant / {len(bad)} irrelevant LoCoMo pairs; "
            f"relevant: {_shares(good)}, {_percentiles(good)}; "
            f"irrelevant: {_shares(bad)}, {_percentiles(bad)}"
        )
        log(f"  bands, {name}: {figure.note}")
        figures.append(figure)
    return figures


def _cosines(embedder: Embedder, pairs: list[tuple[str, str]]) -> list[float]:
    queries = embedder.embed([q for q, _ in pairs])
    items = embedder.embed([t for _, t in pairs])
    return [float(v) for v in np.einsum("ij,ij->i", queries, items)]


def _share(values: list[float], low: float, high: float) -> float:
    return sum(low <= v < high for v in values) / len(values)


def _percentiles(values: list[float]) -> str:
    p10, p50, p90, p99 = np.percentile(values, [10, 50, 90, 99])
    return f"p10 {p10:.2f} / p50 {p50:.2f} / p90 {p90:.2f} / p99 {p99:.2f}"


def _shares(values: list[float]) -> str:
    return (
        f"{_share(values, HIGHLY_RELEVANT, 2.0):.0%} >= {HIGHLY_RELEVANT}, "
        f"{_share(values, RELEVANT, HIGHLY_RELEVANT):.0%} in {RELEVANT}-{HIGHLY_RELEVANT}, "
        f"{_share(values, -2.0, RELEVANT):.0%} below"
    )
