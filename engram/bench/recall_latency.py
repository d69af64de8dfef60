"""Recall at scale: latency at 100k memories, HNSW against exact search, the MiniLM rebuild.

The store holds ``recall_memories`` synthetic memories built from LoCoMo sentences (eight
authors, one in ten items private, the three memory types), embedded with all-MiniLM-L6-v2
when the ``embeddings`` extra is installed (hash vectors otherwise, said in the notes). The
vectors go through the engine's own embedding cache; with ``--embedding-cache`` that cache
outlives the run, so the 100k texts are embedded by the model once per machine.

- **Latency**: the LoCoMo questions are recalled (``k=10``, not recorded) with their vectors
  computed beforehand, so the figure is the engine's own time; the query embedding is timed
  on its own. The reference is the raw calls recall makes — the FTS5 ``MATCH ... ORDER BY
  bm25`` statement and the FAISS ``search`` with the same sizes — timed per question, in
  turn with recall.
- **HNSW recall@10**: the searcher's HNSW index against exact inner-product search over the
  same vectors, for the same query vectors.
- **Rebuild**: the semantic index built from an empty store (cold cache) through the façade,
  against raw ``SentenceTransformer.encode`` over the same texts, in turn.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import numpy as np

from engram.agents.memory import AgentMemory
from engram.bench import locomo
from engram.bench.common import Config, Figure, Progress, interleave, log, remove_tree
from engram.bench.recall_bench import minilm
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import MemoryObserved
from engram.projections import lexical
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    Fingerprint,
    FloatArray,
    HashEmbedder,
)
from engram.projections.embedding.st import MINILM, available, bundled_model_path
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import DEFAULT_EXACT_LIMIT, SemanticIndex, VectorSearcher
from engram.projections.store import ProjectionStore, physical

K = 10
AUTHORS = 8
TYPES = ("observation", "plan", "thought")
EMBED_CHUNK = 2_000


class Precomputed(Embedder):
    """An embedder that serves vectors computed beforehand (the query embedding excluded)."""

    provider: ClassVar[str] = "precomputed"

    def __init__(self, like: Embedder, vectors: dict[str, FloatArray]) -> None:
        super().__init__(batch_size=like.batch_size)
        self._like, self._vectors = like, vectors

    @property
    def fingerprint(self) -> Fingerprint:
        return self._like.fingerprint

    @property
    def dimension(self) -> int:
        return self._like.dimension

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        return np.stack([self._vectors[t] for t in texts])


def _embedder(config: Config) -> tuple[CachedEmbedder, str]:
    """Return MiniLM (or hash vectors) behind a cache, and what it is, for the notes."""
    model = minilm(config.embedding_cache)
    if isinstance(model, CachedEmbedder):
        return model, "all-MiniLM-L6-v2"
    fallback: Embedder = model or HashEmbedder()
    cache = EmbeddingCache(os.path.join(config.scratch, "latency-embeddings.db"))
    what = "all-MiniLM-L6-v2" if model else "hash vectors (the 'embeddings' extra is absent)"
    return CachedEmbedder(fallback, cache), what


def _warm(embedder: CachedEmbedder, texts: Sequence[str], label: str) -> None:
    """Embed ``texts`` into the cache ahead of the catch-up, with progress (slow once)."""
    progress = Progress(f"  {label}", len(texts))
    for start in range(0, len(texts), EMBED_CHUNK):
        embedder.embed(list(texts[start : start + EMBED_CHUNK]))
        progress.update(start + EMBED_CHUNK)
    progress.finish()


def _observations(texts: Sequence[str]) -> list[NewEvent]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    events = []
    for i, text in enumerate(texts):
        agent = f"agent-{i % AUTHORS}"
        payload = MemoryObserved(
            agent=agent,
            text=text,
            type=TYPES[i % len(TYPES)],  # type: ignore[arg-type]
            importance=1 + (i * 7) % 10,
            visibility="private" if i % 10 == 0 else "public",
            source=None,
            tags=[],
        )
        at = start + timedelta(minutes=i)
        events.append(
            NewEvent(
                stream=f"agent:{agent}", kind="memory.observed", payload=payload, actor=agent, at=at
            )
        )
    return events


def _ingest(ledger: Ledger, texts: Sequence[str]) -> None:
    events = _observations(texts)
    for start in range(0, len(events), 1000):
        ledger.append(events[start : start + 1000])


def _catch_up(engine: ProjectionEngine, label: str) -> None:
    shown = Progress(f"  {label}", 1)

    def report(_: str, done: int, total: int) -> None:
        shown.total = max(total, 1)
        shown.update(done)

    engine.catch_up(progress=report)
    shown.finish()


def latency(config: Config) -> list[Figure]:
    """Recall p50/p99 at ``recall_memories`` items, the engine's overhead, HNSW recall."""
    conversations = locomo.load(config.locomo)
    count = config.sizes.recall_memories
    texts = locomo.synthetic_memories(conversations, count, config.seed)
    queries = list(dict.fromkeys(q.text for c in conversations for q in c.questions))
    embedder, what = _embedder(config)
    directory = os.path.join(config.scratch, "latency")
    try:
        _warm(embedder, texts, f"embedding {count:,} memories ({what})")
        query_vectors = embedder.embed(queries)
        with Ledger.open(directory + ".db", default_registry(), durability="fast") as ledger:
            _ingest(ledger, texts)
            projections = [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder)]
            with ProjectionEngine(ledger, directory, projections) as engine:
                _catch_up(engine, f"projecting {count:,} memories")
                searcher = VectorSearcher(
                    directory,
                    embedder.dimension,
                    str(embedder.fingerprint),
                    exact_limit=min(DEFAULT_EXACT_LIMIT, count // 2),
                )
                started = time.perf_counter()
                with engine.read() as conn:
                    searcher.sync(conn)
                log(
                    f"  HNSW index over {searcher.size:,} vectors built in "
                    f"{time.perf_counter() - started:.1f} s"
                )
                vectors = dict(zip(queries, query_vectors, strict=True))
                memory = AgentMemory(
                    "agent-1",
                    ledger,
                    engine,
                    embedder=Precomputed(embedder, vectors),
                    searcher=searcher,
                )
                figures = _timings(config, memory, engine, searcher, queries, vectors, what)
                figures.append(_hnsw_recall(engine, searcher, query_vectors))
        figures.append(_query_embedding(config, queries, what))
        return figures
    finally:
        embedder.cache.close()
        remove_tree(directory)


def _timings(
    config: Config,
    memory: AgentMemory,
    engine: ProjectionEngine,
    searcher: VectorSearcher,
    queries: list[str],
    vectors: dict[str, FloatArray],
    what: str,
) -> list[Figure]:
    as_of = datetime(2026, 1, 1, tzinfo=UTC)
    fetch = max(3 * K, 30)
    index = searcher.index
    with engine.read() as conn:
        table = physical(ProjectionStore.live_generation(conn, "lexical") or 0, "lexical")
    sql = (
        f"SELECT rowid, -bm25({table}), agent, type, visibility, text FROM {table}"
        f" WHERE {table} MATCH ? AND (visibility = 'public' OR agent = ?)"
        f" ORDER BY bm25({table}), rowid LIMIT ?"
    )
    faiss_fetch = max(fetch * 4, 32)
    p50 = Figure(f"recall p50, {searcher.size:,} memories", "ms", "raw FAISS + FTS5", 0.5)
    p99 = Figure(f"recall p99, {searcher.size:,} memories", "ms", "raw FAISS + FTS5", None)
    for rep in range(config.repeat):
        ours: list[float] = []
        raw: list[float] = []
        for i, query in enumerate(queries):
            expression = lexical.match_expression(query)
            vector = vectors[query].reshape(1, -1)

            def engine_call(query: str = query) -> None:
                memory.recall(query, K, as_of=as_of, record=False)

            def raw_call(expression: str | None = expression, vector: Any = vector) -> None:
                with engine.read() as conn:
                    conn.execute(sql, (expression, "agent-1", fetch)).fetchall()
                index.search(vector, faiss_fetch)

            pair: list[tuple[str, Callable[[], None]]] = [
                ("engram", engine_call),
                ("raw", raw_call),
            ]
            for name, call in pair if i % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                call()
                (ours if name == "engram" else raw).append(time.perf_counter() - started)
        p50.engram_samples.append(1000 * statistics.median(ours))
        p50.reference_samples.append(1000 * statistics.median(raw))
        p99.engram_samples.append(1000 * _quantile(ours, 0.99))
        p99.reference_samples.append(1000 * _quantile(raw, 0.99))
        log(f"  recall latency: repetition {rep + 1}/{config.repeat} done")
    p50.note = (
        f"{len(queries)} LoCoMo questions, k={K}, {what}, query vectors computed beforehand; "
        f"reference: the FTS5 statement (LIMIT {fetch}) and FAISS search ({faiss_fetch}) recall "
        "makes; the target is an overhead of at most 2x"
    )
    return [p50, p99]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _hnsw_recall(engine: ProjectionEngine, searcher: VectorSearcher, queries: FloatArray) -> Figure:
    import faiss

    with engine.read() as conn:
        table = physical(ProjectionStore.live_generation(conn, "semantic") or 0, "semantic_vectors")
        rows = conn.execute(f"SELECT position, vector FROM {table} ORDER BY position").fetchall()
    exact = faiss.IndexIDMap2(faiss.IndexFlatIP(searcher.dimension))
    exact.add_with_ids(
        np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1),
        np.asarray([r[0] for r in rows], dtype=np.int64),
    )
    _, truth = exact.search(queries, K)
    _, found = searcher.index.search(queries, K)
    shares = [len(set(t) & set(f)) / K for t, f in zip(truth.tolist(), found.tolist(), strict=True)]
    figure = Figure("HNSW recall@10 vs exact search", "recall", "exact inner product", 0.95)
    figure.engram_samples.append(statistics.fmean(shares))
    figure.reference_samples.append(1.0)
    figure.note = (
        f"{len(queries)} query vectors over {searcher.size:,} vectors; HNSW M={searcher.hnsw_m}, "
        f"efSearch={searcher.ef_search}"
    )
    return figure


def _query_embedding(config: Config, queries: list[str], what: str) -> Figure:
    figure = Figure("query embedding, one text", "ms", "-", None)
    model = minilm(None) or HashEmbedder()
    model.embed(["warm up"])
    sample = queries[:200]
    times = []
    for query in sample:
        started = time.perf_counter()
        model.embed([query])
        times.append(time.perf_counter() - started)
    figure.engram_samples.append(1000 * statistics.median(times))
    figure.note = (
        f"median over {len(sample)} questions, {what}, uncached; not in the recall figures"
    )
    return figure


def rebuild(config: Config) -> list[Figure]:
    """The semantic index rebuilt with MiniLM against raw sentence-transformers encode."""
    figure = Figure("semantic rebuild, MiniLM", "texts/s", "sentence-transformers encode", 0.8)
    if not available() or bundled_model_path(MINILM) is None:
        figure.skipped = "needs the 'embeddings' extra (all-MiniLM-L6-v2)"
        return [figure]
    from sentence_transformers import SentenceTransformer

    conversations = locomo.load(config.locomo)
    count = config.sizes.rebuild_texts
    texts = locomo.synthetic_memories(conversations, count, config.seed + 1)
    raw = SentenceTransformer(str(bundled_model_path(MINILM)), local_files_only=True)
    model = minilm(None)
    assert model is not None
    raw.encode(["warm up"])
    model.embed(["warm up"])
    base = os.path.join(config.scratch, "rebuild")
    runs = 0

    def engram_side() -> float:
        nonlocal runs
        runs += 1
        store = f"{base}.store{runs}"
        cache = EmbeddingCache(os.path.join(config.scratch, f"rebuild-cache{runs}.db"))
        embedder = CachedEmbedder(model, cache)
        started = time.perf_counter()
        with ProjectionEngine(ledger, store, [SemanticIndex(embedder)]) as engine:
            engine.catch_up()
            searcher = VectorSearcher(store, embedder.dimension, str(embedder.fingerprint))
            with engine.read() as conn:
                searcher.sync(conn)
            searcher.save()
        spent = time.perf_counter() - started
        cache.close()
        remove_tree(store)
        return count / spent

    def raw_side() -> float:
        started = time.perf_counter()
        raw.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        return count / (time.perf_counter() - started)

    with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
        _ingest(ledger, texts)
        samples = interleave(
            config.repeat, [("engram", engram_side), ("raw", raw_side)], "MiniLM rebuild"
        )
    figure.engram_samples, figure.reference_samples = samples["engram"], samples["raw"]
    figure.note = (
        f"{count:,} texts from an empty store and a cold embedding cache: read, embed, store the "
        "vectors, build and save the FAISS index; reference: encode(batch_size=64) alone"
    )
    return [figure]
