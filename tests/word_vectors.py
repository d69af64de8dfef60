"""A deterministic stand-in for a neural embedder in the lessons loop's tests: one dimension
per word of a vocabulary, so texts sharing words are near and others far. Its provider is
not "hash", so the serving takes it for an embedder that sets meanings apart (ADR 0092)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.projections.embedding import Embedder, Fingerprint


class WordVectors(Embedder):
    """One dimension per word of ``vocabulary`` (a faint floor in every dimension, then
    unit length); the vocabulary names the model, so two vocabularies never share a cache."""

    def __init__(self, vocabulary: Sequence[str]) -> None:
        super().__init__()
        self.vocabulary = tuple(vocabulary)

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(provider="test-words", model=" ".join(self.vocabulary),
                           dimension=len(self.vocabulary), normalization="l2")  # fmt: skip

    @property
    def dimension(self) -> int:
        return len(self.vocabulary)

    def _embed_batch(self, texts: list[str]) -> npt.NDArray[np.float32]:
        out = np.full((len(texts), self.dimension), 1e-3, dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                if word in self.vocabulary:
                    out[i, self.vocabulary.index(word)] += 1.0
            out[i] /= np.linalg.norm(out[i])
        return out
