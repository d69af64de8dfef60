"""Fit recall's relevance calibration on the LoCoMo development split (ADR 0051).

Run ``python -m engram.bench.calibrate [--locomo FILE] [--embedder hash|minilm]``. Every
conversation is observed into its own ledger; each of its questions of categories 1-4 is
asked (answerable), and so is a question of another conversation chosen by the seeded
generator (unanswerable here: it speaks of other people and other events). For every
candidate recall gathers, the features recall scores (the content share of the query's
words, the clipped cosine, the fused reciprocal rank over the best possible) are recorded
with a label: 1 when the candidate is one of the question's evidence turns. A logistic
regression (Newton's method, a small ridge) fits P(evidence | features); the script prints
its coefficients, then the floor on the top score that best tells answerable questions from
unanswerable ones, and how often it does.

The probes of the quality suite are not used: the calibration is fitted apart from what it
is judged on.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile

import numpy as np

from engram.agents.matching import Calibration, work_out
from engram.agents.memory import AgentMemory
from engram.bench import locomo
from engram.bench.recall_bench import READER, _open, minilm, observe_conversation
from engram.ledger import Ledger, default_registry
from engram.projections import lexical
from engram.projections.embedding import Embedder, HashEmbedder

SEED = 20261126
PATHS = frozenset(("lexical", "semantic"))


def features(
    memory: AgentMemory, query: str, fetch: int = 30
) -> dict[int, tuple[float, float, float]]:
    """Return each candidate's (share, cosine, rank) as recall scores them."""
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        ranked, _, matching = memory._candidates(
            conn, conn, query, fetch, lexical.memory_types(None), PATHS, None
        )
        if matching is None or not ranked:
            return {}
        work_out(ranked, sorted(ranked), matching)
    ran = [
        p
        for p, on in (("lexical", matching.weights), ("semantic", matching.vector))
        if on is not None
    ]
    best = sum(memory.fusion[p] for p in ran) / (memory.rrf_k + 1)
    return {
        p: (c.share, min(max(c.cosine or 0.0, 0.0), 1.0), min(c.fused / best, 1.0))
        for p, c in ranked.items()
    }


def collect(
    path: str | None, embedder: Embedder, scratch: str
) -> tuple[np.ndarray, np.ndarray, list[tuple[bool, list[int]]]]:
    """Return the feature rows, their labels, and per question (answerable, its rows)."""
    conversations = locomo.load(path)
    rng = random.Random(SEED)
    rows: list[tuple[float, float, float]] = []
    labels: list[int] = []
    asked: list[tuple[bool, list[int]]] = []
    for conversation in conversations:
        others = [q for c in conversations if c is not conversation for q in c.questions]
        base = os.path.join(scratch, conversation.sample_id)
        with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
            engine, searcher = _open(ledger, base + ".store", embedder)
            try:
                dia = observe_conversation(ledger, engine, conversation)
                engine.catch_up()
                memory = AgentMemory(READER, ledger, engine, embedder=embedder, searcher=searcher)
                for question in conversation.questions:
                    for answerable, q in ((True, question), (False, rng.choice(others))):
                        found = features(memory, q.text)
                        mine = []
                        for p, f in found.items():
                            mine.append(len(rows))
                            rows.append(f)
                            labels.append(int(answerable and dia[p] in question.evidence))
                        asked.append((answerable, mine))
            finally:
                engine.close()
    return np.array(rows, dtype=np.float64), np.array(labels, dtype=np.float64), asked


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Return logistic regression coefficients (bias first) by Newton's method."""
    a = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(a.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-(a @ w)))
        gradient = a.T @ (p - y) + ridge * w
        hessian = (a * (p * (1 - p))[:, None]).T @ a + ridge * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def separation(scores: list[tuple[bool, float]]) -> tuple[float, float]:
    """Return the threshold on the top score that best separates, and its accuracy."""
    best = (0.0, 0.0)
    for t in sorted({s for _, s in scores}):
        right = sum((s >= t) == answerable for answerable, s in scores) / len(scores)
        if right > best[1]:
            best = (t, right)
    return best


def main() -> None:
    """Collect, fit, and print the calibration and the floor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=None)
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--embedding-cache", default=None, help="a file keeping MiniLM vectors")
    args = parser.parse_args()
    embedder = HashEmbedder() if args.embedder == "hash" else minilm(args.embedding_cache)
    if embedder is None:
        raise SystemExit("MiniLM needs the 'embeddings' extra")
    with tempfile.TemporaryDirectory() as scratch:
        x, y, asked = collect(args.locomo, embedder, scratch)
    w = fit(x, y)
    calibration = Calibration(*map(float, w))
    print(f"{args.embedder}: {len(y)} candidates, {int(y.sum())} evidence")
    print(f"  Calibration({', '.join(f'{v:.3f}' for v in w)})")
    for name, columns in (("lexical", [0, 2]), ("lexical share only", [0])):
        sub = fit(x[:, columns], y)
        print(f"  {name}: {', '.join(f'{v:.3f}' for v in sub)}")
    tops = []
    for answerable, mine in asked:
        top = max((calibration.relevance(*x[i]) for i in mine), default=0.0)
        tops.append((answerable, top))
    threshold, accuracy = separation(tops)
    print(f"  top-score floor {threshold:.3f} separates answerable from not: {accuracy:.1%}")


if __name__ == "__main__":
    main()
