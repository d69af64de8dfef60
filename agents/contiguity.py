"""Bloom: what is recalled cues the memories formed next to it (temporal contiguity).

Recalling one item of an episode brings its neighbours to mind — items studied close together
in time are recalled together (Kahana, "Associative retrieval processes in free recall",
1996; the contiguity effect). Conversations and work sessions are episodes: a question's
answer often sits one or two turns away from the turn that matches the question's words,
and a fact told over several turns is found by one of them.

After fusion, each of the strongest candidates passes a share of its fused score to the
memories formed next to it in the same episode: up to ``radius`` visible memories before
and after it, no further apart in time than ``gap`` from it, the share falling with the
distance (``share / distance``). A neighbour not found by any path joins the candidates.
The rule is the same for every store and every query; nothing in it is tuned per data set
(ADR 0025 gives the measurements and the losers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: How many of the strongest candidates bloom.
SEEDS = 30
#: How many memories on each side of a seed receive a share.
RADIUS = 2
#: The share of a seed's fused score its nearest neighbour receives (halved at distance 2).
SHARE = 0.3
#: Memories further apart in time than this are not of one episode (microseconds).
EPISODE_GAP_US = 30 * 60 * 1_000_000


def seeds(fused: Mapping[int, float], count: int = SEEDS) -> list[int]:
    """Return the positions of the ``count`` strongest candidates, strongest first."""
    return sorted(fused, key=lambda p: (-fused[p], -p))[:count]


def bloom(
    fused: Mapping[int, float],
    neighbours: Mapping[int, Sequence[tuple[int, int]]],
    *,
    share: float = SHARE,
) -> dict[int, float]:
    """Return the fused scores after each seed's neighbours took their share.

    ``neighbours`` maps a seed to ``(position, distance)`` pairs (distance 1 is adjacent),
    as :func:`engram.projections.lexical.neighbours` returns them; a seed absent from it
    blooms nothing. Scores only grow; the input is not changed.
    """
    out = dict(fused)
    for seed, around in neighbours.items():
        given = share * fused[seed]
        for position, distance in around:
            out[position] = out.get(position, 0.0) + given / distance
    return out
