"""Fit recall's relevance calibration on LoCoMo and BEAM dev, held apart by conversation.

Run ``python -m engram.bench.calibrate [--embedder hash|minilm] [--folds 5]``. Every
conversation (LoCoMo) and chat (BEAM) is observed into its own ledger; each of its questions
with evidence is asked (answerable), and so is a question of another conversation of the
same data set chosen by the seeded generator (unanswerable there: it speaks of other people
and other events); so is, where it names a speaker, a question of another conversation asked
of this one's speakers (:func:`_swap`; ADR 0095: a held subject's detail the conversation
does not give), reported apart and fitted on only where a line says so. For every
candidate recall gathers, the features recall scores are recorded (:data:`COLUMNS`) with a
label: 1 when the candidate is one of the question's evidence turns. A logistic regression
(Newton's method, a small ridge) fits P(evidence | features).

Every refit's figures are out of sample: the conversations are split into folds, the model
is fitted on the others' candidates and scores the fold's (ADR 0072), so the recall@10
beside rank_bm25 and the floors' separation of answerable from unanswerable questions, per
data set, are those of conversations the fit did not see. The embedder's shipped fit is
scored first, as it is (in sample where it was fitted on these sets); then its query-level
terms are refitted over its item-level terms (a fixed offset: the order of every result
stays, ADR 0090); then each feature set is refitted whole. Each fit's coefficients on
everything are printed, for :data:`engram.agents.calibration.CALIBRATIONS`.
``--save`` keeps the gathered table and ``--load`` reports on a kept one.

The probes of the quality suite are not used: the calibration is fitted apart from what it
is judged on.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engram.agents import contiguity
from engram.agents.calibration import CALIBRATIONS, Calibration
from engram.agents.matching import content_share, saturated_share, without_names, work_out
from engram.agents.memory import AgentMemory
from engram.bench import beam, locomo
from engram.bench.common import data_home, log
from engram.bench.recall_bench import (
    READER,
    _open,
    bm25_reference,
    minilm,
    observe_conversation,
)
from engram.ledger import Ledger, default_registry
from engram.projections import lexical, semantic
from engram.projections.embedding import Embedder, HashEmbedder

SEED = 20261126
#: The features recorded per candidate: the content share (ADR 0051), the length-fair share
#: (ADR 0072), the clipped cosine, the fused reciprocal rank over the best possible, the
#: text's length in words (for the analysis only), each path's own reciprocal rank over its
#: best (0: the path did not find it), the best cosine of the text's passages (ADR 0054;
#: its head's when it has none), the best cosine and content share of the memories next
#: to it in its episode (one on each side, as bloom walks them: ADR 0091), the query's
#: absent shares over every content word and over its names (ADR 0090: the same for every
#: candidate of a question), the cosine of the query without its names (ADR 0095; the
#: cosine where it writes none), its best over the question's candidates (the query-level
#: ``detail``) and whether the query writes names.
COLUMNS = (
    "share",
    "saturated",
    "cosine",
    "rank",
    "words",
    "lexical_rank",
    "semantic_rank",
    "passage",
    "neighbour_cosine",
    "neighbour_share",
    "absent",
    "absent_names",
    "masked_cosine",
    "detail",
    "named",
)


@dataclass
class Table:
    """The candidates of every question asked: features, labels, and who asked what."""

    x: np.ndarray  # (candidates, len(COLUMNS))
    y: np.ndarray  # 1: one of the question's evidence turns
    question: np.ndarray  # the question each candidate answers (an index into the below)
    group: np.ndarray  # per question: its conversation (data set prefix + index)
    answerable: np.ndarray  # per question
    evidence: np.ndarray  # per question: how many evidence turns it cites
    reference: np.ndarray  # per question: rank_bm25's recall@10 (answerable ones)
    #: per question: another conversation's question asked of this one's speakers (ADR 0095)
    swapped: np.ndarray | None = None


def features(
    memory: AgentMemory,
    query: str,
    paths: frozenset[str],
    fetch: int = 30,
    passages: dict[int, np.ndarray] | None = None,
) -> dict[int, tuple[float, ...]]:
    """Return each candidate's features (:data:`COLUMNS`) as recall scores them;
    ``passages`` keeps each text's passage vectors between questions."""
    memory.engine.wait_for(memory.ledger.head())
    with memory.engine.read() as conn:
        ranked, _, matching = memory._candidates(
            conn, conn, query, fetch, lexical.memory_types(None), paths, None
        )
        if matching is None or not ranked:
            return {}
        work_out(ranked, sorted(ranked), matching)
        around = lexical.neighbours(
            conn, sorted(ranked), 1, agent=memory.agent, gap_us=contiguity.EPISODE_GAP_US
        )
        near = sorted({q for pairs in around.values() for q, _ in pairs} - set(ranked))
        texts = {**matching.texts, **(lexical.texts(conn, near) if near else {})}
        stored = semantic.vectors_of(conn, near) if matching.vector is not None else {}
        own = semantic.vectors_of(conn, sorted(ranked)) if matching.vector is not None else {}
    ran = [p for p, on in (("lexical", matching.weights), ("semantic", matching.vector))
           if on is not None]  # fmt: skip
    best = sum(memory.fusion[p] for p in ran) / (memory.rrf_k + 1)
    weights = matching.share_weights or {}
    vector = matching.vector
    cosine = {p: min(max(c.cosine or 0.0, 0.0), 1.0) for p, c in ranked.items()}
    if vector is not None:
        for q, blob in stored.items():
            cosine[q] = min(max(float(np.frombuffer(blob, dtype=np.float32) @ vector), 0.0), 1.0)
    rest = without_names(query)
    masked = dict(cosine)
    if vector is not None and rest is not None and memory.embedder is not None:
        detail = np.asarray(memory.embedder.embed([rest])[0], dtype=np.float32)
        for p, blob in own.items():
            masked[p] = min(max(float(np.frombuffer(blob, dtype=np.float32) @ detail), 0.0), 1.0)
    best_detail = max((masked[p] for p in ranked), default=0.0)
    found: dict[int, tuple[float, ...]] = {}
    for p, c in ranked.items():
        text = texts.get(p, "")
        pairs = around.get(p, [])
        found[p] = (
            c.share,
            saturated_share(weights, text, matching.codes, matching.average),
            cosine[p],
            min(c.fused / best, 1.0),
            float(len(lexical.tokens(text))),
            c.lexical_rank,
            c.semantic_rank,
            _passage(memory, p, text, cosine[p], vector, passages),
            max((cosine.get(q, 0.0) for q, _ in pairs), default=0.0),
            max(
                (content_share(weights, texts.get(q, ""), matching.codes) for q, _ in pairs),
                default=0.0,
            ),
            matching.absent,
            matching.absent_names,
            masked[p],
            best_detail,
            float(rest is not None),
        )
    return found


def _passage(
    memory: AgentMemory,
    position: int,
    text: str,
    head: float,
    vector: np.ndarray | None,
    kept: dict[int, np.ndarray] | None,
) -> float:
    """Return the best cosine of the text's head and passages (ADR 0054) to the query."""
    if vector is None or memory.embedder is None:
        return head
    kept = {} if kept is None else kept
    if position not in kept:
        parts = semantic.passages(text)
        kept[position] = (
            np.asarray(memory.embedder.embed(parts), dtype=np.float32)
            if parts
            else np.zeros((0, len(vector)), dtype=np.float32)
        )
    scored = kept[position] @ vector
    return max(head, min(max(float(scored.max()), 0.0), 1.0)) if len(scored) else head


def collect(
    sets: Sequence[tuple[str, Sequence[locomo.Conversation]]],
    embedder: Embedder,
    paths: frozenset[str],
    scratch: str,
    save: str | None = None,
    swap: bool = True,
) -> Table:
    """Ask every question with evidence, and one of another conversation, over ``paths``;
    with ``save``, keep the table gathered so far in that .npz after each conversation."""
    rng = random.Random(SEED)
    swaps = random.Random(SEED + 1)  # its own draws: the other questions stay as they were
    rows: list[tuple[float, ...]] = []
    labels: list[int] = []
    question: list[int] = []
    group: list[str] = []
    answerable: list[bool] = []
    evidence: list[int] = []
    reference: list[float] = []
    swapped: list[bool] = []
    for name, conversations in sets:
        for conversation in conversations:
            others = [q for c in conversations if c is not conversation for q in c.questions]
            sources = [(c, q) for c in conversations if c is not conversation
                       for q in c.questions]  # fmt: skip
            rank = bm25_reference(conversation)
            base = os.path.join(scratch, f"{name}-{conversation.sample_id}")
            with Ledger.open(base + ".db", default_registry(), durability="fast") as ledger:
                engine, searcher = _open(ledger, base + ".store", embedder, passages=False)
                try:
                    dia = observe_conversation(ledger, engine, conversation)
                    engine.catch_up()
                    memory = AgentMemory(
                        READER, ledger, engine, embedder=embedder, searcher=searcher
                    )
                    kept: dict[int, np.ndarray] = {}
                    for q in conversation.questions:
                        asks = [(True, q.text, False), (False, rng.choice(others).text, False)]
                        if swap:
                            source, other = swaps.choice(sources)
                            text = _swap(other.text, source, conversation)
                            if text is not None:
                                asks.append((False, text, True))
                        for asked, which, moved in asks:
                            for p, f in features(memory, which, paths, passages=kept).items():
                                rows.append(f)
                                labels.append(int(asked and dia[p] in q.evidence))
                                question.append(len(group))
                            group.append(f"{name}:{conversation.sample_id}")
                            answerable.append(asked)
                            evidence.append(len(q.evidence))
                            found = set(rank(q.text, 10)) if asked else set()
                            reference.append(len(found & q.evidence) / len(q.evidence))
                            swapped.append(moved)
                finally:
                    engine.close()
            log(f"  {name} {conversation.sample_id}: {len(group)} questions asked")
            if save:
                np.savez(save, **_table(rows, labels, question, group, answerable, evidence,
                                        reference, swapped).__dict__)  # fmt: skip
    return _table(rows, labels, question, group, answerable, evidence, reference, swapped)


def speakers(conversation: locomo.Conversation) -> list[str]:
    """Return the conversation's speakers in the order they first speak."""
    return list(dict.fromkeys(t.speaker for t in conversation.turns))


def _swap(text: str, source: locomo.Conversation, target: locomo.Conversation) -> str | None:
    """Return ``source``'s question ``text`` asked of ``target``'s speakers (the first
    speaker's name for the first's, the second's for the second's), None when it names
    neither: a question about a held person's detail the conversation does not give."""
    original = text
    pairs = list(zip(speakers(source), speakers(target), strict=False))
    if not any(re.search(rf"\b{re.escape(a)}\b", text) for a, _ in pairs):
        return None
    for i, (a, _) in enumerate(pairs):
        text = re.sub(rf"\b{re.escape(a)}\b", f"\0{i}\0", text)
    for i, (_, b) in enumerate(pairs):
        text = text.replace(f"\0{i}\0", b)
    return None if text == original else text


def _table(
    rows: list[tuple[float, ...]],
    labels: list[int],
    question: list[int],
    group: list[str],
    answerable: list[bool],
    evidence: list[int],
    reference: list[float],
    swapped: list[bool],
) -> Table:
    return Table(
        np.array(rows, dtype=np.float64).reshape(-1, len(COLUMNS)),
        np.array(labels, dtype=np.float64),
        np.array(question),
        np.array(group),
        np.array(answerable),
        np.array(evidence),
        np.array(reference),
        np.array(swapped),
    )


def fit(
    x: np.ndarray, y: np.ndarray, ridge: float = 1e-3, offset: np.ndarray | None = None
) -> np.ndarray:
    """Return logistic regression coefficients (bias first) by Newton's method; ``offset``
    is a fixed part of each row's logit (the item-level terms of a shipped fit, ADR 0090)."""
    a = np.hstack([np.ones((len(x), 1)), x])
    fixed = np.zeros(len(x)) if offset is None else offset
    w = np.zeros(a.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(a @ w + fixed)))
        gradient = a.T @ (p - y) + ridge * w
        hessian = (a * (p * (1 - p))[:, None]).T @ a + ridge * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def predict(w: np.ndarray, x: np.ndarray, offset: np.ndarray | None = None) -> np.ndarray:
    """Return the fitted probabilities of the rows ``x`` (``offset``: as :func:`fit`)."""
    z = w[0] + x @ w[1:] + (0.0 if offset is None else offset)
    probabilities: np.ndarray = 1 / (1 + np.exp(-z))
    return probabilities


def swapped_rows(t: Table) -> np.ndarray:
    """Return which candidates answer a swapped question (:func:`_swap`)."""
    if t.swapped is None:
        return np.zeros(len(t.y), dtype=bool)
    moved: np.ndarray = t.swapped[t.question]
    return moved


def question_folds(t: Table, folds: int) -> np.ndarray:
    """Return each question's fold: conversations shuffled by the seeded generator, dealt
    round the folds, so a conversation's questions stay in one fold."""
    names = sorted(set(t.group))
    random.Random(SEED).shuffle(names)
    fold_of = {name: i % folds for i, name in enumerate(names)}
    return np.array([fold_of[g] for g in t.group])


def held_apart(
    t: Table,
    columns: Sequence[int],
    folds: int,
    offset: np.ndarray | None = None,
    with_swapped: bool = False,
) -> np.ndarray:
    """Return each candidate's probability from a model fitted on the other folds'
    conversations (folds assigned by the seeded generator, conversation by conversation);
    the swapped questions are scored, and fitted on only ``with_swapped``."""
    row_fold = question_folds(t, folds)[t.question]
    moved = swapped_rows(t) if not with_swapped else np.zeros(len(t.y), dtype=bool)
    out = np.zeros(len(t.y))
    for f in range(folds):
        inside = row_fold == f
        train = ~inside & ~moved
        fixed = None if offset is None else offset[train]
        w = fit(t.x[train][:, columns], t.y[train], offset=fixed)
        out[inside] = predict(
            w, t.x[inside][:, columns], None if offset is None else offset[inside]
        )
    return out


def recall_at(t: Table, p: np.ndarray, k: int = 10) -> np.ndarray:
    """Return each answerable question's evidence recall@k when its candidates are ordered
    by ``p`` (NaN for the unanswerable)."""
    out = np.full(len(t.group), np.nan)
    order = np.lexsort((-p, t.question))
    q_sorted = t.question[order]
    starts = np.searchsorted(q_sorted, np.arange(len(t.group)))
    ends = np.searchsorted(q_sorted, np.arange(len(t.group)), side="right")
    for q in np.flatnonzero(t.answerable):
        top = order[starts[q] : ends[q]][:k]
        out[q] = t.y[top].sum() / t.evidence[q]
    return out


def tops(t: Table, p: np.ndarray) -> np.ndarray:
    """Return each question's top probability (0 where nothing was found)."""
    top = np.zeros(len(t.group))
    np.maximum.at(top, t.question, p)
    return top


def separation(t: Table, top: np.ndarray, floor: float) -> float:
    """Return the share of questions a floor on the top score classes right."""
    return float(((top >= floor) == t.answerable).mean())


def best_floor(t: Table, top: np.ndarray) -> tuple[float, float]:
    """Return the threshold on the top score that best separates, and its accuracy."""
    best = (0.0, 0.0)
    for f in sorted(set(top.tolist())):
        right = separation(t, top, f)
        if right > best[1]:
            best = (f, right)
    return best


def reliability(p: np.ndarray, y: np.ndarray, bins: int = 8) -> list[tuple[float, float, int]]:
    """Return (mean predicted, observed rate, count) per bin of predicted probability."""
    edges = np.quantile(p, np.linspace(0, 1, bins + 1))
    out = []
    for lo, hi in itertools.pairwise(edges):
        inside = (p >= lo) & (p <= hi)
        if inside.any():
            out.append((float(p[inside].mean()), float(y[inside].mean()), int(inside.sum())))
    return out


def load_sets(which: str) -> list[tuple[str, list[locomo.Conversation]]]:
    """Return the data sets to fit on: ``locomo``, ``beam`` or ``both``."""
    sets: list[tuple[str, list[locomo.Conversation]]] = []
    if which in ("locomo", "both"):
        sets.append(("locomo", locomo.load(None)))
    if which in ("beam", "both"):
        sets.append(("beam", beam.load(None)))
    return sets


def main() -> None:
    """Collect, fit held apart, and print recall, the calibration and the floor."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--paths", choices=("lexical", "semantic", "both"), default="both")
    parser.add_argument("--data", choices=("locomo", "beam", "both"), default="both")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--save", default=None, help="keep the table in this .npz file")
    parser.add_argument("--load", default=None, help="report on a table kept by --save")
    parser.add_argument("--sets", nargs="*", default=list(SETS), help="feature sets, a+b+c")
    parser.add_argument("--embedding-cache", default=os.path.expanduser(
        "~/.cache/engram/bench-embeddings.db"))  # fmt: skip
    args = parser.parse_args()
    unknown = [c for name in args.sets for c in name.split("+") if c not in (*COLUMNS, *DERIVED)]
    if unknown:
        raise SystemExit(f"unknown feature(s) {unknown}; known: {', '.join((*COLUMNS, *DERIVED))}")
    family = "hash" if args.embedder == "hash" else "neural"
    if args.paths == "lexical":
        family = "lexical"
    if args.load:
        with np.load(args.load) as kept:
            table = Table(**{name: kept[name] for name in kept.files})
        report(table, args.folds, family, args.sets)
        return
    cache = args.embedding_cache
    embedder = HashEmbedder() if args.embedder == "hash" else minilm(cache, onnx=True)
    if embedder is None:
        raise SystemExit("MiniLM needs the 'onnx' or the 'embeddings' extra")
    paths = frozenset(("lexical", "semantic")) if args.paths == "both" else frozenset([args.paths])
    with tempfile.TemporaryDirectory() as scratch, data_home(scratch):
        t = collect(load_sets(args.data), embedder, paths, scratch, args.save)
    report(t, args.folds, family, args.sets)


#: The floors whose separation the report prints, beside the best one.
FLOORS = (0.03, 0.05, 0.08, 0.1)
#: The feature sets compared, by :func:`design`'s names joined by "+": ADR 0051's and ADR
#: 0072's fits, each path's own rank (ADR 0091, shipped for MiniLM), the neighbours and the
#: passages (ADR 0091, measured), and ADR 0090's query-level term refitted whole.
SETS = (
    "share+cosine+rank",
    "saturated+cosine+rank",
    "share+cosine+cosine*rank",
    "share+cosine+rank+semantic_rank+lexical_rank",
    "share+cosine+rank+semantic_rank+lexical_rank+masked_cosine",
    "share+cosine+rank+neighbour_cosine+neighbour_share",
    "share+cosine+passage+rank",
    "share+cosine+rank+absent",
    "share+cosine+cosine*rank+absent",
)


#: The query-level terms refitted over a shipped fit's item-level terms (ADR 0090).
QUERY_SETS: tuple[tuple[str, ...], ...] = (
    ("absent",),
    ("absent_names",),
    ("absent", "absent_names"),
    ("absent_names", "detail"),
)


#: Features derived from the recorded ones: cosine x rank (ADR 0072) and the content share
#: times ln(1 + the text's words) (ADR 0097: what recall's ``share_length`` weighs).
DERIVED = ("cosine*rank", "share*length")


def design(t: Table, names: Sequence[str]) -> np.ndarray:
    """Return the columns ``names`` of the table: a recorded feature or a derived one
    (:data:`DERIVED`)."""
    columns = []
    for name in names:
        if name == "cosine*rank":
            columns.append(t.x[:, COLUMNS.index("cosine")] * t.x[:, COLUMNS.index("rank")])
        elif name == "share*length":
            length = np.log1p(t.x[:, COLUMNS.index("words")])
            columns.append(t.x[:, COLUMNS.index("share")] * length)
        else:
            columns.append(t.x[:, COLUMNS.index(name)])
    return np.stack(columns, axis=1)


def held_apart_design(t: Table, x: np.ndarray, folds: int) -> np.ndarray:
    """:func:`held_apart` over a design matrix ``x`` (the rows of ``t``)."""
    return held_apart(Table(x, t.y, t.question, t.group, t.answerable, t.evidence, t.reference,
                            t.swapped), list(range(x.shape[1])), folds)  # fmt: skip


def item_terms(calibration: Calibration, t: Table) -> np.ndarray:
    """Return each candidate's item-level logit under ``calibration``, its bias left out."""
    names = ("share", "saturated", "cosine", "rank", "lexical_rank", "semantic_rank", "passage")
    column = {name: t.x[:, COLUMNS.index(name)] for name in names}
    length = np.log1p(t.x[:, COLUMNS.index("words")])
    terms: np.ndarray = (
        calibration.share * column["share"]
        + calibration.saturated * column["saturated"]
        + calibration.cosine * column["cosine"]
        + calibration.rank * column["rank"]
        + calibration.cosine_rank * column["cosine"] * column["rank"]
        + calibration.lexical_rank * column["lexical_rank"]
        + calibration.semantic_rank * column["semantic_rank"]
        + calibration.passage * column["passage"]
        + calibration.share_length * column["share"] * length
    )
    return terms


def report(t: Table, folds: int, family: str, sets: Sequence[str] = SETS) -> None:
    """Print each path's own order, the shipped fit of ``family`` (:data:`CALIBRATIONS`),
    its query-level refit (ADR 0090: the bias and the absent share over the shipped
    item-level terms, which keeps every result's order), then each feature set of ``sets``
    refitted whole; all held apart."""
    print(f"{len(t.y)} candidates, {int(t.y.sum())} evidence, {len(t.group)} questions")
    for alone in ("cosine", "lexical_rank"):
        _print(t, f"{alone} alone", t.x[:, COLUMNS.index(alone)])
    shipped = CALIBRATIONS[family]
    terms = item_terms(shipped, t)
    absent = [COLUMNS.index("absent"), COLUMNS.index("absent_names"), COLUMNS.index("detail")]
    before = shipped._replace(absent=0.0, absent_names=0.0, detail=0.0)
    _print(t, f"{family} shipped, its query-level terms at 0", predict(np.array([before.bias]),
           np.zeros((len(t.y), 0)), terms))  # fmt: skip
    _print(t, f"{family} as shipped",
           predict(np.array([shipped.bias, shipped.absent, shipped.absent_names, shipped.detail]),
                   t.x[:, absent], terms))  # fmt: skip
    moved = swapped_rows(t)
    first = np.zeros(len(t.group), dtype=int)
    first[t.question[::-1]] = np.arange(len(t.question))[::-1]
    detail = t.x[first, COLUMNS.index("detail")]
    kinds = {"answerable": t.answerable, "another's": ~t.answerable}
    if t.swapped is not None:
        kinds = {"answerable": t.answerable, "another's": ~t.answerable & ~t.swapped,
                 "swapped": t.swapped}  # fmt: skip
    medians = [f"{kind} {np.median(detail[of]):.3f}" for kind, of in kinds.items() if of.any()]
    print("  the query's detail, median per question: " + "; ".join(medians))
    for query, swapped in itertools.product(QUERY_SETS, (False, True)):
        if swapped and not moved.any():
            continue
        columns = [COLUMNS.index(name) for name in query]
        name = f"{family} refit: {'+'.join(query)}" + (", fitted with the swapped" * swapped)
        _print(t, name, held_apart(t, columns, folds, terms, with_swapped=swapped))
        rows = np.ones(len(t.y), dtype=bool) if swapped else ~moved
        w = fit(t.x[rows][:, columns], t.y[rows], offset=terms[rows])
        print(f"    whole fit: bias {w[0]:.3f}, " + ", ".join(
            f"{name} {v:.3f}" for name, v in zip(query, w[1:], strict=True)))  # fmt: skip
    vectors = bool(t.x[:, COLUMNS.index("cosine")].any())
    for name in sets:
        names = name.split("+")
        if not vectors and "cosine" in names:
            continue
        x = design(t, names)
        _print(t, name, held_apart_design(t, x, folds))
        print(f"    whole fit: {', '.join(f'{v:.3f}' for v in fit(x[~moved], t.y[~moved]))}")


def _print(t: Table, name: str, p: np.ndarray) -> None:
    """Print the recall@10 beside rank_bm25's and the floors' separation, per data set; the
    swapped questions (:func:`_swap`) apart, as the share of them each floor leaves empty."""
    r = recall_at(t, p)
    top = tops(t, p)
    moved = np.zeros(len(t.group), dtype=bool) if t.swapped is None else t.swapped
    for prefix in sorted({g.split(":")[0] for g in t.group}):
        of = np.array([g.startswith(prefix) for g in t.group]) & ~moved
        mine = of & t.answerable
        ratio = np.nanmean(r[mine]) / t.reference[mine].mean()
        right = {f: float(((top[of] >= f) == t.answerable[of]).mean()) for f in FLOORS}
        floors = "; ".join(f"floor {f:g}: {v:.1%}" for f, v in right.items())
        print(f"  {name} {prefix}: recall@10 {np.nanmean(r[mine]):.3f} ({ratio:.3f}x); {floors}")
        if (of_moved := moved & np.array([g.startswith(prefix) for g in t.group])).any():
            empty = "; ".join(f"floor {f:g}: {float((top[of_moved] < f).mean()):.1%}"
                              for f in FLOORS)  # fmt: skip
            print(f"    swapped {prefix} ({int(of_moved.sum())}), left empty: {empty}")
    kept = Table(t.x, t.y, t.question, t.group[~moved], t.answerable[~moved], t.evidence[~moved],
                 t.reference[~moved])  # fmt: skip
    floor, accuracy = best_floor(kept, top[~moved])
    print(f"    best top floor {floor:.3f}: {accuracy:.1%}")


if __name__ == "__main__":
    main()
