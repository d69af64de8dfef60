"""Retrieval quality of recall on BEAM's long chats: evidence recall@k per path, against rank_bm25.

The LoCoMo bench's method (:mod:`engram.bench.recall_bench`) on BEAM (:mod:`engram.bench.beam`):
a ledger per chat, each message observed as ``"<role>: <content>"`` with its batch's date,
every question with evidence asked by a reader with ``record=False`` a day after the last
batch, rank_bm25 over the same texts and tokens, recall@5/10/20 per mode, per category and
per chat, and the paired bootstrap interval of each mode's recall@10 over rank_bm25's. It
also reports what indexing the whole set cost (time, peak memory). Messages average about
2,100 characters, so this is where long memories are measured: the ablation sets the passage
index against whole-text vectors and the postings budget against ADR 0026's 2% share.
"""

from __future__ import annotations

import importlib.util

from engram.agents.memory import DEFAULT_WEIGHTS
from engram.bench import beam
from engram.bench.common import Config, Figure, log
from engram.bench.recall_bench import (
    BOTH,
    HEADLINE,
    LEVERS,
    MODES,
    RELEVANCE_ONLY,
    Indexing,
    Mode,
    check_modes,
    chosen,
    evaluate,
    missing_reference,
    report,
)

#: One lever off at a time, beside the mode it changes: the recall bench's levers, then
#: those long memories add.
ABLATIONS = (
    *LEVERS,
    Mode("minilm, passages", "minilm", ("semantic",), RELEVANCE_ONLY, passages=True),
    Mode("hybrid (minilm), passages", "minilm", BOTH, RELEVANCE_ONLY, passages=True),
    Mode("full, passages", "minilm", BOTH, DEFAULT_WEIGHTS, passages=True),
    Mode("full, 2% pruning", "minilm", BOTH, DEFAULT_WEIGHTS, prune="share"),
)
#: The issue's goals on the development chats: recall@10 over rank_bm25's.
TARGETS = {HEADLINE: 1.5, "full": 1.5, "lexical": 1.0}


def quality(config: Config) -> list[Figure]:
    """The BEAM figures: recall@10 of each mode against rank_bm25, tables, indexing cost."""
    if importlib.util.find_spec("rank_bm25") is None:
        return [missing_reference("BEAM recall@10")]
    check_modes(config, [*MODES, *ABLATIONS])
    chats = beam.load(config.beam)
    skipped = sum(c.skipped for c in chats)
    asked = sum(len(c.questions) for c in chats)
    log(
        f"  BEAM: {len(chats)} chats, {sum(len(c.turns) for c in chats):,} messages, "
        f"{asked} questions with evidence ({skipped} without evidence skipped)"
    )
    indexing = Indexing()
    scores = evaluate(config, extra=ABLATIONS, conversations=chats, indexing=indexing)
    figures = report(
        scores,
        title="BEAM",
        categories=beam.CATEGORIES,
        seed=config.seed,
        targets=TARGETS,
        modes=chosen(config, MODES),
    )
    print(f"BEAM: {asked} questions with evidence, {skipped} without evidence skipped", flush=True)
    print(indexing.text(), flush=True)
    cost = Figure("BEAM indexing", "s", "-", None, note=indexing.text())
    cost.engram_samples.append(indexing.seconds)
    figures.append(cost)
    return figures
