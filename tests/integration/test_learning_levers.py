"""The sweep of ways to match a task with a rule's situations reads the shipped ranking."""

from __future__ import annotations

import pytest

from engram.agents import guidance
from engram.bench import learning_levers
from engram.projections.embedding import HashEmbedder
from engram.projections.rules import Rule

RULES = [
    Rule(1, "Back up the database before a schema migration.", "s1", ["a", "b"], "rev"),
    Rule(2, "Page through every result of a listing API.", "s2", ["c"], "rev"),
    Rule(3, "Store timestamps in UTC.", "s3", ["d"], "rev"),
]
EVIDENCE = {
    "s1": [
        "The migration dropped a column of the orders table in production.",
        "Snapshot the database first.",
        "The ALTER script wiped customer rows; no dump existed.",
        "Dump the DB before altering tables.",
    ],
    "s2": ["The export stopped at the first hundred issues.", "Follow the next link."],
    "s3": ["Meetings showed an hour off after the clock change.", "Keep datetimes in UTC."],
}


def _embedder() -> HashEmbedder:
    # A dimension of its own: guidance keeps one vector cache per fingerprint for the
    # process, and other tests' hash embedders (a broken one among them) share the default.
    return HashEmbedder(dimension=256)


TASK = "The migration dropped a column of the orders table in production. "


def test_the_shipped_lever_is_the_serving_s_own_situation_score() -> None:
    embedder = _embedder()
    shipped = learning_levers.rank(embedder, RULES, EVIDENCE, TASK, learning_levers.shipped)
    served = guidance.scores(RULES, TASK, EVIDENCE, embedder)
    assert [m.situation for m in shipped] == pytest.approx([m.situation for m in served])
    assert [m.best for m in shipped] == [m.best for m in served]
    assert max(range(3), key=lambda i: shipped[i].situation) == 0


def test_a_scar_s_best_telling_scores_at_least_the_mean_of_them() -> None:
    embedder = _embedder()
    mean = learning_levers.rank(embedder, RULES, EVIDENCE, TASK, learning_levers.shipped)
    best = learning_levers.rank(embedder, RULES, EVIDENCE, TASK, learning_levers.per_scar_best)
    assert all(b.situation >= m.situation - 1e-9 for b, m in zip(best, mean, strict=True))
    assert best[0].situation > mean[0].situation  # one telling is the task word for word


def test_refused_lessons_follow_the_rules_and_are_never_served() -> None:
    embedder = _embedder()
    refused = [["Never rename columns.", *EVIDENCE["s1"][:2]]]
    ranked = learning_levers.rank(embedder, RULES, EVIDENCE, TASK, learning_levers.shipped, refused)
    assert len(ranked) == 4
    assert ranked[3].best == 0.0
    assert ranked[3].situation > 0
    replayed = learning_levers.Replayed(
        RULES,
        set(),
        {1: "backup", 2: "paging", 3: "utc"},
        EVIDENCE,
        refused,
        [("backup", TASK), (None, "Paint the office walls green. ")],
    )
    alone = learning_levers.measure(embedder, replayed, learning_levers.shipped, 0.05, False)
    assert alone["served"] == (1, 1)
    assert alone["precision"] == (1, 1)
    assert alone["unrelated"] == (0, 1)
    # The refused lesson tells the same situation: the rule no longer stands clear of it.
    crowded = learning_levers.measure(embedder, replayed, learning_levers.shipped, 0.05, True)
    assert crowded["served"] == (0, 1)


def test_a_lever_needs_a_calibrated_embedder() -> None:
    with pytest.raises(ValueError, match="calibration"):
        learning_levers.rank(None, RULES, EVIDENCE, TASK, learning_levers.shipped)  # type: ignore[arg-type]
