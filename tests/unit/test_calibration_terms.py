"""The calibration's length-fair share, cosine x rank and path-rank terms, and the ceiling."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import engram
from engram.agents.matching import CALIBRATIONS, Calibration, Candidate, Matching
from engram.agents.memory import PATHS, RRF_K
from engram.agents.ordering import LONGEST, ceiling, ceilings

SEED = 20261126


def test_cosine_x_rank_counts_the_rank_only_as_far_as_the_item_is_near() -> None:
    c = Calibration(-6.0, 4.0, 0.0, 0.0, cosine_rank=10.0)
    assert c.relevance(0.5, 0.0, 1.0) == pytest.approx(c.relevance(0.5, 0.0, 0.0))
    assert c.relevance(0.5, 0.6, 1.0) > c.relevance(0.5, 0.6, 0.5) > c.relevance(0.5, 0.6, 0.0)


def test_the_length_fair_share_moves_relevance_only_when_weighed() -> None:
    weighed = Calibration(-6.0, 0.0, 3.0, 2.0, saturated=5.0)
    assert weighed.relevance(0.0, 0.5, 1.0, 0.8) > weighed.relevance(0.0, 0.5, 1.0, 0.1)
    plain = CALIBRATIONS["neural"]
    assert plain.relevance(0.3, 0.5, 1.0, 0.8) == plain.relevance(0.3, 0.5, 1.0, 0.1)


def test_the_best_passage_cosine_moves_relevance_only_when_weighed() -> None:
    weighed = Calibration(-7.0, 3.0, 4.0, 2.0, passage=2.0)
    assert weighed.relevance(0.3, 0.4, 0.5, passage=0.8) > weighed.relevance(
        0.3, 0.4, 0.5, passage=0.4
    )
    plain = Calibration(-7.0, 3.0, 4.0, 2.0)
    assert plain.relevance(0.3, 0.4, 0.5, passage=0.8) == plain.relevance(
        0.3, 0.4, 0.5, passage=0.4
    )


def test_the_share_counts_less_in_a_longer_text_when_weighed() -> None:
    weighed = Calibration(-7.0, 5.0, 4.0, 2.0, share_length=-0.4)
    short, long = math.log1p(12), math.log1p(800)
    assert weighed.relevance(0.5, 0.4, 0.5, length=short) > weighed.relevance(
        0.5, 0.4, 0.5, length=long
    )
    assert weighed.relevance(0.0, 0.4, 0.5, length=short) == weighed.relevance(
        0.0, 0.4, 0.5, length=long
    )  # no share, nothing to discount


def test_each_path_s_own_rank_moves_relevance_by_its_own_weight() -> None:
    c = Calibration(-7.0, 3.0, 4.0, 2.0, lexical_rank=-1.0, semantic_rank=1.5)
    assert c.relevance(0.3, 0.5, 0.5, 0.0, 0.0, 1.0) > c.relevance(0.3, 0.5, 0.5, 0.0, 1.0, 0.0)
    assert c.relevance(0.3, 0.5, 0.5, 0.0, 0.0, 1.0) > c.relevance(0.3, 0.5, 0.5, 0.0, 0.0, 0.5)
    plain = Calibration(-7.0, 3.0, 4.0, 2.0)
    assert plain.relevance(0.3, 0.5, 0.5, 0.0, 1.0, 0.0) == plain.relevance(0.3, 0.5, 0.5)


@pytest.mark.parametrize(
    "calibration",
    [
        Calibration(-6.3, 4.0, -0.1, 0.0, cosine_rank=10.0),
        Calibration(-7.0, 1.0, 3.0, 2.0, saturated=5.0, cosine_rank=-1.0),
        Calibration(-7.0, 3.0, 4.0, 3.0, absent=-4.0, absent_names=-2.0),
        Calibration(-7.0, 3.0, 4.0, 2.0, lexical_rank=-1.0, semantic_rank=1.5),
        Calibration(-7.0, 3.0, 4.0, 2.0, lexical_rank=-1.0, semantic_rank=1.5, absent_names=-2.0),
        Calibration(-9.0, 3.0, 4.0, 2.0, absent_names=-2.0, detail=5.0),
        Calibration(-7.0, 3.0, 2.0, 2.0, semantic_rank=-1.0, passage=3.0),
        Calibration(-7.0, 3.0, 4.0, 2.0, passage=-1.5),
        Calibration(-7.0, 3.0, 1.0, 2.0, passage=-4.0),
        Calibration(-7.0, 3.0, 4.0, 2.0, share_length=-0.4, passage=1.0),
        Calibration(-7.0, 0.5, 4.0, 2.0, share_length=0.3),
        Calibration(-7.0, -1.0, 4.0, 2.0, share_length=0.3),
        *CALIBRATIONS.values(),
    ],
)
def test_the_ceiling_bounds_relevance_whatever_the_unread_features(
    calibration: Calibration,
) -> None:
    rng = random.Random(SEED)
    print(f"seed {SEED}")
    conn = sqlite3.connect(":memory:")
    vector = np.ones(4, dtype=np.float32)
    for _ in range(500):
        found = rng.random() < 0.5  # the vector path scored it: its cosine is known
        cosine = rng.random()
        passage = max(cosine, rng.random()) if rng.random() < 0.5 else cosine  # no lower
        read = found and rng.random() < 0.5  # its passages read with the cosines
        c = Candidate(
            fused=rng.random() * 0.2,
            cosine=cosine if found else None,
            lexical_rank=rng.choice([0.0, rng.random()]),
            semantic_rank=rng.random() if found else 0.0,
            passage=passage if read else None,
        )
        absent = rng.random() if rng.random() < 0.5 else 0.0  # the query's: known up front
        named = absent * rng.random()
        detail = rng.random()  # the query's too: set before any candidate is worked out
        m = Matching(conn, {}, vector=vector, absent=absent, absent_names=named, detail=detail)
        bound = ceiling(calibration, c, m, 0.2)
        rank = min(c.fused / 0.2, 1.0)
        actual = calibration.relevance(
            rng.random(),
            cosine,
            rank,
            rng.random(),
            lexical_rank=c.lexical_rank,
            semantic_rank=c.semantic_rank,
            absent=absent,
            absent_names=named,
            detail=detail,
            passage=passage,
            length=rng.random() * LONGEST,
        )
        assert actual <= bound


@pytest.mark.parametrize(
    "calibration",
    [
        Calibration(-7.0, 3.0, 4.0, 2.0, passage=-3.0, share_length=0.4, saturated=1.5),
        Calibration(-5.0, 2.0, -1.0, 1.0, cosine_rank=3.0, absent=-2.0, detail=1.5),
        Calibration(-7.0, 3.0, 2.0, 2.0, semantic_rank=-1.0, passage=3.0),
        *CALIBRATIONS.values(),
    ],
)
def test_every_candidate_s_ceiling_at_once_is_each_one_s_to_the_bit(
    calibration: Calibration,
) -> None:
    """Recall bounds its candidates in one pass (ADR 0103): the same floats as
    :func:`ceiling` of each, with and without the query's vector."""
    rng = random.Random(SEED)
    conn = sqlite3.connect(":memory:")
    for vector in (np.ones(4, dtype=np.float32), None):
        m = Matching(
            conn,
            {},
            vector=vector,
            absent=rng.random(),
            absent_names=rng.random(),
            detail=rng.random(),
        )
        fused = {}
        for p in range(1, 300):
            found = rng.random() < 0.5
            cosine = rng.uniform(-0.2, 1.1)
            fused[p] = Candidate(
                fused=rng.random() * 0.3,
                cosine=cosine if found else None,
                lexical_rank=rng.choice([0.0, rng.random()]),
                semantic_rank=rng.random() if found else 0.0,
                passage=rng.choice([None, max(cosine, rng.random())]),
            )
        many = ceilings(calibration, fused, list(fused), m, 0.2)
        assert many == {p: ceiling(calibration, c, m, 0.2) for p, c in fused.items()}
        most = {p: rng.choice([0.0, 1.0, rng.random()]) for p in fused}
        many = ceilings(calibration, fused, list(fused), m, 0.2, most)
        assert many == {p: ceiling(calibration, c, m, 0.2, most[p]) for p, c in fused.items()}


def test_recall_s_candidates_carry_each_path_s_own_rank(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ranks.db")) as opened:
        agent = opened.agent("ana")
        for text in ("the garden party is on friday", "budget review", "garden tools", "lunch"):
            agent.observe(text)
        agent.engine.wait_for(agent.ledger.head())
        with agent.engine.read() as conn:
            ranked, _, matching = agent._candidates(
                conn, conn, "garden", 30, None, frozenset(PATHS), None
            )
    assert matching is not None
    lexical = sorted(
        (c for c in ranked.values() if "lexical" in c.via), key=lambda c: -(c.bm25 or 0)
    )
    assert lexical[0].lexical_rank == 1.0
    assert [c.lexical_rank for c in lexical] == sorted(
        (c.lexical_rank for c in lexical), reverse=True
    )
    assert lexical[1].lexical_rank == pytest.approx((RRF_K + 1) / (RRF_K + 2))
    semantic = [c for c in ranked.values() if "semantic" in c.via]
    assert max(c.semantic_rank for c in semantic) == 1.0
    assert all(c.lexical_rank == 0.0 for c in ranked.values() if "lexical" not in c.via)
    assert all(c.semantic_rank == 0.0 for c in ranked.values() if "semantic" not in c.via)
