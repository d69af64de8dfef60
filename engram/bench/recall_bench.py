"""Retrieval quality of recall on LoCoMo: evidence recall@k per path, against rank_bm25.

Every turn of each conversation is observed into its own ledger (the session's time as the
event time, the turn's ``dia_id`` as the source reference, importance from the default
scorer); then every question of categories 1-4 is recalled by a reader agent, ``k`` at a
time, without recording the recall, ``as_of`` a day after the last session. A question
scores the fraction of its evidence turns among the ``k`` served. The modes:

- ``lexical``: the FTS5 path alone; ``hash`` / ``minilm``: the FAISS path alone over hash or
  all-MiniLM-L6-v2 vectors; ``hybrid (hash)`` / ``hybrid (minilm)``: both paths fused by
  reciprocal rank, relevance only; ``full``: hybrid (MiniLM) scored with the default weights
  (relevance, recency and importance).
- Reference: ``rank_bm25.BM25Okapi`` over the same texts, split by the same tokeniser.

Quality is deterministic, so each mode runs once whatever ``--repeat`` says.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from engram.agents.memory import DEFAULT_WEIGHTS, AgentMemory
from engram.bench import locomo
from engram.bench.common import Config, Figure, Progress, log, remove_tree
from engram.ledger import Ledger, default_registry
from engram.projections import lexical
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    SentenceTransformerEmbedder,
)
from engram.projections.embedding.st import available as minilm_available
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher

KS = (5, 10, 20)
READER = "reader"
RELEVANCE_ONLY = {"relevance": 1.0, "recency": 0.0, "importance": 0.0}
BOTH = ("lexical", "semantic")


@dataclass(frozen=True)
class Mode:
    """One way of recalling: which embedder's store, which paths, which weights."""

    name: str
    embedder: str  # "hash" or "minilm"
    paths: tuple[str, ...]
    weights: Mapping[str, float]
    fusion: Mapping[str, float] | None = None  # None: the default for the embedder


MODES = (
    Mode("lexical", "hash", ("lexical",), RELEVANCE_ONLY),
    Mode("hash", "hash", ("semantic",), RELEVANCE_ONLY),
    Mode("minilm", "minilm", ("semantic",), RELEVANCE_ONLY),
    Mode("hybrid (hash)", "hash", BOTH, RELEVANCE_ONLY),
    Mode("hybrid (minilm)", "minilm", BOTH, RELEVANCE_ONLY),
    Mode("full", "minilm", BOTH, DEFAULT_WEIGHTS),
)
REFERENCE = "rank_bm25"


def minilm(cache_path: str | None) -> Embedder | None:
    """Return all-MiniLM-L6-v2 (cached in ``cache_path`` if given), or None without the extra."""
    if not minilm_available():
        return None
    model = SentenceTransformerEmbedder(model="all-MiniLM-L6-v2")
    if cache_path is None:
        return model
    Path(cache_path).parent.mkdir(parents=True, exist_ok=True)
    return CachedEmbedder(model, EmbeddingCache(cache_path))


class Scores:
    """Per-question recall@k, kept by mode, k and category."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, int], list[tuple[int, float]]] = {}

    def add(self, mode: str, k: int, category: int, value: float) -> None:
        self.values.setdefault((mode, k), []).append((category, value))

    def mean(self, mode: str, k: int, category: int | None = None) -> float | None:
        found = [v for c, v in self.values.get((mode, k), []) if category in (None, c)]
        return statistics.fmean(found) if found else None


def observe_conversation(
    ledger: Ledger, engine: ProjectionEngine, conversation: locomo.Conversation
) -> dict[int, str]:
    """Observe every turn through its speaker's memory; return ``position -> dia_id``."""
    speakers = {t.speaker: AgentMemory(t.speaker, ledger, engine) for t in conversation.turns}
    return {
        speakers[turn.speaker].observe(
            turn.text, source=turn.dia_id, tags=[conversation.sample_id], at=turn.at
        ): turn.dia_id
        for turn in conversation.turns
    }


def bm25_reference(conversation: locomo.Conversation) -> Callable[[str, int], list[str]]:
    """Return a ranker over the conversation's turns by rank_bm25, same tokens as FTS5."""
    from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

    bm25 = BM25Okapi([lexical.tokens(t.text) for t in conversation.turns])
    ids = [t.dia_id for t in conversation.turns]

    def rank(query: str, k: int) -> list[str]:
        scores = bm25.get_scores(lexical.tokens(query))
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
        return [ids[i] for i in order[:k] if scores[i] > 0]

    return rank


def evaluate(
    config: Config,
    *,
    modes: Sequence[Mode] = MODES,
    extra: Sequence[Mode] = (),
) -> Scores:
    """Ingest every conversation, ask every question in every mode; return the scores.

    ``extra`` adds modes (for choosing defaults).
    """
    conversations = locomo.load(config.locomo)
    embedders: dict[str, Embedder | None] = {
        "hash": HashEmbedder(),
        "minilm": minilm(config.embedding_cache),
    }
    active = [m for m in [*modes, *extra] if embedders[m.embedder] is not None]
    if len(active) < len(modes) + len(extra):
        log("  recall quality: the 'embeddings' extra is absent; MiniLM modes skipped")
    scores = Scores()
    questions = sum(len(c.questions) for c in conversations)
    progress = Progress("  LoCoMo questions", questions * len(active))
    directory = tempfile.mkdtemp(prefix="locomo-", dir=config.scratch)
    try:
        for conversation in conversations:
            _conversation(conversation, directory, embedders, active, scores, progress)
    finally:
        remove_tree(directory)
    progress.finish()
    return scores


def _conversation(
    conversation: locomo.Conversation,
    directory: str,
    embedders: Mapping[str, Embedder | None],
    active: Sequence[Mode],
    scores: Scores,
    progress: Progress,
) -> None:
    """Observe one conversation into its own ledger, then ask its questions in every mode."""
    base = os.path.join(directory, conversation.sample_id)
    with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
        kinds = [kind for kind in ("hash", "minilm") if embedders[kind] is not None]
        opened = {kind: _open(ledger, f"{base}.{kind}", embedders[kind]) for kind in kinds}
        try:
            dia = observe_conversation(ledger, opened[kinds[0]][0], conversation)
            _score_reference(conversation, scores)
            for kind, (engine, searcher) in opened.items():
                engine.catch_up()
                memories = [
                    (
                        mode,
                        AgentMemory(
                            READER,
                            ledger,
                            engine,
                            embedder=embedders[kind],
                            searcher=searcher,
                            fusion=mode.fusion,
                        ),
                    )
                    for mode in active
                    if mode.embedder == kind
                ]
                _ask(conversation, memories, dia, scores, progress)
        finally:
            for engine, _ in opened.values():
                engine.close()


def _score_reference(conversation: locomo.Conversation, scores: Scores) -> None:
    rank = bm25_reference(conversation)
    for question in conversation.questions:
        for k in KS:
            found = set(rank(question.text, k))
            scores.add(REFERENCE, k, question.category, _share(question, found))


def _ask(
    conversation: locomo.Conversation,
    memories: list[tuple[Mode, AgentMemory]],
    dia: Mapping[int, str],
    scores: Scores,
    progress: Progress,
) -> None:
    """Recall every question in every mode, ``k`` at a time, a day after the last session."""
    as_of = max(t.at for t in conversation.turns) + timedelta(days=1)
    for question in conversation.questions:
        for mode, memory in memories:
            for k in KS:
                result = memory.recall(
                    question.text,
                    k,
                    as_of=as_of,
                    weights=mode.weights,
                    paths=mode.paths,
                    record=False,
                )
                found = {dia[r.event.position] for r in result.items}
                scores.add(mode.name, k, question.category, _share(question, found))
        progress.update(progress.done + len(memories))


def _open(
    ledger: Ledger, store: str, embedder: Embedder | None
) -> tuple[ProjectionEngine, VectorSearcher]:
    assert embedder is not None
    projections = [SalienceIndex(), LexicalIndex(), SemanticIndex(embedder)]
    engine = ProjectionEngine(ledger, store, projections)
    return engine, VectorSearcher(store, embedder.dimension, str(embedder.fingerprint))


def _share(question: locomo.Question, found: set[str]) -> float:
    return len(question.evidence & found) / len(question.evidence)


def quality(config: Config) -> list[Figure]:
    """The LoCoMo figures: recall@10 of each mode against rank_bm25, and the detail table."""
    if importlib.util.find_spec("rank_bm25") is None:
        figure = Figure("LoCoMo recall@10", "recall", REFERENCE, None)
        figure.skipped = "needs rank_bm25, the reference: pip install 'engram[bench]'"
        return [figure]
    scores = evaluate(config)
    print(detail_table(scores), flush=True)
    reference = scores.mean(REFERENCE, 10)
    figures = []
    for mode in MODES:
        value = scores.mean(mode.name, 10)
        target = 1.1 if mode.name == "hybrid (minilm)" else None
        figure = Figure(f"LoCoMo recall@10, {mode.name}", "recall", REFERENCE, target)
        if value is None or reference is None:
            figure.skipped = "needs the 'embeddings' extra (all-MiniLM-L6-v2)"
        else:
            figure.engram_samples.append(value)
            figure.reference_samples.append(reference)
        figures.append(figure)
    full, hybrid = scores.mean("full", 10), scores.mean("hybrid (minilm)", 10)
    if full is not None and hybrid is not None:
        figures[-1].note = (
            f"default weights {_weights_text(DEFAULT_WEIGHTS)}: {full / hybrid - 1:+.1%} against "
            "hybrid (MiniLM) alone (the line: not below -2%)"
        )
    return figures


def _weights_text(weights: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {value:g}" for name, value in weights.items())


def detail_table(scores: Scores) -> str:
    """Recall@5/10/20 overall and per category, one row per mode, as plain text."""
    names = [REFERENCE, *dict.fromkeys(mode for mode, _ in scores.values)]
    names = list(dict.fromkeys(n for n in names if scores.mean(n, 10) is not None))
    columns: list[tuple[str, int, int | None]] = [(f"@{k}", k, None) for k in KS]
    columns += [(f"{label}@10", 10, number) for number, label in locomo.CATEGORIES.items()]
    header = ["LoCoMo evidence recall", *(c[0] for c in columns)]
    rows = [header]
    for name in names:
        cells = [scores.mean(name, k, category) for _, k, category in columns]
        rows.append([name, *("-" if v is None else f"{v:.3f}" for v in cells)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    counts = _category_counts(scores)
    lines.append(f"questions per category: {counts}")
    return "\n".join(lines)


def _category_counts(scores: Scores) -> dict[str, Any]:
    values = scores.values.get((REFERENCE, 10), [])
    return {
        label: sum(1 for c, _ in values if c == number)
        for number, label in locomo.CATEGORIES.items()
    }
