"""The calibration's length-fair share and cosine x rank terms, and the ceiling over them."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from engram.agents.matching import CALIBRATIONS, Calibration, Candidate, Matching
from engram.agents.ordering import ceiling

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


@pytest.mark.parametrize(
    "calibration",
    [
        Calibration(-6.3, 4.0, -0.1, 0.0, cosine_rank=10.0),
        Calibration(-7.0, 1.0, 3.0, 2.0, saturated=5.0, cosine_rank=-1.0),
        Calibration(-7.0, 3.0, 4.0, 3.0, absent=-4.0, absent_names=-2.0),
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
        c = Candidate(fused=rng.random() * 0.2, cosine=cosine if found else None)
        absent = rng.random() if rng.random() < 0.5 else 0.0  # the query's: known up front
        named = absent * rng.random()
        m = Matching(conn, {}, vector=vector, absent=absent, absent_names=named)
        bound = ceiling(calibration, c, m, 0.2)
        rank = min(c.fused / 0.2, 1.0)
        actual = calibration.relevance(rng.random(), cosine, rank, rng.random(), absent, named)
        assert actual <= bound
