"""The embedder port: what every provider promises, and the checks they all share.

An :class:`Embedder` turns texts into float32 vectors of a fixed dimension. Its
:class:`Fingerprint` names everything that shapes those vectors, so the semantic index can
put it in its identity and the embedding cache can key on it. Providers live one per module
(``hashing``, ``http_api``, ``st``); ``routing`` is the façade that picks one from the
routing file.

Embedding is not a projection handler's business (DESIGN.md, rule 2): a model's output enters
the system as cached vectors keyed by content, so a rebuild replays instead of recomputing.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec
import numpy as np
import numpy.typing as npt

from engram.projections.errors import (
    EmbeddingConfigError,
    EmbeddingInputError,
    EmbeddingProviderError,
)

FloatArray = npt.NDArray[np.float32]

MAX_CHARS = 16_000
"""Every text is cut to this many characters before any provider sees it."""

DEFAULT_BATCH_SIZE = 64
"""Texts per provider call unless a route says otherwise."""

MAX_DIMENSION = 65_536


class Fingerprint(msgspec.Struct, frozen=True, kw_only=True):
    """Everything that shapes an embedder's vectors; equal fingerprints, equal vectors.

    ``params`` holds provider-specific settings (the hash provider's n-gram ranges, say) as
    sorted ``(name, value)`` pairs. :attr:`text` is the canonical form to store and compare.
    """

    provider: str
    model: str
    dimension: int
    normalization: str
    max_chars: int = MAX_CHARS
    params: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """Return the canonical JSON form: the same fingerprint always gives the same string."""
        return msgspec.json.encode(self).decode()

    def __str__(self) -> str:
        return self.text


def check_texts(texts: Any) -> list[str]:
    """Return ``texts`` as a list after checking it is a list (or tuple) of str.

    Raises:
        EmbeddingInputError: ``texts`` is not a list, or an item is not a str (named by index).
    """
    if isinstance(texts, str | bytes) or not isinstance(texts, list | tuple):
        raise EmbeddingInputError(
            f"embed() takes a list of str, got {type(texts).__name__}"
            + (" (wrap a single text in a list)" if isinstance(texts, str) else "")
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise EmbeddingInputError(
                f"embed() takes a list of str: item {index} is {type(text).__name__}"
            )
    return list(texts)


def truncate(texts: Sequence[str]) -> list[str]:
    """Cut every text to :data:`MAX_CHARS` characters."""
    return [text[:MAX_CHARS] for text in texts]


def check_dimension(dimension: Any, what: str) -> int:
    """Return ``dimension`` if it is an int in 1..65536, else raise EmbeddingConfigError."""
    if (
        not isinstance(dimension, int)
        or isinstance(dimension, bool)
        or not 1 <= dimension <= MAX_DIMENSION
    ):
        raise EmbeddingConfigError(
            f"{what}: dimension must be an int in 1..{MAX_DIMENSION}, got {dimension!r}"
        )
    return dimension


def check_batch_size(batch_size: Any, what: str) -> int:
    """Return ``batch_size`` if it is a positive int, else raise EmbeddingConfigError."""
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise EmbeddingConfigError(f"{what}: batch_size must be a positive int, got {batch_size!r}")
    return batch_size


def l2_normalize(vectors: npt.NDArray[Any]) -> FloatArray:
    """Return float32 rows scaled to unit length; all-zero rows stay zero."""
    rows = np.asarray(vectors, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    norms[norms == 0.0] = 1.0
    normalized: FloatArray = (rows / norms[:, None]).astype(np.float32)
    return normalized


@dataclass(frozen=True)
class TokenWindow:
    """How much text a model reads at once, for callers that cut long texts into chunks.

    ``max_tokens`` counts every token the model sees, ``special_tokens`` of them added by the
    tokenizer (``[CLS]``, ``[SEP]``), so a chunk holds at most ``max_tokens - special_tokens``
    of the text's own tokens. ``offsets(text)`` returns the character span of each of them.
    """

    max_tokens: int
    special_tokens: int
    offsets: Callable[[str], list[tuple[int, int]]]

    @property
    def text_tokens(self) -> int:
        """Return how many of a text's own tokens fit in the window."""
        return self.max_tokens - self.special_tokens


class Embedder(abc.ABC):
    """Turns texts into float32 vectors: the one door every model call goes through.

    Contract: :meth:`embed` takes a list of str and returns a C-contiguous float32 array of
    shape ``(len(texts), dimension)``, row *i* for text *i*; an empty list gives
    ``(0, dimension)``. Texts are cut to :data:`MAX_CHARS` characters and sent to the provider
    in batches of at most :attr:`batch_size`. Row *i* depends only on text *i* and the
    :attr:`fingerprint` (up to float noise from batching in neural models). Vectors are
    L2-normalised unless the fingerprint's ``normalization`` says ``"none"``; a text with no
    features (the hash provider's empty string) gives a zero row.

    Providers implement :attr:`fingerprint`, :attr:`dimension` and :meth:`_embed_batch`.
    """

    provider: ClassVar[str]
    #: True when the provider batches by :attr:`batch_size` itself and does better with the
    #: whole list at once (sentence-transformers sorts texts by length across all of them,
    #: which pads less than fixed slices in arrival order).
    batches_internally: ClassVar[bool] = False

    def __init__(self, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.batch_size = check_batch_size(batch_size, type(self).__name__)

    @property
    @abc.abstractmethod
    def fingerprint(self) -> Fingerprint:
        """Return what shapes this embedder's vectors (stable across processes and runs)."""

    @property
    @abc.abstractmethod
    def dimension(self) -> int:
        """Return the length of every vector this embedder returns."""

    @abc.abstractmethod
    def _embed_batch(self, texts: list[str]) -> FloatArray:
        """Embed one batch of checked, truncated texts (at most ``batch_size`` of them,
        or all of them when the provider :attr:`batches_internally`)."""

    @property
    def window(self) -> TokenWindow | None:
        """Return the model's token window, or None when the provider reads any length."""
        return None

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts``: one float32 row per text, in order.

        Raises:
            EmbeddingInputError: ``texts`` is not a list of str.
            EmbeddingProviderError: the provider failed or returned the wrong shape.
        """
        items = truncate(check_texts(texts))
        dimension = self.dimension
        out = np.empty((len(items), dimension), dtype=np.float32)
        size = max(len(items), 1) if self.batches_internally else self.batch_size
        for start, batch in _batches(items, size):
            vectors = self._embed_batch(batch)
            if vectors.shape != (len(batch), dimension):
                raise EmbeddingProviderError(
                    f"{self.provider} provider returned shape {vectors.shape} "
                    f"for {len(batch)} texts of dimension {dimension}"
                )
            out[start : start + len(batch)] = vectors
        return out

    def embed_transient(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts`` that must not be kept (a query, a task): as :meth:`embed`, but a
        cache in front of the embedder may read them and stores none of them. What is stored
        is what the ledger holds, and ``forget`` can find and drop it; a question asked and
        not recorded is in no ledger (ADR 0045)."""
        return self.embed(texts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fingerprint.text})"


def _batches(items: list[str], size: int) -> Iterator[tuple[int, list[str]]]:
    for start in range(0, len(items), size):
        yield start, items[start : start + size]
