"""The length-fair share of a query's words a text holds (ADR 0072)."""

from __future__ import annotations

import pytest

from engram.agents.matching import content_share, saturated_share

WEIGHTS = {"where": 0.5, "does": 0.5, "alice": 3.0, "live": 2.0}
FILLER = " ".join(f"word{i}" for i in range(200))


def test_a_long_text_holding_the_words_once_scores_below_a_short_one() -> None:
    short = "Alice lives in Berlin."
    long = f"Alice lives in Berlin. {FILLER}"
    assert content_share(WEIGHTS, short) == content_share(WEIGHTS, long)  # the bias it fixes
    assert saturated_share(WEIGHTS, long, average=20) < saturated_share(WEIGHTS, short, average=20)


def test_a_word_held_more_often_counts_more_up_to_its_weight() -> None:
    once = "Alice went out. The rest of the day was quiet and grey."
    thrice = "Alice went out. Alice came back. Alice was quiet and grey."
    one, three = (saturated_share(WEIGHTS, t, average=12) for t in (once, thrice))
    assert 0 < one < three < 1


def test_nothing_held_is_zero_and_everything_held_is_at_most_one() -> None:
    assert saturated_share(WEIGHTS, "Bob went hiking.", average=10) == 0.0
    many = "alice live " * 50
    assert 0.8 < saturated_share(WEIGHTS, many, average=100) <= 1.0


def test_without_an_average_length_plays_no_part() -> None:
    short = "Alice lives in Berlin."
    long = f"Alice lives in Berlin. {FILLER}"
    assert saturated_share(WEIGHTS, short) == pytest.approx(saturated_share(WEIGHTS, long))


def test_a_quoted_id_counts_only_verbatim() -> None:
    weights = {"error": 1.0, "he": 2.0, "855": 4.0}
    assert saturated_share(weights, "Build failed with HE-855 today.", ("he-855",), 6) > 0.3
    assert saturated_share(weights, "Build failed with GE-855 today.", ("he-855",), 6) == 0.0
