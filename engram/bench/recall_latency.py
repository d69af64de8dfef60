"""Recall at scale: latency at 100k (and 1M) memories, HNSW against exact search, rebuilds.

The store holds ``recall_memories`` synthetic memories built from LoCoMo sentences (eight
authors, one in ten items private, the three memory types), embedded with all-MiniLM-L6-v2
when the ``embeddings`` extra is installed (hash vectors otherwise, or with
``ENGRAM_EMBEDDER=hash``; the notes say which). The vectors go through the engine's own
embedding cache; with ``--embedding-cache`` that cache outlives the run, so the 100k texts
are embedded by the model once per machine. With
``--scale 1m`` a second store of a million memories with hash vectors (384 dimensions) is
built and measured the same way.

- **Latency** (:mod:`engram.bench.recall_scale`): the LoCoMo questions recalled with their
  vectors computed beforehand, beside the raw FTS5 statement and FAISS search recall makes;
  the build's throughput, step by step; the query embedding timed on its own.
- **HNSW recall@10**: the searcher's HNSW index against exact inner-product search over the
  same vectors, for the same query vectors.
- **Rebuild**: the semantic index built from an empty store (cold cache) through the façade,
  against raw ``SentenceTransformer.encode`` over the same texts, in turn; and a rebuild of
  the latency store's texts in slices, with its rate and peak resident memory.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from engram.agents.memory import AgentMemory
from engram.bench import locomo, recall_scale
from engram.bench.common import Config, Figure, Progress, interleave, log, remove_tree
from engram.bench.recall_bench import minilm
from engram.ledger import Ledger, default_registry
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    Fingerprint,
    FloatArray,
    HashEmbedder,
)
from engram.projections.embedding.routing import DEFAULT_ENV
from engram.projections.embedding.st import MINILM, available, bundled_model_path
from engram.projections.engine import ProjectionEngine
from engram.projections.semantic import (
    DEFAULT_EXACT_LIMIT,
    SLICE,
    SemanticIndex,
    VectorSearcher,
)
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
    """Return MiniLM (or hash vectors) behind a cache, and what it is, for the notes.

    ``ENGRAM_EMBEDDER=hash`` (the variable :func:`engram.open` reads) asks for hash vectors
    even where MiniLM is installed: a store of them is built in minutes, where MiniLM embeds
    100,000 texts in half an hour or more, and recall's work above its raw calls is the same
    code either way (ADR 0101)."""
    if os.environ.get(DEFAULT_ENV, "").strip().lower() == "hash":
        model, why = None, f"{DEFAULT_ENV}=hash"
    else:
        model, why = minilm(config.embedding_cache), "the 'embeddings' extra is absent"
    if isinstance(model, CachedEmbedder):
        return model, "all-MiniLM-L6-v2"
    fallback: Embedder = model or HashEmbedder()
    cache = EmbeddingCache(os.path.join(config.scratch, "latency-embeddings.db"))
    what = "all-MiniLM-L6-v2" if model else f"hash vectors ({why})"
    return CachedEmbedder(fallback, cache), what


def _warm(embedder: CachedEmbedder, texts: Sequence[str], label: str) -> None:
    """Embed ``texts`` into the cache ahead of the catch-up, with progress (slow once)."""
    progress = Progress(f"  {label}", len(texts))
    for start in range(0, len(texts), EMBED_CHUNK):
        embedder.embed(list(texts[start : start + EMBED_CHUNK]))
        progress.update(start + EMBED_CHUNK)
    progress.finish()


def _ingest(ledger: Ledger, texts: Sequence[str]) -> None:
    recall_scale.append(ledger, texts)


def latency(config: Config) -> list[Figure]:
    """Recall p50/p99 at ``recall_memories`` items (MiniLM) and, with ``--scale 1m``, at a
    million (hash vectors); beside each the raw calls, the build throughput, HNSW recall."""
    conversations = locomo.load(config.locomo)
    queries = list(dict.fromkeys(q.text for c in conversations for q in c.questions))
    count = config.sizes.recall_memories
    texts = locomo.synthetic_memories(conversations, count, config.seed)
    embedder, what = _embedder(config)
    try:
        _warm(embedder, texts, f"embedding {count:,} memories ({what})")
        figures = _at_scale(config, texts, queries, embedder, f"{what}, vectors from the cache")
    finally:
        embedder.cache.close()
    if config.recall_scale:
        large = locomo.synthetic_memories(conversations, config.recall_scale, config.seed + 2)
        figures += _at_scale(config, large, queries, HashEmbedder(), "hash vectors (384 dims)")
    figures.append(_query_embedding(config, queries, what))
    return figures


def _at_scale(
    config: Config, texts: Sequence[str], queries: list[str], embedder: Embedder, what: str
) -> list[Figure]:
    """Build a store of ``texts`` (timed; or reuse the cached one), then time recall against
    its raw calls."""
    name = f"latency-{len(texts)}-{embedder.fingerprint.provider}"
    directory = os.path.join(config.store_cache or config.scratch, name)
    if config.store_cache:
        os.makedirs(config.store_cache, exist_ok=True)
    try:
        with recall_scale.built(config, directory, texts, embedder, what) as (record, ledger, e):
            searcher = VectorSearcher(
                directory,
                embedder.dimension,
                str(embedder.fingerprint),
                exact_limit=min(DEFAULT_EXACT_LIMIT, len(texts) // 2),
            )
            started = time.perf_counter()
            with e.read() as conn:
                searcher.sync(conn)
            log(
                f"  HNSW index over {searcher.size:,} vectors ready in "
                f"{time.perf_counter() - started:.1f} s"
            )
            if config.store_cache:
                searcher.save()
            query_vectors = embedder.embed(queries)
            vectors = dict(zip(queries, query_vectors, strict=True))
            memory = AgentMemory(
                "agent-1", ledger, e, embedder=Precomputed(embedder, vectors), searcher=searcher
            )
            timed = recall_scale.timings(config, memory, e, searcher, queries, vectors, what)
            figures = timed + _share_rule(config, memory, queries, vectors, what)
            figures += record.figures(what)
            figures.append(_hnsw_recall(e, searcher, query_vectors))
        return figures
    finally:
        if not config.store_cache:
            remove_tree(directory)


def _share_rule(
    config: Config,
    default: AgentMemory,
    queries: list[str],
    vectors: dict[str, FloatArray],
    what: str,
) -> list[Figure]:
    """Recall p50/p99 on the same store with ADR 0026's 2% share rule, for the ablation of
    the postings budget (ADR 0053); no reference of their own."""
    engine, searcher = default.engine, default.searcher
    assert searcher is not None
    memory = AgentMemory(
        "agent-1",
        default.ledger,
        engine,
        embedder=default.embedder,
        searcher=searcher,
        prune="share",
    )
    figures = []
    for figure in recall_scale.timings(config, memory, engine, searcher, queries, vectors, what):
        if figure.name.startswith("recall p"):
            figure.name += ", 2% pruning"
            figure.reference_samples.clear()
            figure.target = None
            figures.append(figure)
    return figures


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


def rebuild_at_scale(config: Config) -> list[Figure]:
    """A semantic rebuild of ``recall_memories`` texts: its rate, slices and peak memory.

    The texts are the latency store's, embedded through the lasting embedding cache when
    one is given (so the latency part then finds them there): the first run embeds them all
    with MiniLM, later ones read them from the cache, and the note says which it was.
    """
    conversations = locomo.load(config.locomo)
    count = config.sizes.recall_memories
    texts = locomo.synthetic_memories(conversations, count, config.seed)
    embedder, what = _embedder(config)
    rate = Figure(f"semantic rebuild, {count:,} memories", "texts/s", "-", None)
    peak = Figure(f"peak memory during that rebuild ({what})", "MiB", "-", None)
    base = os.path.join(config.scratch, "rebuild-scale")
    slices = Progress(f"  semantic rebuild of {count:,} ({what}), slices of {SLICE:,}", count)

    def report(step: str, done: int, total: int) -> None:
        if step == "semantic: embedded":
            slices.update(done)

    try:
        with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
            _ingest(ledger, texts)
            misses = embedder.misses
            with recall_scale.PeakMemory() as memory:
                started = time.perf_counter()
                with ProjectionEngine(ledger, base, [SemanticIndex(embedder)]) as engine:
                    engine.rebuild(progress=report)
                    searcher = VectorSearcher(base, embedder.dimension, str(embedder.fingerprint))
                    with engine.read() as conn:
                        searcher.sync(conn)
                    searcher.save()
                spent = time.perf_counter() - started
            slices.finish()
        embedded = embedder.misses - misses
    finally:
        embedder.cache.close()
        remove_tree(base)
    rate.engram_samples.append(count / spent)
    rate.note = (
        f"{what}: {embedded:,} of {count:,} texts embedded by the model, the rest read from the "
        f"embedding cache; slices of {SLICE:,} texts, each cached and reported; the FAISS index "
        "built and saved"
    )
    peak.engram_samples.append(memory.peak)
    peak.note = (
        f"resident memory high-water mark sampled every 20 ms during the rebuild: "
        f"{memory.peak:,.0f} MiB, {memory.peak - memory.before:+,.0f} MiB over the "
        f"{memory.before:,.0f} MiB held before it"
    )
    return [rate, peak]
