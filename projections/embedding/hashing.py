"""The hash provider: deterministic feature-hashed vectors, numpy only, no model.

The default embedder. A text is NFKC-normalised, lowercased and whitespace-collapsed; its
features are word unigrams and bigrams and character n-grams (3–5 by default); each feature
is hashed with 64-bit BLAKE2b (never Python's salted ``hash()``) into a bucket and a sign;
weights are sublinear (``1 + ln(count)``); the vector is L2-normalised. The same text gives
the same bytes in every process and on every run: accumulation runs in a fixed order and the
norm is an exactly rounded sum, so no SIMD or BLAS choice can move a bit.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata
from collections import Counter
from typing import ClassVar

import numpy as np

from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    Fingerprint,
    FloatArray,
    check_dimension,
)
from engram.projections.errors import EmbeddingConfigError

DEFAULT_DIMENSION = 384
_FEATURES_VERSION = "1"  # bump when feature extraction changes: the fingerprint follows
_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    digest = hashlib.blake2b(
        feature.encode("utf-8", "surrogatepass"), digest_size=8, person=b"engram-hash"
    ).digest()
    return int.from_bytes(digest, "little")


def _normalize_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


class HashEmbedder(Embedder):
    """Embed texts by feature hashing: word n-grams plus character n-grams, signed, sublinear.

    Args:
        dimension: vector length (default 384).
        char_ngrams: smallest and largest character n-gram, inclusive (default 3–5).
        word_ngrams: largest word n-gram (default 2: unigrams and bigrams).
    """

    provider: ClassVar[str] = "hash"

    def __init__(
        self,
        *,
        dimension: int = DEFAULT_DIMENSION,
        char_ngrams: tuple[int, int] = (3, 5),
        word_ngrams: int = 2,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(batch_size=batch_size)
        self._dimension = check_dimension(dimension, "hash embedder")
        low, high = char_ngrams
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high <= 16):
            raise EmbeddingConfigError(
                f"hash embedder: char_ngrams must be (min, max) with 1 <= min <= max <= 16, "
                f"got {char_ngrams!r}"
            )
        if not isinstance(word_ngrams, int) or not 1 <= word_ngrams <= 8:
            raise EmbeddingConfigError(
                f"hash embedder: word_ngrams must be an int in 1..8, got {word_ngrams!r}"
            )
        self._char_ngrams = (low, high)
        self._word_ngrams = word_ngrams
        self._fingerprint = Fingerprint(
            provider=self.provider,
            model=f"feature-hash-v{_FEATURES_VERSION}",
            dimension=self._dimension,
            normalization="l2",
            params=(
                ("char_ngrams", f"{low}-{high}"),
                ("hash", "blake2b-64"),
                ("text", "nfkc-lower-ws"),
                ("tf", "sublinear"),
                ("word_ngrams", f"1-{word_ngrams}"),
            ),
        )

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return self._dimension

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._embed_one(text)
        return out

    def _features(self, text: str) -> Counter[str]:
        normalized = _normalize_text(text)
        features: Counter[str] = Counter()
        words = _WORD.findall(normalized)
        for n in range(1, self._word_ngrams + 1):
            grams = (" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
            features.update(f"w{n}:{gram}" for gram in grams)
        low, high = self._char_ngrams
        padded = f" {normalized} " if normalized else ""
        for n in range(low, high + 1):
            features.update(f"c{n}:" + padded[i : i + n] for i in range(len(padded) - n + 1))
        return features

    def _embed_one(self, text: str) -> FloatArray:
        features = self._features(text)
        if not features:
            return np.zeros(self._dimension, dtype=np.float32)
        dimension = self._dimension
        buckets = np.empty(len(features), dtype=np.int64)
        weights = np.empty(len(features), dtype=np.float64)
        for i, (feature, count) in enumerate(features.items()):
            h = _feature_hash(feature)
            buckets[i] = h % dimension
            weight = 1.0 + math.log(count)
            weights[i] = -weight if h >> 63 else weight
        # bincount adds in input order: the same features give the same float sums.
        vector = np.bincount(buckets, weights=weights, minlength=dimension)
        norm = math.sqrt(math.fsum((vector * vector).tolist()))
        if norm == 0.0:
            return np.zeros(dimension, dtype=np.float32)
        return (vector / norm).astype(np.float32)
