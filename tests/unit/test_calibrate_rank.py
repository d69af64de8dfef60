"""The ranking fits of recall's item-level weights and their calibration (ADR 0100)."""

from __future__ import annotations

import numpy as np
import pytest

from engram.agents.calibration import Calibration
from engram.bench.calibrate import COLUMNS, Table, predict
from engram.bench.calibrate_rank import (
    FitError,
    as_calibration,
    calibrate,
    fit_listwise,
    fit_pairwise,
    folds_of,
    held_apart,
    pairs,
    pointwise,
)
from engram.bench.calibrate_work import slack

SEED = 20261127


def _softmax_table(
    w: np.ndarray, questions: int = 600, size: int = 20, seed: int = SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return candidates whose one evidence per question is drawn from softmax(x . w)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(questions * size, len(w)))
    question = np.repeat(np.arange(questions), size)
    y = np.zeros(len(x))
    for q in range(questions):
        logits = x[q * size : (q + 1) * size] @ w
        p = np.exp(logits - logits.max())
        y[q * size + rng.choice(size, p=p / p.sum())] = 1.0
    return x, y, question


def _confounded(seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return a table where, inside a question, the evidence has a high ``a`` and a low ``b``,
    while ``b`` is mostly the question's own level: high where the question has an answer,
    low where it has none (so across questions a high ``b`` goes with evidence)."""
    rng = np.random.default_rng(seed)
    questions, size = 600, 20
    question = np.repeat(np.arange(questions), size)
    answerable = rng.random(questions) < 0.5
    a = rng.normal(size=questions * size)
    noise = rng.normal(size=questions * size)
    b = np.where(answerable, 2.0, -2.0)[question] + noise
    y = np.zeros(questions * size)
    for q in np.flatnonzero(answerable):
        rows = slice(q * size, (q + 1) * size)
        logits = 2.0 * a[rows] - noise[rows]
        p = np.exp(logits - logits.max())
        y[q * size + rng.choice(size, p=p / p.sum())] = 1.0
    return np.column_stack([a, b]), y, question


def _top_hit_rate(x: np.ndarray, y: np.ndarray, question: np.ndarray, w: np.ndarray) -> float:
    """Return the share of questions with evidence whose top candidate under x . w is one."""
    hits = []
    for q in np.unique(question[y > 0]):
        rows = np.flatnonzero(question == q)
        hits.append(y[rows[np.argmax(x[rows] @ w)]])
    return float(np.mean(hits))


def test_the_listwise_fit_recovers_the_weights_the_evidence_was_drawn_with() -> None:
    truth = np.array([2.0, -1.0, 0.0])
    x, y, question = _softmax_table(truth)
    w = fit_listwise(x, y, question)
    np.testing.assert_allclose(w, truth, atol=0.25)


def test_the_listwise_fit_does_not_depend_on_the_features_scale() -> None:
    x, y, question = _softmax_table(np.array([1.5, 0.5]))
    w = fit_listwise(x, y, question)
    scaled = fit_listwise(x * np.array([10.0, 0.1]), y, question)
    np.testing.assert_allclose(scaled * np.array([10.0, 0.1]), w, rtol=1e-4)


def test_a_shift_shared_by_a_question_s_candidates_changes_no_listwise_weight() -> None:
    x, y, question = _softmax_table(np.array([1.0, 1.0]), questions=200)
    shift = np.random.default_rng(SEED + 1).normal(size=200)[question]
    moved = x + shift[:, None] * np.array([1.0, 0.0])
    np.testing.assert_allclose(fit_listwise(moved, y, question), fit_listwise(x, y, question),
                               atol=0.02)  # fmt: skip


def test_a_query_level_confound_misleads_the_pointwise_order_and_not_the_ranking_fits() -> None:
    x, y, question = _confounded()
    apart = _confounded(SEED + 1)
    point = pointwise(x, y, question)
    listwise = fit_listwise(x, y, question)
    pairwise = fit_pairwise(x, y, question)
    # The pointwise fit weighs b up for telling the questions apart, against its weight
    # inside a question (-1, as drawn); the ranking fits find the weights drawn with.
    assert point[1] > 0
    np.testing.assert_allclose(listwise, [2.0, -1.0], atol=0.2)
    np.testing.assert_allclose(pairwise, [2.0, -1.0], atol=0.2)
    hit_point = _top_hit_rate(*apart, point)
    assert _top_hit_rate(*apart, listwise) > hit_point + 0.1
    assert _top_hit_rate(*apart, pairwise) > hit_point + 0.1


def test_the_pairwise_fit_orders_as_the_weights_the_evidence_was_drawn_with() -> None:
    truth = np.array([2.0, -1.0])
    x, y, question = _softmax_table(truth)
    w = fit_pairwise(x, y, question)
    assert w[0] > 0 > w[1]
    assert w[0] / -w[1] == pytest.approx(2.0, rel=0.25)


def test_pairs_are_each_evidence_candidate_less_each_other_of_its_question() -> None:
    x = np.array([[1.0], [2.0], [4.0], [8.0], [16.0]])
    y = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    question = np.array([0, 0, 0, 1, 1])
    assert sorted(pairs(x, y, question)[:, 0].tolist()) == [-2.0, 1.0, 8.0]


def test_the_calibration_keeps_the_order_and_the_mean_of_the_labels() -> None:
    x, y, question = _confounded()
    w = fit_listwise(x, y, question)
    level = (np.bincount(question, weights=x[:, 1]) / np.bincount(question))[question]
    c = calibrate(x @ w, level[:, None], y)  # a query-level term: one value per question
    assert c[1] > 0
    assert c[2] > 0  # the questions with an answer stand higher
    p = predict(c, np.column_stack([x @ w, level]))
    assert p.mean() == pytest.approx(y.mean(), rel=1e-3)
    for q in (3, 4, 5):
        inside = question == q
        assert np.array_equal(np.argsort(p[inside]), np.argsort((x @ w)[inside]))


def test_an_order_that_falls_with_the_evidence_is_refused() -> None:
    x, y, _ = _softmax_table(np.array([2.0]))
    with pytest.raises(FitError, match="scale"):
        calibrate(-x[:, 0], np.zeros((len(y), 0)), y)


def test_a_table_without_evidence_or_with_rows_that_disagree_is_refused() -> None:
    x = np.ones((4, 1))
    with pytest.raises(FitError, match="no question"):
        fit_listwise(x, np.zeros(4), np.array([0, 0, 1, 1]))
    with pytest.raises(FitError, match="labels"):
        fit_listwise(x, np.zeros(3), np.array([0, 0, 1, 1]))
    with pytest.raises(FitError, match="no pair"):
        fit_pairwise(x, np.ones(4), np.array([0, 0, 1, 1]))


def _table(x: np.ndarray, y: np.ndarray, question: np.ndarray, conversations: int) -> Table:
    n = int(question.max()) + 1
    group = np.array([f"set:{q % conversations}" for q in range(n)])
    answerable = np.bincount(question, weights=y, minlength=n) > 0
    return Table(x, y, question, group, answerable, np.ones(n), np.full(n, 0.5),
                 np.zeros(n, dtype=bool))  # fmt: skip


def test_folds_hold_every_conversation_whole_and_use_every_fold() -> None:
    x, y, question = _softmax_table(np.array([1.0]), questions=60)
    t = _table(x, y, question, conversations=12)
    fold = folds_of(t, 4)
    for g in set(t.group):
        assert len(set(fold[t.group == g])) == 1
    assert set(fold) == {0, 1, 2, 3}
    with pytest.raises(FitError, match="2 folds"):
        folds_of(t, 1)


def test_held_apart_scores_each_fold_with_weights_fitted_without_it() -> None:
    x, y, question = _softmax_table(np.array([2.0, -1.0]), questions=200)
    t = _table(x, y, question, conversations=10)
    p, fitted = held_apart(t, x, np.zeros((len(y), 0)), fit_listwise, 5)
    assert len(fitted) == 5
    row_fold = folds_of(t, 5)[question]
    for f, c in enumerate(fitted):
        inside = row_fold == f
        w = fit_listwise(x[~inside], y[~inside], question[~inside])
        np.testing.assert_allclose(c[2:], w)
        np.testing.assert_allclose(p[inside], predict(c[:2], (x[inside] @ w)[:, None]))


def test_a_fit_becomes_the_calibration_recall_scores_with() -> None:
    x, y, question = _softmax_table(np.array([2.0, 1.0]), questions=100)
    query = np.random.default_rng(SEED).random((len(y), 1))
    w = fit_listwise(x, y, question)
    c = calibrate(x @ w, query, y)
    shipped = as_calibration(np.concatenate([c, w]), ("share", "cosine"), ("absent_names",))
    row = 7
    expected = predict(c, np.array([[x[row] @ w, query[row, 0]]]))[0]
    got = shipped.relevance(x[row, 0], x[row, 1], 0.0, absent_names=query[row, 0])
    assert got == pytest.approx(expected, abs=2e-3)  # the weights are rounded to 3 places


def test_each_question_once_changes_nothing_where_every_question_has_one_evidence() -> None:
    x, y, question = _softmax_table(np.array([1.0, -0.5]), questions=200)
    np.testing.assert_allclose(
        fit_listwise(x, y, question, balanced=True), fit_listwise(x, y, question), atol=1e-6
    )


def test_each_question_once_stops_a_question_of_many_evidence_from_outweighing_the_rest() -> None:
    x, y, question = _softmax_table(np.array([2.0, 0.0]), questions=200)
    # One more question whose ten evidence candidates say the opposite: feature 1, not 0.
    rng = np.random.default_rng(SEED + 2)
    extra = rng.normal(size=(20, 2))
    label = np.zeros(20)
    label[np.argsort(-extra[:, 1])[:10]] = 1.0
    x = np.vstack([x, extra])
    y = np.concatenate([y, label])
    question = np.concatenate([question, np.full(20, 200)])
    plain = fit_listwise(x, y, question)
    once = fit_listwise(x, y, question, balanced=True)
    assert abs(once[1]) < abs(plain[1])
    assert abs(once[1]) < 0.1
    plain_pairs = fit_pairwise(x, y, question)
    once_pairs = fit_pairwise(x, y, question, balanced=True)
    assert abs(once_pairs[1] / once_pairs[0]) < abs(plain_pairs[1] / plain_pairs[0])


def test_the_ceiling_s_slack_is_the_unread_share_s_weight_and_the_length_s() -> None:
    rows = np.zeros((4, len(COLUMNS)))
    rows[:, COLUMNS.index("semantic_rank")] = [1.0, 1.0, 1.0, 0.0]  # the last: not found
    rows[:, COLUMNS.index("share")] = [1.0, 0.0, 0.5, 0.0]
    rows[:, COLUMNS.index("words")] = [0.0, 0.0, np.e - 1, 0.0]  # ln(1 + words) = 1
    rows[:, COLUMNS.index("cosine")] = [0.2, 0.4, 0.6, 0.0]
    t = _table(rows, np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(4, dtype=int), conversations=1)
    fit = Calibration(-7.0, 3.0, 5.0, 0.0, share_length=-0.5)
    gap, spread = slack(t, fit)["set"]
    # share 1: nothing unread above; share 0: 3; share 0.5 at length 1: 1.5 + 0.25
    assert gap == pytest.approx((0.0 + 3.0 + 1.75) / 3)
    scores = np.array([3.0 + 1.0, 2.0, 1.5 + 3.0 - 0.25, 0.0])
    assert spread == pytest.approx(scores.std())
