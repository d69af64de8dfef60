"""Fit recall's item-level weights for the order of a result, then calibrate them (ADR 0100).

Run ``python -m engram.bench.calibrate_rank --load T.npz --family neural|hash|lexical`` on
a table kept by ``python -m engram.bench.calibrate --save T.npz``. The pointwise fit of
:mod:`engram.bench.calibrate` maximises the likelihood of every candidate's label across all
questions, unanswerable ones included: part of its item-level weights goes to telling a
question that has an answer from one that has none (how near *any* candidate is), which says
nothing about the order inside one result. The fits here learn the item-level weights for
that order alone, over the answerable questions with at least one evidence candidate:

- **listwise** (a conditional logit): the sum over each question's evidence candidates of
  log softmax(w . x) among that question's candidates; a bias cancels, so there is none.
  ``ridge`` shrinks the weights of the standardised features towards 0 (a flatter order);
  ``balanced`` weighs a question's evidence by one over its count, so every question counts
  once, as recall@k's mean over questions does.
- **pairwise** (RankNet): a logistic loss on w . (x_i - x_j) for every evidence candidate i
  and other candidate j of the same question (``balanced``: a question's pairs weigh one
  over their count).

Then the score is calibrated: the bias, a scale on that logit and the query-level terms
(:data:`QUERY_TERMS`, as shipped) are fitted pointwise with the order fixed (a positive
scale keeps it), so ``score`` stays an absolute P(relevant) and recall's floor keeps its
meaning. Every figure is held apart by conversation, on the folds of
:func:`engram.bench.calibrate.held_apart`; a paired bootstrap over questions, and the count of
conversations on which a fit's recall@10 is above, equal to or below the pointwise one's, say
whether a difference is beyond noise. ``--drop`` leaves a feature of the family out and
``--extra`` puts a recorded one in (``words``, for instance).

The neural family's shipped item-level weights are this module's listwise fit with each
question counted once (ADR 0100); its BEAM gain comes mostly through the passage contrast,
a prior against long memories. The hash and lexical families keep their pointwise fits.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Sequence
from typing import Literal, overload

import numpy as np

from engram.agents.calibration import CALIBRATIONS, Calibration
from engram.bench.calibrate import (
    COLUMNS,
    DERIVED,
    SEED,
    Table,
    _print,
    design,
    fit,
    item_terms,
    predict,
    question_folds,
    recall_at,
    swapped_rows,
)
from engram.errors import InterfaceError

#: The item-level features of each family's shipped fit (ADR 0091, ADR 0097, ADR 0072).
FEATURES: dict[str, tuple[str, ...]] = {
    "neural": (
        "share",
        "cosine",
        "rank",
        "lexical_rank",
        "semantic_rank",
        "passage",
        "share*length",
    ),
    "lexical": ("share", "rank", "lexical_rank", "share*length"),
    "hash": ("share", "cosine*rank"),
}
#: The query-level terms each family ships (ADR 0090): the same logit for every candidate of
#: a question, refitted with the bias over the item-level logit.
QUERY_TERMS: dict[str, tuple[str, ...]] = {
    "neural": ("absent_names",),
    "hash": ("absent_names",),
    "lexical": (),
}
#: Where each feature's weight goes in a :class:`Calibration`.
FIELDS = {
    "share": "share",
    "cosine": "cosine",
    "rank": "rank",
    "saturated": "saturated",
    "lexical_rank": "lexical_rank",
    "semantic_rank": "semantic_rank",
    "passage": "passage",
    "share*length": "share_length",
    "cosine*rank": "cosine_rank",
    "absent": "absent",
    "absent_names": "absent_names",
    "detail": "detail",
}


class FitError(InterfaceError, ValueError):
    """The table cannot be fitted as asked (no evidence to order, rows that do not agree)."""


def _groups(question: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return which rows belong to a question with evidence among them, and those rows'
    question renumbered 0..m-1."""
    if len(question) != len(y):
        raise FitError(f"{len(question)} question ids for {len(y)} labels")
    positives = np.bincount(question, weights=y)
    keep = positives[question] > 0
    if not keep.any():
        raise FitError("no question has an evidence candidate: nothing to order")
    _, renumbered = np.unique(question[keep], return_inverse=True)
    return keep, renumbered


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``x`` with each column over its spread (1 where it has none), and the spreads."""
    spread = x.std(axis=0)
    spread[spread == 0] = 1.0
    return x / spread, spread


def _newton(
    loss: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]], size: int
) -> np.ndarray:
    """Return the minimum of a convex ``loss`` (value, gradient, Hessian) by damped Newton."""
    w = np.zeros(size)
    value, gradient, hessian = loss(w)
    for _ in range(100):
        step = np.linalg.solve(hessian, gradient)
        scale = 1.0
        while True:
            trial = w - scale * step
            new = loss(trial)
            if new[0] <= value + 1e-12 or scale < 1e-6:
                break
            scale /= 2
        w = trial
        value, gradient, hessian = new
        if np.abs(scale * step).max() < 1e-9:
            break
    return w


def fit_listwise(
    x: np.ndarray,
    y: np.ndarray,
    question: np.ndarray,
    ridge: float = 1e-3,
    balanced: bool = False,
) -> np.ndarray:
    """Return the weights (no bias) maximising, over the questions with evidence among their
    candidates, the sum over evidence candidates of log softmax(w . x) within the question;
    ``ridge`` is on the standardised features' weights; ``balanced`` weighs each question's
    evidence by one over its count, so every question counts once, as recall@k's mean does."""
    keep, q = _groups(question, y)
    z, spread = _standardise(x[keep])
    y = y[keep]
    m, d = int(q.max()) + 1, z.shape[1]
    positives: np.ndarray = np.bincount(q, weights=y, minlength=m)
    if balanced:
        y = y / positives[q]
        positives = np.ones(m)
    observed = z.T @ y

    def loss(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        logits = z @ w
        top = np.full(m, -np.inf)
        np.maximum.at(top, q, logits)
        e = np.exp(logits - top[q])
        total = np.bincount(q, weights=e, minlength=m)
        p = e / total[q]
        normaliser = top + np.log(total)
        mean = np.stack([np.bincount(q, weights=p * z[:, j], minlength=m) for j in range(d)], 1)
        value = -(y @ logits - positives @ normaliser) + ridge * (w @ w) / 2
        gradient = -(observed - positives @ mean) + ridge * w
        weight = positives[q] * p
        hessian = (z * weight[:, None]).T @ z - (mean * positives[:, None]).T @ mean
        return float(value), gradient, hessian + ridge * np.eye(d)

    weights: np.ndarray = _newton(loss, d) / spread
    return weights


@overload
def pairs(x: np.ndarray, y: np.ndarray, question: np.ndarray) -> np.ndarray: ...
@overload
def pairs(
    x: np.ndarray, y: np.ndarray, question: np.ndarray, owners: Literal[True]
) -> tuple[np.ndarray, np.ndarray]: ...
def pairs(
    x: np.ndarray, y: np.ndarray, question: np.ndarray, owners: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Return x_i - x_j for every evidence candidate i and other candidate j of a question
    (``owners``: and each pair's question, renumbered 0..m-1)."""
    keep, q = _groups(question, y)
    x, y = x[keep], y[keep]
    order = np.argsort(q, kind="stable")
    bounds = np.searchsorted(q[order], np.arange(int(q.max()) + 2))
    out = []
    owner: list[np.ndarray] = []
    for start, end in itertools.pairwise(bounds):
        rows = order[start:end]
        good = rows[y[rows] > 0]
        bad = rows[y[rows] == 0]
        if len(good) and len(bad):
            out.append((x[good][:, None, :] - x[bad][None, :, :]).reshape(-1, x.shape[1]))
            owner.append(np.full(len(good) * len(bad), len(owner)))
    if not out:
        raise FitError("no question has both an evidence candidate and another: no pair")
    differences = np.concatenate(out)
    return (differences, np.concatenate(owner)) if owners else differences


def fit_pairwise(
    x: np.ndarray,
    y: np.ndarray,
    question: np.ndarray,
    ridge: float = 1e-3,
    balanced: bool = False,
) -> np.ndarray:
    """Return the weights (no bias) of a logistic loss on w . (x_i - x_j) over :func:`pairs`;
    ``ridge`` is on the standardised features' weights; ``balanced`` weighs a question's
    pairs by one over their count, so every question counts once."""
    _, spread = _standardise(x[_groups(question, y)[0]])
    d, of = pairs(x / spread, y, question, owners=True)
    counts = np.bincount(of)
    weight = 1 / counts[of] if balanced else np.ones(len(d))

    def loss(w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        margin = d @ w
        p = 1 / (1 + np.exp(margin))  # the chance the pair is put the wrong way round
        value = float(weight @ np.logaddexp(0, -margin)) + ridge * (w @ w) / 2
        gradient = -(d.T @ (weight * p)) + ridge * w
        hessian = (d * (weight * p * (1 - p))[:, None]).T @ d + ridge * np.eye(d.shape[1])
        return value, gradient, hessian

    weights: np.ndarray = _newton(loss, d.shape[1]) / spread
    return weights


def calibrate(logit: np.ndarray, query: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Return (bias, scale, query-level weights...) fitted pointwise over an item-level
    ``logit`` whose order is fixed; a scale that is not positive would turn the order over
    and is refused."""
    w = fit(np.column_stack([logit, query]), y)
    if w[1] <= 0:
        raise FitError(f"the calibration's scale came out {w[1]:.3g}: the order does not "
                       "rise with the chance of evidence")  # fmt: skip
    return w


#: A fit of the item-level weights: (features, labels, question ids) -> weights, no bias.
Ranker = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def pointwise(x: np.ndarray, y: np.ndarray, question: np.ndarray) -> np.ndarray:
    """Return the item-level weights of the pointwise fit (:func:`engram.bench.calibrate.fit`)
    over every question's candidates, its bias dropped: the shipped way."""
    return fit(x, y)[1:]


def pointwise_found(x: np.ndarray, y: np.ndarray, question: np.ndarray) -> np.ndarray:
    """Return :func:`pointwise` over the questions with evidence among their candidates
    only: what is left of the pointwise fit's between-question part without the
    unanswerable questions."""
    keep, _ = _groups(question, y)
    return pointwise(x[keep], y[keep], question[keep])


def variants() -> dict[str, Ranker]:
    """Return the fits compared: the pointwise one (over every question, and over those with
    evidence found), the listwise one with a tiny and two small ridges and with each
    question counted once, and the pairwise one, plain and with each question once."""
    return {
        "pointwise": pointwise,
        "pointwise, questions with evidence": pointwise_found,
        "listwise": lambda x, y, q: fit_listwise(x, y, q, 1e-3),
        "listwise, ridge 1": lambda x, y, q: fit_listwise(x, y, q, 1.0),
        "listwise, ridge 10": lambda x, y, q: fit_listwise(x, y, q, 10.0),
        "listwise, each question once": lambda x, y, q: fit_listwise(x, y, q, balanced=True),
        "pairwise": lambda x, y, q: fit_pairwise(x, y, q, 1e-3),
        "pairwise, each question once": lambda x, y, q: fit_pairwise(x, y, q, balanced=True),
    }


def folds_of(t: Table, folds: int) -> np.ndarray:
    """Return each question's fold, as :func:`engram.bench.calibrate.held_apart` assigns them."""
    if folds < 2:
        raise FitError(f"held apart needs at least 2 folds, not {folds}")
    return question_folds(t, folds)


def held_apart(
    t: Table, x: np.ndarray, query: np.ndarray, ranker: Ranker, folds: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Return each candidate's calibrated probability from the item-level weights of
    ``ranker`` and the calibration (:func:`calibrate`), both fitted on the other folds'
    conversations (the swapped questions scored, never fitted on), and each fold's
    (bias, scale, query weights, item weights)."""
    row_fold = folds_of(t, folds)[t.question]
    moved = swapped_rows(t)
    out = np.zeros(len(t.y))
    fitted = []
    for f in range(folds):
        inside = row_fold == f
        train = ~inside & ~moved
        w = ranker(x[train], t.y[train], t.question[train])
        c = calibrate(x[train] @ w, query[train], t.y[train])
        out[inside] = predict(c, np.column_stack([x[inside] @ w, query[inside]]))
        fitted.append(np.concatenate([c, w]))
    return out, fitted


def whole(t: Table, x: np.ndarray, query: np.ndarray, ranker: Ranker) -> np.ndarray:
    """Return (bias, scale, query weights, item weights) fitted on every conversation."""
    moved = swapped_rows(t)
    w = ranker(x[~moved], t.y[~moved], t.question[~moved])
    c = calibrate(x[~moved] @ w, query[~moved], t.y[~moved])
    return np.concatenate([c, w])


def as_calibration(
    fitted: np.ndarray, features: Sequence[str], query: Sequence[str]
) -> Calibration:
    """Return the :class:`Calibration` of a :func:`whole` fit: each item weight times the
    scale, the query-level weights and the bias as they are."""
    bias, scale = fitted[0], fitted[1]
    terms = dict(zip(query, fitted[2 : 2 + len(query)], strict=True))
    terms |= {name: scale * v for name, v in zip(features, fitted[2 + len(query) :], strict=True)}
    unknown = [name for name in terms if name not in FIELDS]
    if unknown:
        raise FitError(f"no calibration field for {unknown}")
    values = {FIELDS[name]: round(float(v), 3) for name, v in terms.items()}
    return Calibration(round(float(bias), 3), **{"share": 0.0, "cosine": 0.0, "rank": 0.0,
                                                  **values})  # fmt: skip


def bootstrap(
    t: Table, a: np.ndarray, b: np.ndarray, of: np.ndarray, draws: int = 2000
) -> tuple[float, float, float]:
    """Return recall@10 over rank_bm25 of ``a`` minus that of ``b`` on the answerable
    questions ``of``, and its 95% interval by a paired bootstrap over those questions."""
    ra, rb = recall_at(t, a)[of], recall_at(t, b)[of]
    reference = t.reference[of]
    rng = np.random.default_rng(SEED)
    picks = rng.integers(0, len(ra), size=(draws, len(ra)))
    spread = (ra[picks].mean(1) - rb[picks].mean(1)) / reference[picks].mean(1)
    low, high = np.quantile(spread, [0.025, 0.975])
    return float((ra.mean() - rb.mean()) / reference.mean()), float(low), float(high)


def by_conversation(t: Table, a: np.ndarray, b: np.ndarray, of: np.ndarray) -> tuple[int, ...]:
    """Return on how many conversations ``a``'s mean recall@10 is above, equal to and below
    ``b``'s, over the answerable questions ``of``."""
    diff = recall_at(t, a) - recall_at(t, b)
    counts = [0, 0, 0]
    for g in sorted(set(t.group[of])):
        d = float(np.mean(diff[of & (t.group == g)]))
        counts[0 if d > 1e-12 else 2 if d < -1e-12 else 1] += 1
    return tuple(counts)


def recall_line(t: Table, p: np.ndarray, of: np.ndarray) -> str:
    """Return the mean recall@5, @10 and @20 over the questions ``of``."""
    return ", ".join(f"@{k} {np.nanmean(recall_at(t, p, k)[of]):.3f}" for k in (5, 10, 20))


def report(
    t: Table,
    family: str,
    folds: int = 5,
    extra: Sequence[str] = (),
    drop: Sequence[str] = (),
) -> None:
    """Print, held apart, each path's own order, the shipped fit, the pointwise refit and
    each ranking fit, with its recall@5/10/20, floors and a paired comparison to the
    pointwise refit; then each fit on everything, as a :class:`Calibration`."""
    missing = [name for name in drop if name not in FEATURES[family]]
    if missing:
        raise FitError(f"{missing} not among the {family} features {FEATURES[family]}")
    features = (*(f for f in FEATURES[family] if f not in drop), *extra)
    vectors = bool(t.x[:, COLUMNS.index("cosine")].any())
    if not vectors and any("cosine" in name for name in features):
        raise FitError(f"the {family} features {features} need vectors; the table has none")
    x = design(t, features)
    query = design(t, QUERY_TERMS[family]) if QUERY_TERMS[family] else np.zeros((len(t.y), 0))
    terms = ", ".join(QUERY_TERMS[family])
    print(f"{len(t.y)} candidates, {int(t.y.sum())} evidence, {len(t.group)} questions; "
          f"{family}: {', '.join(features)}; query-level: {terms}")  # fmt: skip
    sets = {
        prefix: np.array([g.startswith(prefix) for g in t.group]) & t.answerable
        for prefix in sorted({g.split(":")[0] for g in t.group})
    }
    scored: dict[str, np.ndarray] = {}
    for alone in ("cosine", "lexical_rank"):
        if alone == "cosine" and not vectors:
            continue
        scored[f"{alone} alone"] = t.x[:, COLUMNS.index(alone)]
    shipped = CALIBRATIONS[family]
    scored[f"{family} as shipped"] = predict(
        np.array([shipped.bias, *(getattr(shipped, FIELDS[n]) for n in QUERY_TERMS[family])]),
        query,
        item_terms(shipped, t),
    )
    fits: dict[str, list[np.ndarray]] = {}
    for name, ranker in variants().items():
        scored[name], fits[name] = held_apart(t, x, query, ranker, folds)
    for name, p in scored.items():
        _print(t, name, p)
        for prefix, of in sets.items():
            print(f"    {prefix} {recall_line(t, p, of)}")
        if name in fits:
            scales = ", ".join(f"{f[1]:.2f}" for f in fits[name])
            print(f"    the folds' scales: {scales}")
            for f in fits[name]:
                items = f[2 + query.shape[1] :] * f[1]
                print("      fold's item weights: " + ", ".join(
                    f"{n} {v:.2f}" for n, v in zip(features, items, strict=True)))  # fmt: skip
        if name != "pointwise" and "pointwise" in scored:
            for prefix, of in sets.items():
                mean, low, high = bootstrap(t, p, scored["pointwise"], of)
                up, same, down = by_conversation(t, p, scored["pointwise"], of)
                print(f"    {prefix} against pointwise: {mean:+.3f}x [{low:+.3f}, {high:+.3f}];"
                      f" conversations up {up}, same {same}, down {down}")  # fmt: skip
    names = list(QUERY_TERMS[family])
    for name, ranker in variants().items():
        fitted = whole(t, x, query, ranker)
        if all(f in FIELDS for f in features):
            print(f"  {name}, fitted on everything: {as_calibration(fitted, features, names)}")
        else:  # a feature recall does not weigh: the weights as fitted
            weights = ", ".join(f"{v:.3f}" for v in fitted)
            print(f"  {name}, fitted on everything (bias, scale, query, items): {weights}")


def main() -> None:
    """Load a kept table and print :func:`report`."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--load", required=True, help="a table kept by calibrate --save")
    parser.add_argument("--family", choices=tuple(FEATURES), required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--extra", nargs="*", default=[], help="more item-level features")
    parser.add_argument("--drop", nargs="*", default=[], help="features of the family left out")
    args = parser.parse_args()
    unknown = [c for c in args.extra if c not in (*COLUMNS, *DERIVED)]
    if unknown:
        raise SystemExit(f"unknown feature(s) {unknown}; known: {', '.join((*COLUMNS, *DERIVED))}")
    with np.load(args.load) as kept:
        table = Table(**{name: kept[name] for name in kept.files})
    try:
        report(table, args.family, args.folds, args.extra, args.drop)
    except FitError as error:
        raise SystemExit(str(error)) from error


if __name__ == "__main__":
    main()
