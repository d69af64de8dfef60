"""Other ways to match a task with a rule's situations, measured on the learning workloads.

``python -m engram.bench.learning_levers [check]`` replays the tuned learning workload (and
the check one, given ``check``) once under MiniLM (:mod:`engram.bench.learning_bench`: the
scars in two rounds, the learning steps, the reviews), then ranks the situational rules in
force for every task by each *lever* below and serves them by the background test of ADR
0092 (:data:`~engram.agents.guidance.CLEAR` above every rule left out, the floor
:data:`~engram.agents.meaning.APPLIES` by the best piece of evidence, at most
:data:`~engram.agents.guidance.MAX_SITUATIONAL`). It prints, per workload and lever, the
bench's serving figures: tasks given their rule (always-on rules included), the share of
served situational rules that apply, unrelated tasks given a rule, and the ceiling (the
right rule ranked first). The first lever is the shipped one; the rest were measured and not
adopted (ADR 0098). Tune on the ``tuned`` workload only; the ``check`` workload confirms.

A lever maps (task, rules, evidence) to one score per rule; only its order and gaps matter
to the test, so a lever on another scale is read with its own gap (``clear``).
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.agents import guidance
from engram.agents.lessons import Lessons
from engram.agents.meaning import APPLIES, STOPWORDS, Calibration, calibration_for, content_words
from engram.bench import learning_bench
from engram.bench.common import data_home, remove_tree
from engram.ledger import Ledger, default_registry
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.rules import Rule
from engram.projections.suggestions import scar_texts

Vectors = npt.NDArray[np.float64]


@dataclass
class Replayed:
    """One workload after its reviews: the situational rules in force, their evidence,
    the refused lessons, each rule's kind of mistake and the tasks (kind None: unrelated)."""

    rules: list[Rule]
    always: set[int]
    kind: dict[int, str]
    evidence: dict[str, list[str]]
    refused: list[list[str]]
    tasks: list[tuple[str | None, str]]


@dataclass
class Pool:
    """What a lever reads for one task: its vector, the rules' pieces and their vectors."""

    task: str
    query: Vectors
    pieces: list[list[str]]
    vectors: list[Vectors]
    calibration: Calibration
    embed: Callable[[Sequence[str]], Vectors]
    refused: Sequence[Sequence[str]]

    def situations(self, i: int) -> list[int]:
        """The rule's text and what happened in each scar (ADR 0092), by piece index."""
        return [0, *range(1, len(self.pieces[i]), 2)]

    def scaled(self, cosine: float) -> float:
        """A cosine on the calibrated scale, not clipped."""
        c = self.calibration
        return (cosine - c.floor) / (c.paraphrase - c.floor)


Lever = Callable[[Pool], list[float]]
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> list[str]:
    """The text's content words, unstemmed, in order, once each."""
    found = _WORD.findall(text.lower())
    return list(
        dict.fromkeys(w for w in found if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS)
    )


def shipped(pool: Pool) -> list[float]:
    """ADR 0092: the mean cosine over the rule's text and what happened in each scar."""
    return [
        pool.scaled(float((v[pool.situations(i)] @ pool.query).mean()))
        for i, v in enumerate(pool.vectors)
    ]


def per_scar_best(pool: Pool) -> list[float]:
    """The best situation alone: each scar's telling compared separately."""
    return [
        pool.scaled(float((v[pool.situations(i)] @ pool.query).max()))
        for i, v in enumerate(pool.vectors)
    ]


def best_two(pool: Pool) -> list[float]:
    """The mean of the two best situations."""
    out = []
    for i, v in enumerate(pool.vectors):
        found = np.sort(v[pool.situations(i)] @ pool.query)[::-1]
        out.append(pool.scaled(float(found[:2].mean())))
    return out


def every_piece(pool: Pool) -> list[float]:
    """The mean over all evidence, the lessons too."""
    return [pool.scaled(float((v @ pool.query).mean())) for v in pool.vectors]


def centroid(pool: Pool) -> list[float]:
    """The cosine with the situations' normalised mean vector (a prototype)."""
    out = []
    for i, v in enumerate(pool.vectors):
        mean = v[pool.situations(i)].mean(axis=0)
        out.append(pool.scaled(float(mean @ pool.query / (np.linalg.norm(mean) or 1.0))))
    return out


def content_strings(pool: Pool) -> list[float]:
    """The shipped mean, on the texts' content words alone (no function words either side:
    a task is a request, a situation an incident report, and their grammar differs)."""
    (query,) = pool.embed([" ".join(_words(pool.task))])
    out = []
    for i, texts in enumerate(pool.pieces):
        parts = [" ".join(_words(texts[j])) for j in pool.situations(i)]
        out.append(pool.scaled(float((pool.embed(parts) @ query).mean())))
    return out


def rarity_words(pool: Pool, weight: float = 0.3) -> list[float]:
    """The shipped mean plus ``weight`` times the task's content words found in the rule's
    evidence, each weighted by its rarity among the rules (log(1 + rules / rules with it))."""
    docs = [set().union(*(content_words(t) for t in texts)) for texts in pool.pieces]
    df = Counter(w for d in docs for w in d)
    task = content_words(pool.task)
    total = sum(math.log(1 + len(docs) / df[w]) for w in task if df[w]) or 1.0
    base = shipped(pool)
    return [
        s + weight * sum(math.log(1 + len(docs) / df[w]) for w in task & d) / total
        for s, d in zip(base, docs, strict=True)
    ]


def word_alignment(pool: Pool) -> list[float]:
    """The shipped mean plus a word-level view (BERTScore-like F1): each task word's best
    cosine with a word of the rule's evidence, and each evidence word's with the task's."""
    words = _words(pool.task)
    base = shipped(pool)
    if not words:
        return base
    task = pool.embed(words)
    out = []
    for s, texts in zip(base, pool.pieces, strict=True):
        theirs = list(dict.fromkeys(w for t in texts for w in _words(t)))
        sims = task @ pool.embed(theirs).T
        p, r = float(sims.max(axis=1).mean()), float(sims.max(axis=0).mean())
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
        out.append(s + f1 / (pool.calibration.paraphrase - pool.calibration.floor))
    return out


def centred(pool: Pool) -> list[float]:
    """The shipped mean on vectors centred on the rule pool's mean piece."""
    mean = np.vstack(pool.vectors).mean(axis=0)
    query = pool.query - mean
    query /= np.linalg.norm(query) or 1.0
    out = []
    for i, v in enumerate(pool.vectors):
        c = v[pool.situations(i)] - mean
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        out.append(
            float((c @ query).mean()) / (pool.calibration.paraphrase - pool.calibration.floor)
        )
    return out


def hubness(pool: Pool) -> list[float]:
    """The shipped mean less half the rule's mean cosine with the other rules' situations
    (CSLS: a rule near every other is near every task too)."""
    base = shipped(pool)
    out = []
    for i, v in enumerate(pool.vectors):
        mine = v[pool.situations(i)]
        others = np.vstack([w[pool.situations(j)] for j, w in enumerate(pool.vectors) if j != i])
        hub = float((mine @ others.T).mean())
        out.append(base[i] - 0.5 * hub / (pool.calibration.paraphrase - pool.calibration.floor))
    return out


def _refused_scores(pool: Pool) -> list[float]:
    """The refused lessons' situation scores, as :func:`shipped` reads a rule's."""
    out = []
    for texts in pool.refused:
        v = pool.embed([texts[0], *texts[1::2]])
        out.append(pool.scaled(float((v @ pool.query).mean())))
    return out


#: The levers, by name: (ranking, gap to stand clear by, refused lessons in the background).
LEVERS: dict[str, tuple[Lever, float, bool]] = {
    "shipped (situation mean)": (shipped, guidance.CLEAR, False),
    "per-scar best situation": (per_scar_best, guidance.CLEAR, False),
    "mean of the two best situations": (best_two, guidance.CLEAR, False),
    "mean over every piece": (every_piece, guidance.CLEAR, False),
    "situations' centroid": (centroid, guidance.CLEAR, False),
    "content words only": (content_strings, guidance.CLEAR, False),
    "+ rarity-weighted words (0.3)": (rarity_words, guidance.CLEAR, False),
    "+ word alignment F1": (word_alignment, guidance.CLEAR, False),
    "+ word alignment F1, gap x2": (word_alignment, 2 * guidance.CLEAR, False),
    "pool-centred vectors": (centred, guidance.CLEAR, False),
    "hubness-corrected (CSLS)": (hubness, guidance.CLEAR, False),
    "refused lessons in the background": (shipped, guidance.CLEAR, True),
}


def replay(embedder: Embedder, workload: learning_bench.Workload, root: str) -> Replayed:
    """Record, learn and review ``workload`` as the learning bench does; return the rules."""
    outcome = learning_bench.Outcome("levers")
    engine_projections = learning_bench.projections_for(embedder)
    try:
        with (
            Ledger.open(f"{root}.db", default_registry()) as ledger,
            ProjectionEngine(ledger, f"{root}.store", engine_projections) as engine,
        ):
            kinds = learning_bench.record(ledger, engine, embedder, outcome, root, workload)
            lessons = Lessons(ledger, engine, embedder=embedder, home=f"{root}-home")
            learning_bench.review(lessons, kinds, outcome, workload)
            every = lessons.rules()
            kind = {}
            for r in every:
                cited = Counter(kinds[c] for c in r.scars if c in kinds)
                if cited:
                    kind[r.position] = cited.most_common(1)[0][0]
            refused = lessons.suggestions(["refused"])
            with engine.read() as conn:
                texts = scar_texts(conn, [c for s in refused for c in s.scars])
            tasks: list[tuple[str | None, str]] = [
                (m.key, t) for m in workload.mistakes for t in m.tasks
            ]
            tasks += [(None, t) for t in workload.unrelated]
            return Replayed(
                [r for r in every if not r.always],
                {r.position for r in every if r.always},
                kind,
                learning_bench.evidence_of(lessons, every),
                [[s.text, *(t for c in s.scars if c in texts for t in texts[c])] for s in refused],
                tasks,
            )
    finally:
        remove_tree(f"{root}.store")


def rank(
    embedder: Embedder,
    rules: Sequence[Rule],
    evidence: Mapping[str, Sequence[str]],
    task: str,
    lever: Lever,
    refused: Sequence[Sequence[str]] = (),
) -> list[guidance.Match]:
    """Return how each of ``rules`` meets ``task`` with its situation score by ``lever``
    (best and typical as the serving reads them); the refused lessons' scores, if given,
    follow as matches with best 0 (never served)."""
    calibration = calibration_for(embedder)
    if calibration is None:
        raise ValueError("a lever needs an embedder with a calibration")
    cache = guidance.cache_for(embedder)

    def embed(texts: Sequence[str]) -> Vectors:
        return np.asarray(cache.vectors(list(texts)), dtype=np.float64)

    pieces = [[r.text, *evidence.get(r.suggestion, ())] for r in rules]
    (query,) = embed([task])
    pool = Pool(task, query, pieces, [embed(p) for p in pieces], calibration, embed, refused)
    found = guidance.scores(rules, task, evidence, embedder)
    ranked = [guidance.Match(m.best, m.typical, s) for m, s in zip(found, lever(pool), strict=True)]
    return ranked + [guidance.Match(0.0, 0.0, s) for s in _refused_scores(pool)]


def measure(
    embedder: Embedder, replayed: Replayed, lever: Lever, clear: float, refused: bool
) -> dict[str, tuple[int, int]]:
    """Serve every task by ``lever`` and the background test; count the bench's figures."""
    rules = replayed.rules
    counts = Counter[str]()
    for kind, task in replayed.tasks:
        text = f"{task} "  # as the frame joins query and task
        others = replayed.refused if refused else []
        ranked = rank(embedder, rules, replayed.evidence, text, lever, others)
        # A refused lesson stands in the background under any rule's name: best 0, never served.
        candidates = [*rules, *([rules[0]] * len(others))]
        served = guidance.clear_of_the_rest(
            candidates, ranked, APPLIES, guidance.MAX_SITUATIONAL, clear
        )
        given = {s.rule.position for s in served}
        counts["given"] += len(given)
        counts["right"] += sum(replayed.kind.get(p) == kind for p in given)
        if kind is None:
            counts["unrelated"] += bool(given)
            counts["unrelated_tasks"] += 1
            continue
        wanted = {p for p, k in replayed.kind.items() if k == kind}
        if not wanted:
            continue
        counts["applicable"] += 1
        counts["served"] += bool(wanted & (given | replayed.always))
        top = max(range(len(rules)), key=lambda i: (ranked[i].situation, ranked[i].best, -i))
        counts["ceiling"] += bool(wanted & replayed.always) or rules[top].position in wanted
    return {
        "served": (counts["served"], counts["applicable"]),
        "precision": (counts["right"], counts["given"]),
        "unrelated": (counts["unrelated"], counts["unrelated_tasks"]),
        "ceiling": (counts["ceiling"], counts["applicable"]),
    }


def main(argv: Sequence[str] = ()) -> int:
    """Print every lever's figures on each workload (``check`` among ``argv``: that one too)."""
    embedder = learning_bench.minilm_or_none(None)
    if embedder is None:
        print("MiniLM is not installed (the onnx or embeddings extra): nothing to measure")
        return 1
    names = ("tuned", "check") if "check" in argv else ("tuned",)
    with tempfile.TemporaryDirectory() as scratch, data_home(os.path.join(scratch, "data")):
        for workload in learning_bench.WORKLOADS:
            if workload.name not in names:
                continue
            replayed = replay(embedder, workload, os.path.join(scratch, workload.name))
            print(f"\n{workload.name} workload (MiniLM): served | apply | unrelated | ceiling")
            for name, (lever, clear, refused) in LEVERS.items():
                figures = measure(embedder, replayed, lever, clear, refused)
                cells = " | ".join(f"{n}/{d}" for n, d in figures.values())
                print(f"  {name:36} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

__all__ = ["LEVERS", "Pool", "Replayed", "main", "measure", "rank", "replay"]
