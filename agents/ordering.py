"""Order recall's candidates by score, working out relevance only down that order (ADR 0068).

Relevance (ADR 0051) needs each candidate's text and vector: the content share of the query's
words it holds and its cosine. Recall works them out only as far down the final order as it
must: every candidate gets a ceiling of its score from what recall knows already (its fused
rank, its cosine, recency and importance, and the most its share can be by its text
unsplit: ADR 0103) with the rest at its most favourable; candidates are worked out a batch
at a time, highest ceiling first, and one is placed once its score beats every ceiling
left. The order, the scores and the folding of copies equal those of working out every
candidate (a property test checks it).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from engram.agents.calibration import CALIBRATIONS, Calibration
from engram.agents.folding import Folder
from engram.agents.matching import Candidate, Matching
from engram.projections import copies, lexical

__all__ = [
    "BATCH",
    "CURRENT_STATE_BOOST",
    "below_replacements",
    "ceiling",
    "ceilings",
    "lazily",
    "lift_replacements",
    "relevance_of",
    "wants_current",
    "with_replacements",
]

#: A query asking for the current state ("now", "latest", "still") weighs recency this many
#: times more (ADR 0050).
CURRENT_STATE_BOOST = 10.0
_CURRENT = re.compile(
    r"\b(now|nowadays|currently|current|latest|still|these days|today|anymore|any more"
    r"|at the moment|at present|most recent|newest|new)\b",
    re.IGNORECASE,
)


def wants_current(query: str) -> bool:
    """Say whether ``query`` asks for the current state ("now", "latest", "still"...)."""
    return bool(_CURRENT.search(query))


#: Candidates worked out at a time (recall asks for ``k`` items, 10 by default).
BATCH = 10
#: A ceiling is raised by this share so rounding can never put it under the score it bounds.
_SLACK = 1e-9
#: ln(1 + the most words a text can hold): the lexical index keeps a text's first
#: ``MAX_TEXT`` characters, at most half of them words.
LONGEST = math.log1p(lexical.MAX_TEXT / 2)


class _Ask(Protocol):
    @property
    def k(self) -> int: ...

    @property
    def min_score(self) -> float: ...


#: What a candidate's words alone say of it: the fit without vectors (ADR 0137).
WORDS = CALIBRATIONS["lexical"]
#: The content share of a candidate holding every word of the query (up to rounding).
WHOLE = 1.0 - 1e-9


def _by_words(c: Candidate, rank: float, share: float, length: float) -> float:
    """Return the relevance the fit without vectors gives ``c`` (ADR 0137)."""
    return WORDS.relevance(share, 0.0, rank, lexical_rank=c.lexical_rank, length=length)


def _passages_weigh_against(calibration: Calibration, cosine: float, passage: float) -> bool:
    """Say whether ``calibration`` weighs a long memory's nearer passage against it: the
    neural fit does (ADR 0097), and a memory whose best passage is nearer the query than its
    head then scores below what its words alone give it (ADR 0137)."""
    return calibration.passage < 0 and passage > cosine


def relevance_of(
    calibration: Calibration,
    c: Candidate,
    best: float,
    absent: tuple[float, float],
    detail: float,
) -> float:
    """Return ``c``'s calibrated relevance (ADR 0051), ``best`` the best fused score of the
    result and ``absent`` the query's absent shares (ADR 0090). A long memory whose best
    passage is nearer than its head, holding every content word of the query, keeps at
    least what its words alone give it (ADR 0137): the neural fit weighs such a passage
    against it, and a memory holding every word of the query in its last paragraph ranked
    last."""
    cos = min(max(c.cosine or 0.0, 0.0), 1.0)
    passage = cos if c.passage is None else c.passage
    rank = min(c.fused / best, 1.0)
    value = calibration.relevance(
        c.share,
        cos,
        rank,
        c.saturated,
        lexical_rank=c.lexical_rank,
        semantic_rank=c.semantic_rank,
        absent=absent[0],
        absent_names=absent[1],
        detail=detail,
        passage=passage,
        length=c.length,
    )
    if _passages_weigh_against(calibration, cos, passage) and c.share >= WHOLE:
        value = max(value, _by_words(c, rank, c.share, c.length))
    return value


def ceiling(
    calibration: Calibration, c: Candidate, m: Matching, best: float, most: float = 1.0
) -> float:
    """Return the most ``c``'s relevance can be, from what recall knows before working it out.

    The content shares are at most ``most`` (1, or what :func:`share_ceilings` found) and
    the cosine, where the vector path did not find ``c``, at most 1; the fused rank, each
    path's own rank and the query-level terms (ADR 0090, ADR 0091, ADR 0095) are known, and
    so is the best passage cosine once read with the cosines (ADR 0097).
    """
    # A text's share and length are unread: the share is up to ``most`` and its length up to
    # the longest text the index holds (ADR 0097), whichever end raises the relevance.
    length = LONGEST if calibration.share_length > 0 else 0.0
    share = most if calibration.share + calibration.share_length * length > 0 else 0.0
    saturated = 1.0 if calibration.saturated > 0 else 0.0
    rank = min(c.fused / best, 1.0)
    if c.cosine is not None or m.vector is None:
        cosine = min(max(c.cosine or 0.0, 0.0), 1.0)
        # The best passage cosine is read with the cosines; unread, it is up to 1.
        corners = [(cosine, c.passage if c.passage is not None else cosine)]
        if c.passage is None and calibration.passage > 0 and m.vector is not None:
            corners = [(cosine, 1.0)]
    else:  # relevance is linear in both inside the logistic: its best is a corner
        corners = [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0)]  # the passage cosine is no lower
    ceiling = 0.0
    for cosine, passage in corners:
        ceiling = max(
            ceiling,
            calibration.relevance(
                share,
                cosine,
                rank,
                saturated,
                lexical_rank=c.lexical_rank,
                semantic_rank=c.semantic_rank,
                absent=m.absent,
                absent_names=m.absent_names,
                passage=passage,
                length=length,
                detail=m.detail,
            ),
        )
        if _passages_weigh_against(calibration, cosine, passage) and most >= WHOLE:
            ceiling = max(ceiling, _by_words(c, rank, most, 0.0))
    return min(ceiling * (1 + _SLACK), 1.0) if ceiling < 1.0 else 1.0


def ceilings(
    calibration: Calibration,
    fused: Mapping[int, Candidate],
    positions: Sequence[int],
    m: Matching,
    best: float,
    most: Mapping[int, float] | None = None,
) -> dict[int, float]:
    """Return :func:`ceiling` of each of ``positions`` (``most``: each one's share ceiling,
    :func:`share_ceilings`; None: 1), to the bit, at a fraction of its cost.

    Recall bounds every candidate (about 170 at 100k memories): what is the same for all of
    them (the unread length, the query-level terms) is worked out once, and the logit is
    :meth:`Calibration.relevance`'s sum term for term, its first terms added once (a float
    sum is added left to right, so the same head gives the same bits; a unit test holds this
    to :func:`ceiling`).
    """
    cal = calibration
    length = LONGEST if cal.share_length > 0 else 0.0
    raises = cal.share + cal.share_length * length > 0  # the share's end that raises it
    saturated = 1.0 if cal.saturated > 0 else 0.0
    head = (
        cal.bias + cal.absent * m.absent + cal.absent_names * m.absent_names + cal.detail * m.detail
    )
    rest = cal.saturated * saturated
    share_w, length_w = cal.share, cal.share_length
    unread = 1.0 if cal.passage > 0 and m.vector is not None else None
    no_vector = m.vector is None
    cosine_w, rank_w, cosine_rank_w = cal.cosine, cal.rank, cal.cosine_rank
    lexical_w, semantic_w, passage_w = cal.lexical_rank, cal.semantic_rank, cal.passage
    exp = math.exp
    found: dict[int, float] = {}
    for p in positions:
        c = fused[p]
        share = (1.0 if most is None else most[p]) if raises else 0.0
        top_share, tail = share_w * share, length_w * share * length
        rank = min(c.fused / best, 1.0)
        ranks = lexical_w * c.lexical_rank, semantic_w * c.semantic_rank
        if c.cosine is not None or no_vector:
            cosine = min(max(c.cosine or 0.0, 0.0), 1.0)
            passage = c.passage if c.passage is not None else (unread or cosine)
            corners: tuple[tuple[float, float], ...] = ((cosine, passage),)
        else:
            corners = ((0.0, 0.0), (0.0, 1.0), (1.0, 1.0))
        top = 0.0
        for cosine, passage in corners:
            z = (
                head
                + top_share
                + rest
                + cosine_w * cosine
                + rank_w * rank
                + cosine_rank_w * cosine * rank
                + ranks[0]
                + ranks[1]
                + passage_w * passage
                + tail
            )
            top = max(top, 1.0 / (1.0 + exp(-z)))
            whole = 1.0 if most is None else most[p]
            if passage_w < 0 and passage > cosine and whole >= WHOLE:  # as relevance_of
                top = max(top, _by_words(c, rank, whole, 0.0))
        found[p] = min(top * (1 + _SLACK), 1.0) if top < 1.0 else 1.0
    return found


def lazily(
    positions: Sequence[int],
    bound: Mapping[int, float],
    total: dict[int, float],
    work: Callable[[Sequence[int]], None],
    ask: _Ask,
    rows: Mapping[int, copies.Copy],
    matching: Matching,
) -> tuple[list[int], dict[int, list[int]]]:
    """Return the ``k`` items served, in order, and what each folded, working out (``work``:
    it fills ``total``) only the candidates the order reaches; ``bound`` ceils ``total``."""
    if matching.weights is not None or matching.share_weights is not None:
        # Folding reads every candidate's text in the end (below), worked out or not: one
        # statement for all of them, not one for each batch and one for the rest.
        matching.read(positions)
    pending = sorted(positions, key=lambda p: (-bound[p], -p))
    heap: list[tuple[float, int]] = []  # (-score, -position): the worked-out, not yet placed
    folder = Folder(rows, matching)
    order: list[int] = []
    placed: set[int] = set()
    at = 0
    while len(order) < ask.k:
        if heap and (at == len(pending) or heap[0] < (-bound[pending[at]], -pending[at])):
            p = -heapq.heappop(heap)[1]
            placed.add(p)
            kept = folder.add(p)
            if total[p] < ask.min_score:
                break  # every later one scores no more: none passes the floor
            if kept:
                order.append(p)
            continue
        if at == len(pending):
            break
        batch = pending[at : at + BATCH]
        at = min(at + BATCH, len(pending))
        work(batch)
        for p in batch:
            heapq.heappush(heap, (-total[p], -p))
    rest = [p for p in positions if p not in placed]
    if not folder.finish(rest):  # which copy a later one folds into needs the whole order
        work([p for p in rest if p not in total])
        everything = Folder(rows, matching)
        for p in sorted(positions, key=lambda p: (-total[p], -p)):
            everything.add(p)
        return order, everything.folded
    return order, folder.folded


def below_replacements(
    order: Sequence[int], total: dict[int, float], replaced: Mapping[int, int], floor: float
) -> list[int]:
    """Return ``order`` with each replaced memory served below the memory that replaced it,
    where both are served (ADR 0106).

    A replaced memory's score is already weighed down (``REPLACED_WEIGHT``), but a stale fact
    that says the query's words ("the nightly backup runs at 02:00") can still outscore the
    change that replaced it ("backups were rescheduled to 04:30"). Where both are served, the
    replaced one's score in ``total`` is set just under its replacement's, and the order and
    the floor are taken again; a chain of replacements is followed to its end.
    """
    served = set(order)
    changed = False
    for _ in range(len(order)):  # a chain of n replacements settles in n passes
        moved = False
        for p in order:
            newer = replaced.get(p)
            if newer is not None and newer in served and total[p] >= total[newer]:
                total[p] = total[newer] * (1.0 - 1e-6)
                moved = True
        if not moved:
            break
        changed = True
    if not changed:
        return list(order)
    return [p for p in sorted(order, key=lambda p: (-total[p], -p)) if total[p] >= floor]


def with_replacements(
    order: list[int],
    ranked: dict[int, Candidate],
    replaced: Mapping[int, int],
    folded: Mapping[int, list[int]],
    relevance: dict[int, float],
    work: Callable[[Sequence[int]], None],
) -> list[int]:
    """Return ``order`` with the replacement of each served replaced memory served too
    (ADR 0106): what replaced a memory answers now what it answered, so it takes at
    least its relevance. Only a candidate of this recall is brought in (it passed the
    same visibility, type and time filters), and not one folded as a copy of a served
    item; a chain is followed to its end."""
    served = set(order)
    copies_served = {c for p in order for c in folded.get(p, ())}
    added = list(order)
    for p in added:  # the list grows as it is walked: a chain is followed to its end
        newer = replaced.get(p)
        if newer in ranked and newer not in served and newer not in copies_served:
            served.add(newer)
            added.append(newer)
    if missing := [p for p in added if p not in relevance]:
        work(missing)
    lifted = {p: relevance[p] for p in added}
    lift_replacements(lifted, replaced)
    relevance.update(lifted)
    return added


def lift_replacements(values: dict[int, float], replaced: Mapping[int, int]) -> None:
    """Raise each replacement's value in ``values`` to at least that of what it replaced,
    where both are there; a chain settles whole (ADR 0106)."""
    for _ in range(len(replaced)):  # a chain of n replacements settles in n passes
        raised = False
        for old, newer in replaced.items():
            if old in values and newer in values and values[newer] < values[old]:
                values[newer], raised = values[old], True
        if not raised:
            return
