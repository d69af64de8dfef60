"""Retrieval quality of recall on LoCoMo (and BEAM): evidence recall@k per path, against rank_bm25.

The method is the same for both data sets (:mod:`engram.bench.beam_bench` runs it on BEAM's
long chats). Every turn of each conversation is observed into its own ledger (the session's
time as the event time, the turn's ``dia_id`` as the source reference, importance from the default
scorer); then every question of categories 1-4 is recalled by a reader agent, ``k`` at a
time, without recording the recall, ``as_of`` a day after the last session. A question
scores the fraction of its evidence turns among the ``k`` served. The modes:

- ``lexical``: the FTS5 path alone; ``hash`` / ``minilm``: the FAISS path alone over hash or
  all-MiniLM-L6-v2 vectors; ``hybrid (hash)`` / ``hybrid (minilm)``: both paths fused by
  reciprocal rank, relevance only; ``full``: hybrid (MiniLM) scored with the default weights
  (relevance, recency and importance).
- Reference: ``rank_bm25.BM25Okapi`` over the same texts, split by the same tokeniser.

Recall runs without a floor (``min_score=0``): the figure is the ranking's, as rank_bm25's is.

The report gives recall@5/10/20 per mode and per category, and recall@10 per conversation
for the headline mode (hybrid (MiniLM), else the best mode scored) beside rank_bm25. The
headline ratio, its recall@10 over rank_bm25's, comes with a 95% bootstrap interval: the
questions are resampled with replacement (2,000 times, the run's seed), both means
recomputed on each resample, and the 2.5th and 97.5th percentiles of the ratio reported;
the same resamples bound the mean per-question difference. Questions of one conversation
are not independent, so read the per-conversation rows beside the interval.

Quality is deterministic, so each mode runs once whatever ``--repeat`` says.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from engram.agents.arguments import LongTextWarning
from engram.agents.calibration import Calibration
from engram.agents.memory import DEFAULT_WEIGHTS, RRF_K, AgentMemory
from engram.bench import locomo
from engram.bench.common import Config, Figure, Progress, log, remove_tree
from engram.bench.recall_report import (
    KS,
    REFERENCE,
    Score,
    Scores,
    ablation_table,
    bootstrap,
    conversation_table,
    detail_table,
    details,
    interval_text,
)
from engram.ledger import Ledger, default_registry
from engram.projections import lexical
from engram.projections.embedding import (
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    HashEmbedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
)
from engram.projections.embedding.onnx_provider import ready as onnx_ready
from engram.projections.embedding.st import available as minilm_available
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher

#: Plain reciprocal rank fusion as published: k = 60, the paths weighed alike, nothing else.
TEXTBOOK_RRF_K = 60
TEXTBOOK_FUSION = {"lexical": 1.0, "semantic": 1.0}
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
    bloom: bool = True  # the strongest candidates cue their episode neighbours
    prune: bool | str = True  # the postings budget; "share": ADR 0026's rule; False: none
    passages: bool = False  # long memories searched by their passages too (ADR 0054)
    rrf_k: int = RRF_K  # the fusion's rank constant
    tokenizer: str = "porter"  # the lexical index's tokenizer (lexical.TOKENIZERS)
    calibration: Calibration | None = None  # None: the embedder family's (CALIBRATIONS)


MODES = (
    Mode("lexical", "hash", ("lexical",), RELEVANCE_ONLY),
    Mode("hash", "hash", ("semantic",), RELEVANCE_ONLY),
    Mode("minilm", "minilm", ("semantic",), RELEVANCE_ONLY),
    Mode("hybrid (hash)", "hash", BOTH, RELEVANCE_ONLY),
    Mode("hybrid (minilm)", "minilm", BOTH, RELEVANCE_ONLY),
    Mode("full", "minilm", BOTH, DEFAULT_WEIGHTS),
)
#: MiniLM's calibration before each path's own rank was a feature (ADR 0051, ADR 0091).
WITHOUT_OWN_RANKS = Calibration(-8.471, 3.288, 4.952, 3.016)
#: The levers every recall bench (LoCoMo and BEAM) turns off one at a time, beside the mode
#: each changes.
LEVERS = (
    Mode(
        "hybrid (minilm), no own ranks",
        "minilm",
        BOTH,
        RELEVANCE_ONLY,
        calibration=WITHOUT_OWN_RANKS,
    ),
    Mode("lexical, no pruning", "hash", ("lexical",), RELEVANCE_ONLY, prune=False),
    Mode("hybrid (minilm), no pruning", "minilm", BOTH, RELEVANCE_ONLY, prune=False),
    Mode("lexical, 2% pruning", "hash", ("lexical",), RELEVANCE_ONLY, prune="share"),
    Mode("hybrid (minilm), 2% pruning", "minilm", BOTH, RELEVANCE_ONLY, prune="share"),
    Mode("hybrid (minilm), no bloom", "minilm", BOTH, RELEVANCE_ONLY, bloom=False),
)
#: One lever off at a time, beside the mode it changes (the per-lever ablation).
ABLATIONS = (
    *LEVERS,
    Mode("lexical, unicode61", "hash", ("lexical",), RELEVANCE_ONLY, tokenizer="unicode61"),
    Mode("hybrid (minilm), unicode61", "minilm", BOTH, RELEVANCE_ONLY, tokenizer="unicode61"),
    Mode(
        "hybrid (minilm), textbook RRF",
        "minilm",
        BOTH,
        RELEVANCE_ONLY,
        fusion=TEXTBOOK_FUSION,
        rrf_k=TEXTBOOK_RRF_K,
        bloom=False,
    ),
    Mode(
        "hybrid (minilm), RRF k=60",
        "minilm",
        BOTH,
        RELEVANCE_ONLY,
        fusion=TEXTBOOK_FUSION,
        rrf_k=TEXTBOOK_RRF_K,
    ),
)
#: Hybrid (MiniLM) recall@10 over rank_bm25's on the development split: the goal of the
#: long-memories work (1.45x), not ADR 0025's first floor of 1.3x, so a run says whether the
#: goal is met.
HEADLINE_TARGET = 1.45
#: The mode whose recall@10 over rank_bm25's is the headline ratio.
HEADLINE = "hybrid (minilm)"


def chosen(config: Config, modes: Sequence[Mode]) -> list[Mode]:
    """Return those of ``modes`` the run asks for (``config.modes``; all when it names none)."""
    return [m for m in modes if not config.modes or m.name in config.modes]


def check_modes(config: Config, modes: Sequence[Mode]) -> None:
    """Raise ValueError naming each of ``config.modes`` that is not one of ``modes``."""
    known = [m.name for m in modes]
    unknown = [name for name in config.modes if name not in known]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown} (known: {known})")


def minilm(cache_path: str | None, *, onnx: bool = False) -> Embedder | None:
    """Return all-MiniLM-L6-v2 (cached in ``cache_path`` if given), or None without it.

    sentence-transformers when installed; else, with ``onnx``, the ONNX provider (ADR 0061:
    the same vectors and fingerprint, so a cache filled by either serves both). The quality
    benches ask for it; the latency store's 100k texts stay on hash vectors without
    sentence-transformers, as before."""
    model: Embedder
    if minilm_available():
        model = SentenceTransformerEmbedder(model="all-MiniLM-L6-v2")
    elif onnx and onnx_ready():
        model = OnnxEmbedder(model="all-MiniLM-L6-v2")
    else:
        return None
    if cache_path is None:
        return model
    Path(cache_path).parent.mkdir(parents=True, exist_ok=True)
    return CachedEmbedder(model, EmbeddingCache(cache_path))


def observe_conversation(
    ledger: Ledger, engine: ProjectionEngine, conversation: locomo.Conversation
) -> dict[int, str]:
    """Observe every turn through its speaker's memory; return ``position -> dia_id``.
    A turn longer than recall reads is stored as it is, unwarned: the benchmark's messages
    are what they are, and the figures say what recall finds of them."""
    speakers = {t.speaker: AgentMemory(t.speaker, ledger, engine) for t in conversation.turns}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LongTextWarning)
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


@dataclass
class Indexing:
    """What indexing the conversations cost: in the first store opened (the headline's when
    it is among the modes), the seconds to observe every item and catch every projection
    up, and the process's peak resident memory once done (the model's included)."""

    items: int = 0
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    store: str = ""

    def text(self) -> str:
        """Describe the cost in one line."""
        rate = self.items / self.seconds if self.seconds else 0.0
        return (
            f"indexing {self.items:,} items ({self.store}): {self.seconds:.1f} s "
            f"({rate:,.0f} items/s), peak RSS {self.peak_rss_mb:,.0f} MB"
        )


def evaluate(
    config: Config,
    *,
    modes: Sequence[Mode] = MODES,
    extra: Sequence[Mode] = (),
    conversations: Sequence[locomo.Conversation] | None = None,
    indexing: Indexing | None = None,
) -> Scores:
    """Ingest every conversation, ask every question in every mode; return the scores.

    ``extra`` adds modes (for choosing defaults); ``conversations`` are LoCoMo's (read from
    the configured file) unless given; ``indexing``, when given, is filled with what
    indexing cost.
    """
    if conversations is None:
        conversations = locomo.load(config.locomo)
    indexing = Indexing() if indexing is None else indexing
    modes, extra = chosen(config, modes), chosen(config, extra)
    embedders: dict[str, Embedder | None] = {
        "hash": HashEmbedder(),
        "minilm": minilm(config.embedding_cache, onnx=True),
    }
    active = [m for m in [*modes, *extra] if embedders[m.embedder] is not None]
    if len(active) < len(modes) + len(extra):
        log("  recall quality: the 'embeddings' extra is absent; MiniLM modes skipped")
    scores = Scores()
    questions = sum(len(c.questions) for c in conversations)
    progress = Progress("  questions", questions * len(active))
    directory = tempfile.mkdtemp(prefix="locomo-", dir=config.scratch)
    try:
        for conversation in conversations:
            _conversation(conversation, directory, embedders, active, scores, progress, indexing)
    finally:
        remove_tree(directory)
    progress.finish()
    indexing.peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return scores


def _conversation(
    conversation: locomo.Conversation,
    directory: str,
    embedders: Mapping[str, Embedder | None],
    active: Sequence[Mode],
    scores: Scores,
    progress: Progress,
    indexing: Indexing,
) -> None:
    """Observe one conversation into its own ledger, then ask its questions in every mode."""
    base = os.path.join(directory, conversation.sample_id)
    with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
        headline = [m for m in active if m.name == HEADLINE]
        ordered = [*headline, *active]
        stores = list(
            dict.fromkeys((mode.embedder, mode.tokenizer, mode.passages) for mode in ordered)
        )
        opened = {
            (kind, tokenizer, whole): _open(
                ledger,
                f"{base}.{kind}.{tokenizer}.{'passages' if whole else 'heads'}",
                embedders[kind],
                tokenizer,
                passages=whole,
            )
            for kind, tokenizer, whole in stores
        }
        try:
            started = time.perf_counter()
            dia = observe_conversation(ledger, opened[stores[0]][0], conversation)
            opened[stores[0]][0].catch_up()
            indexing.seconds += time.perf_counter() - started
            indexing.items += len(conversation.turns)
            indexing.store = "{}, {}, passages searched {}".format(*stores[0])
            _score_reference(conversation, scores)
            for (kind, tokenizer, whole), (engine, searcher) in opened.items():
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
                            bloom=mode.bloom,
                            prune=mode.prune,
                            rrf_k=mode.rrf_k,
                        ),
                    )
                    for mode in active
                    if (mode.embedder, mode.tokenizer, mode.passages) == (kind, tokenizer, whole)
                ]
                for mode, memory in memories:
                    memory.calibration = mode.calibration
                _ask(conversation, memories, dia, scores, progress)
        finally:
            for engine, _ in opened.values():
                engine.close()


def _score_reference(conversation: locomo.Conversation, scores: Scores) -> None:
    rank = bm25_reference(conversation)
    for number, question in enumerate(conversation.questions):
        for k in KS:
            found = set(rank(question.text, k))
            scores.add(REFERENCE, k, _score(conversation, number, question, found))


def _ask(
    conversation: locomo.Conversation,
    memories: list[tuple[Mode, AgentMemory]],
    dia: Mapping[int, str],
    scores: Scores,
    progress: Progress,
) -> None:
    """Recall every question in every mode, ``k`` at a time, a day after the last session."""
    as_of = max(t.at for t in conversation.turns) + timedelta(days=1)
    for number, question in enumerate(conversation.questions):
        for mode, memory in memories:
            for k in KS:
                result = memory.recall(
                    question.text,
                    k,
                    as_of=as_of,
                    weights=mode.weights,
                    paths=mode.paths,
                    record=False,
                    min_score=0.0,  # ranking quality: every candidate, as rank_bm25 gives
                )
                found = {dia[r.event.position] for r in result.items}
                scores.add(mode.name, k, _score(conversation, number, question, found))
        progress.update(progress.done + len(memories))


def _open(
    ledger: Ledger,
    store: str,
    embedder: Embedder | None,
    tokenizer: str = "porter",
    *,
    passages: bool = True,
) -> tuple[ProjectionEngine, VectorSearcher]:
    assert embedder is not None
    # Long texts' passages are stored as engram stores them (ADR 0097) and searched only
    # with ``passages`` (ADR 0054's max pooling); else recall reads them as a feature.
    projections = [
        SalienceIndex(),
        LexicalIndex(tokenizer=tokenizer),
        SemanticIndex(embedder, passages=True),
    ]
    engine = ProjectionEngine(ledger, store, projections)
    searcher = VectorSearcher(
        store, embedder.dimension, str(embedder.fingerprint), passages=passages
    )
    return engine, searcher


def _score(
    conversation: locomo.Conversation, number: int, question: locomo.Question, found: set[str]
) -> Score:
    share = len(question.evidence & found) / len(question.evidence)
    return Score(conversation.sample_id, number, question.category, share)


def quality(config: Config) -> list[Figure]:
    """The LoCoMo figures: recall@10 of each mode against rank_bm25, and the detail tables.

    The headline mode's figure carries the bootstrap interval in its note and the whole
    report (modes, categories, conversations, interval) in its JSON ``details``.
    """
    if importlib.util.find_spec("rank_bm25") is None:
        return [missing_reference("LoCoMo recall@10")]
    check_modes(config, [*MODES, *ABLATIONS])
    scores = evaluate(config, extra=ABLATIONS)
    figures = report(
        scores,
        title="LoCoMo",
        categories=locomo.CATEGORIES,
        seed=config.seed,
        modes=chosen(config, MODES),
    )
    full, hybrid = scores.mean("full", 10), scores.mean("hybrid (minilm)", 10)
    if full is not None and hybrid is not None and figures[-1].name.endswith(", full"):
        figures[-1].note = (
            f"default weights {_weights_text(DEFAULT_WEIGHTS)}: {full / hybrid - 1:+.1%} against "
            "hybrid (MiniLM) alone (the line: not below -2%)"
        )
    return figures


def missing_reference(name: str) -> Figure:
    """Return the figure shown when rank_bm25, the reference, is not installed."""
    missing = Figure(name, "recall", REFERENCE, None)
    missing.skipped = "needs rank_bm25, the reference: pip install 'engram[bench]'"
    return missing


def report(
    scores: Scores,
    *,
    title: str,
    categories: Mapping[int, str],
    seed: int,
    targets: Mapping[str, float] | None = None,
    modes: Sequence[Mode] = MODES,
) -> list[Figure]:
    """Print the quality tables of ``scores`` and return recall@10 of each mode as figures.

    ``targets`` maps a mode to its target ratio over rank_bm25 (default: the headline's).
    """
    targets = {HEADLINE: HEADLINE_TARGET} if targets is None else targets
    headline = headline_mode(scores)
    interval = None if headline is None else bootstrap(scores, headline, seed=seed)
    print(detail_table(scores, categories, title), flush=True)
    print(ablation_table(scores), flush=True)
    if headline is not None:
        print(conversation_table(scores, headline), flush=True)
    for mode in modes:
        other = bootstrap(scores, mode.name, seed=seed)
        if other is not None and mode.name != headline:
            print(interval_text(other), flush=True)
    if interval is not None:
        print(interval_text(interval), flush=True)
    reference = scores.mean(REFERENCE, 10)
    figures: list[Figure] = []
    for mode in modes:
        value = scores.mean(mode.name, 10)
        target = targets.get(mode.name)
        name = f"{title} recall@10, {mode.name}"
        figure = Figure(name, "recall", REFERENCE, target)
        if mode.name == headline:
            figure = QualityFigure(
                name,
                "recall",
                REFERENCE,
                target,
                note="" if interval is None else interval_text(interval),
                details=details(scores, headline, interval, categories),
            )
        if value is None or reference is None:
            figure.skipped = "needs the 'embeddings' extra (all-MiniLM-L6-v2)"
        else:
            figure.engram_samples.append(value)
            figure.reference_samples.append(reference)
        figures.append(figure)
    return figures


@dataclass
class QualityFigure(Figure):
    """The headline LoCoMo figure, whose JSON also carries the whole quality report."""

    details: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Return the figure's fields and the report's details."""
        return {**super().as_json(), "details": self.details}


def headline_mode(scores: Scores) -> str | None:
    """Return the mode set against rank_bm25: hybrid (MiniLM), else the best scored mode."""
    if scores.mean(HEADLINE, 10) is not None:
        return HEADLINE
    scored = [(scores.mean(m.name, 10), m.name) for m in MODES]
    best = [(value, name) for value, name in scored if value is not None]
    # max() keeps the first of equals, so ties go to the earlier (simpler) mode.
    return max(best, key=lambda pair: pair[0])[1] if best else None


def _weights_text(weights: Mapping[str, float]) -> str:
    return ", ".join(f"{name} {value:g}" for name, value in weights.items())
