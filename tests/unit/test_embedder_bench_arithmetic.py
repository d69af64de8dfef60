"""The embedder suite's arithmetic figure: FLOPs from the model's shapes, a SGEMM ceiling."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from engram import EngramError
from engram.bench.embedder_bench import encoder_flops, token_counts
from engram.bench.embedder_worker import sgemm_gflops

MINILM = {"hidden_size": 384, "intermediate_size": 1536, "num_hidden_layers": 6}


def _products(config: dict[str, int], n: int) -> list[tuple[int, int, int]]:
    """Every matrix product of one encoder pass over ``n`` tokens, as (rows, inner, columns)."""
    h, i, heads = config["hidden_size"], config["intermediate_size"], 12
    size = h // heads
    layer = [(n, h, h)] * 3  # query, key, value
    layer += [(n, size, n)] * heads  # scores, head by head
    layer += [(n, n, size)] * heads  # probabilities times values
    layer += [(n, h, h), (n, h, i), (n, i, h)]  # attention output, feed-forward pair
    return layer * config["num_hidden_layers"]


@pytest.mark.parametrize("tokens", [[1], [26], [8, 46, 26, 0], [256] * 3])
def test_the_count_equals_the_sum_over_every_matrix_product(tokens: list[int]) -> None:
    expected = sum(2 * m * k * c for n in tokens for m, k, c in _products(MINILM, n))
    assert encoder_flops(MINILM, tokens) == expected


def test_a_minilm_token_costs_about_21_mflop() -> None:
    per_token = encoder_flops(MINILM, [100]) / 100
    assert 21.2e6 < per_token < 22.5e6  # 21.23M in the projections, the rest in attention


def test_a_config_without_a_size_or_a_negative_count_is_refused() -> None:
    with pytest.raises(EngramError, match="config lacks a size"):
        encoder_flops({"hidden_size": 384, "num_hidden_layers": 6}, [3])
    with pytest.raises(EngramError, match="must be >= 0"):
        encoder_flops(MINILM, [3, -1])


def test_token_counts_follow_the_tokenizer_and_cut_at_256(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "cat": 3, "dog": 4}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
    )
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    assert token_counts(path, ["cat", "cat dog zebra", "", "dog " * 400]) == [3, 5, 2, 256]


def test_the_sgemm_ceiling_is_a_positive_rate() -> None:
    rate = sgemm_gflops(seconds=0.05)
    assert math.isfinite(rate)
    assert rate > 0.5  # GFLOP/s: even a busy core multiplies faster than this
