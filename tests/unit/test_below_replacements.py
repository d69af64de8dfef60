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
