"""Recall's calibration: a logistic model of P(relevant) over a candidate's features, and
the fits shipped per embedder family (ADR 0051, ADR 0072, ADR 0090, ADR 0091, ADR 0095,
ADR 0097, ADR 0100).

An item's ``score`` is this probability, comparable across queries; the features are worked
out by :mod:`engram.agents.matching`, the fits by ``python -m engram.bench.calibrate`` (and
the neural item-level weights by ``python -m engram.bench.calibrate_rank``, ADR 0100).
"""

from __future__ import annotations

import math
from typing import NamedTuple


class Calibration(NamedTuple):
    """A logistic model of P(relevant) over a candidate's features (ADR 0051, ADR 0072)."""

    bias: float
    share: float  # the content share of the query's words the item holds
    cosine: float  # the cosine of its vector and the query's, clipped to 0..1
    rank: float  # its fused reciprocal rank over the best one possible (0..1)
    saturated: float = 0.0  # the length-fair share (:func:`saturated_share`)
    cosine_rank: float = 0.0  # cosine x rank: a top rank counts as far as the item is near
    #: The query's share of content words no memory holds (:func:`absent_share`, ADR 0090):
    #: a query-level term, the same logit for every item of a result.
    absent: float = 0.0
    #: The same share over the words the query writes as names (:func:`names`).
    absent_names: float = 0.0
    lexical_rank: float = 0.0  # the lexical path's own reciprocal rank over its best (ADR 0091)
    semantic_rank: float = 0.0  # the vector path's own (ADR 0091)
    #: The best cosine of the query's detail, its words but its names, over the candidates
    #: (:func:`note_detail`, ADR 0095): a query-level term, the same logit for every item.
    detail: float = 0.0
    #: The best cosine of its own vector and its passages' (:attr:`Candidate.passage`,
    #: ADR 0097): the cosine itself for a memory of one passage.
    passage: float = 0.0
    #: The content share times ln(1 + the text's words) (:attr:`Candidate.length`, ADR 0097):
    #: a long text holds the query's words by chance, so its share says less.
    share_length: float = 0.0

    def relevance(
        self,
        share: float,
        cosine: float,
        rank: float,
        saturated: float = 0.0,
        lexical_rank: float = 0.0,
        semantic_rank: float = 0.0,
        absent: float = 0.0,
        absent_names: float = 0.0,
        detail: float = 0.0,
        passage: float = 0.0,
        length: float = 0.0,
    ) -> float:
        """Return the calibrated probability that the item answers the query."""
        z = (
            self.bias
            + self.absent * absent
            + self.absent_names * absent_names
            + self.detail * detail
            + self.share * share
            + self.saturated * saturated
            + self.cosine * cosine
            + self.rank * rank
            + self.cosine_rank * cosine * rank
            + self.lexical_rank * lexical_rank
            + self.semantic_rank * semantic_rank
            + self.passage * passage
            + self.share_length * share * length
        )
        return 1.0 / (1.0 + math.exp(-z))


#: Per embedder family (ADR 0051, ADR 0072, ADR 0090, ADR 0091, ADR 0097, ADR 0100; `python -m
#: engram.bench.calibrate`): "neural" (all-MiniLM-L6-v2) is fitted on LoCoMo and BEAM dev
#: (242,147 candidates, 1,377 evidence) over share, cosine, fused rank, each path's own rank
#: (the fused rank counts the paths' agreement, each path's own rank what one path alone
#: says: ADR 0091), the best passage cosine and the share times ln(1 + words) (ADR 0097: a
#: long memory's best passage and its share are high by chance, so both weigh negative);
#: since ADR 0100 the "neural" item-level weights are fitted for the order inside a result
#: (`python -m engram.bench.calibrate_rank`: a listwise fit over the answerable questions,
#: each counted once, on 346,478 candidates with the swapped questions left out), then the
#: bias, a scale and ``absent_names`` pointwise over that order; the cosine + passage sum (a
#: memory of one passage) stays near the pointwise fit's, the contrast is three times
#: stronger: at the same head cosine a long memory whose best passage is nearer weighs less;
#: "lexical" (no vectors) is fitted on both over share, fused rank, the lexical path's own
#: rank (bloom's neighbours apart from the path's hits) and the share times ln(1 + words)
#: (ADR 0097); "hash" (feature hashing) is fitted on both (251,518 candidates, 1,317
#: evidence) over share and cosine x rank: a hash vector's cosine says little alone, and a top
#: rank among far items says nothing. With vectors, the bias and the query-level term for the
#: names no memory holds (``absent_names``) are then refitted on LoCoMo and BEAM dev over
#: those item-level terms, kept as they are (ADR 0090), so no result's order moves.
CALIBRATIONS: dict[str, Calibration] = {
    "neural": Calibration(
        -7.853,
        3.643,
        22.173,
        5.122,
        lexical_rank=-1.427,
        semantic_rank=-2.185,
        absent_names=-4.367,
        passage=-16.942,
        share_length=-0.151,
    ),
    "hash": Calibration(-6.063, 4.029, -0.104, 0.0, cosine_rank=10.014, absent_names=-5.481),
    "lexical": Calibration(-7.240, 6.130, 0.0, 5.692, lexical_rank=-2.922, share_length=-0.488),
}


def calibration_for(provider: str, semantic: bool) -> Calibration:
    """Return the calibration for an embedder's provider (``semantic``: vectors took part)."""
    if not semantic:
        return CALIBRATIONS["lexical"]
    return CALIBRATIONS["hash" if provider == "hash" else "neural"]
