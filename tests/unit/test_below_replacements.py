"""A replaced memory is served below the memory that replaced it, where both are served
(ADR 0106): its score is set just under its replacement's, the order and the floor taken
again; a chain settles whole, and nothing moves where nothing needs to."""

from __future__ import annotations

from engram.agents.ordering import below_replacements


def test_a_replaced_memory_scoring_higher_moves_just_below_its_replacement() -> None:
    total = {1: 0.9, 2: 0.5, 3: 0.7}
    order = below_replacements([1, 3, 2], total, {1: 2}, 0.0)
    assert order == [3, 2, 1]
    assert total[2] > total[1] > 0.49


def test_a_chain_of_replacements_settles_in_order() -> None:
    # 1 replaced by 2, 2 replaced by 3: the newest first, then 2, then 1.
    total = {1: 0.9, 2: 0.8, 3: 0.1}
    assert below_replacements([1, 2, 3], total, {1: 2, 2: 3}, 0.0) == [3, 2, 1]
    assert total[3] > total[2] > total[1]


def test_the_floor_applies_to_the_lowered_score() -> None:
    total = {1: 0.9, 2: 0.2}
    assert below_replacements([1, 2], total, {1: 2}, 0.2) == [2]


def test_a_replacement_not_served_or_already_above_moves_nothing() -> None:
    total = {1: 0.9, 2: 0.5, 3: 0.95}
    assert below_replacements([1, 2], dict(total), {1: 7}, 0.0) == [1, 2]
    assert below_replacements([3, 1], dict(total), {1: 3}, 0.0) == [3, 1]


def test_a_served_replaced_memory_brings_its_replacement_with_its_relevance() -> None:
    from engram.agents.matching import Candidate
    from engram.agents.ordering import with_replacements

    ranked = {p: Candidate(0.0) for p in (1, 2, 3, 4, 5)}
    relevance = {1: 0.8, 2: 0.1}
    worked: list[int] = []

    def work(batch: list[int]) -> None:  # what recall does: work the candidate out
        worked.extend(batch)
        relevance.update({p: 0.05 for p in batch})

    # 1 replaced by 3 (not served yet, not worked out), 3 by 4: the chain to its end.
    order = with_replacements([1, 2], ranked, {1: 3, 3: 4}, {}, relevance, work)
    assert order == [1, 2, 3, 4]
    assert relevance[3] == relevance[4] == 0.8
    assert worked == [3, 4]
    # Not a candidate of this recall (not visible, another type), or folded as a copy of
    # a served item: not brought in.
    relevance = {1: 0.8}
    assert with_replacements([1], ranked, {1: 9}, {}, relevance, work) == [1]
    assert with_replacements([1], ranked, {1: 5}, {1: [5]}, relevance, work) == [1]
