"""The ONNX provider: a BERT graph built from safetensors without torch, checked three ways.

A tiny random BERT (written here as safetensors, with a WordPiece tokenizer built by
``tokenizers``) is converted and its vectors are compared with a forward pass written in numpy
from BERT's definition; the cached graph is reused and written atomically; the token window
serves chunking. Where sentence-transformers and the bundled all-MiniLM-L6-v2 are installed,
the real model's vectors are compared with sentence-transformers' own (within 1e-5).
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
tokenizers = pytest.importorskip("tokenizers")

from engram.projections.embedding import (  # noqa: E402
    OnnxEmbedder,
    OnnxRoute,
    embedder_for,
    load_routing,
)
from engram.projections.embedding import routing as routing_module  # noqa: E402
from engram.projections.embedding.onnx_graph import read_safetensors  # noqa: E402
from engram.projections.embedding.onnx_provider import MAX_TOKENS, ready  # noqa: E402
from engram.projections.embedding.st import MINILM  # noqa: E402
from engram.projections.embedding.st import available as st_available  # noqa: E402
from engram.projections.errors import EmbeddingConfigError  # noqa: E402

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "ran",
    "far",
    "away",
    "quarterly",
    "revenue",
    "report",
    "for",
    "finance",
    "team",
]
HIDDEN, HEADS, LAYERS, INTERMEDIATE = 16, 4, 2, 32


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {}
    blobs, offset = [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        dtype = "I64" if array.dtype == np.int64 else "F32"
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + b"".join(blobs))


def _tiny_bert(directory: Path, seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS]

    def normal(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.5, shape).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": normal(len(vocab), HIDDEN),
        "embeddings.position_embeddings.weight": normal(512, HIDDEN),
        "embeddings.token_type_embeddings.weight": normal(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + normal(HIDDEN),
        "embeddings.LayerNorm.bias": normal(HIDDEN),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            tensors[f"{p}attention.self.{part}.weight"] = normal(HIDDEN, HIDDEN)
            tensors[f"{p}attention.self.{part}.bias"] = normal(HIDDEN)
        tensors[f"{p}attention.output.dense.weight"] = normal(HIDDEN, HIDDEN)
        tensors[f"{p}attention.output.dense.bias"] = normal(HIDDEN)
        tensors[f"{p}attention.output.LayerNorm.weight"] = 1 + normal(HIDDEN)
        tensors[f"{p}attention.output.LayerNorm.bias"] = normal(HIDDEN)
        tensors[f"{p}intermediate.dense.weight"] = normal(INTERMEDIATE, HIDDEN)
        tensors[f"{p}intermediate.dense.bias"] = normal(INTERMEDIATE)
        tensors[f"{p}output.dense.weight"] = normal(HIDDEN, INTERMEDIATE)
        tensors[f"{p}output.dense.bias"] = normal(HIDDEN)
        tensors[f"{p}output.LayerNorm.weight"] = 1 + normal(HIDDEN)
        tensors[f"{p}output.LayerNorm.bias"] = normal(HIDDEN)
    directory.mkdir(parents=True, exist_ok=True)
    _write_safetensors(directory / "model.safetensors", tensors)
    config = {
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": INTERMEDIATE,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
    }
    (directory / "config.json").write_text(json.dumps(config))
    models, normalizers = tokenizers.models, tokenizers.normalizers
    tokenizer = tokenizers.Tokenizer(
        models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(directory / "tokenizer.json"))
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-12) * weight + bias


def _reference(tensors: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT's forward pass for one unpadded text, mean pooled and normalised, in float64."""
    t = {name: value.astype(np.float64) for name, value in tensors.items()}
    x = (
        t["embeddings.word_embeddings.weight"][ids]
        + t["embeddings.position_embeddings.weight"][: len(ids)]
        + t["embeddings.token_type_embeddings.weight"][0]
    )
    x = _layer_norm(x, t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
    size = HIDDEN // HEADS
    erf = np.vectorize(math.erf)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def dense(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
            return v @ t[f"{p}{name}.weight"].T + t[f"{p}{name}.bias"]

        q, k, v = (
            dense(x, f"attention.self.{n}").reshape(len(ids), HEADS, size)
            for n in ("query", "key", "value")
        )
        scores = np.einsum("ihd,jhd->hij", q, k) / math.sqrt(size)
        probs = np.exp(scores - scores.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        context = np.einsum("hij,jhd->ihd", probs, v).reshape(len(ids), HIDDEN)
        x = _layer_norm(
            dense(context, "attention.output.dense") + x,
            t[f"{p}attention.output.LayerNorm.weight"],
            t[f"{p}attention.output.LayerNorm.bias"],
        )
        h = dense(x, "intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = _layer_norm(
            dense(h, "output.dense") + x,
            t[f"{p}output.LayerNorm.weight"],
            t[f"{p}output.LayerNorm.bias"],
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[OnnxEmbedder, dict[str, np.ndarray], Path]:
    tensors = _tiny_bert(tmp_path / "tiny")
    embedder = OnnxEmbedder(model=str(tmp_path / "tiny"), cache=tmp_path / "cache", batch_size=2)
    return embedder, tensors, tmp_path / "cache"


def test_vectors_equal_a_numpy_forward_pass_of_bert(tiny: tuple) -> None:
    embedder, tensors, _ = tiny
    texts = [
        "the cat sat on the mat",
        "a dog ran far away",
        "quarterly revenue report",
        "the",
        "",
        "zebra unknown words the cat",
    ]
    vectors = embedder.embed(texts)
    tokenizer = tokenizers.Tokenizer.from_file(str(embedder._dir / "tokenizer.json"))
    for row, text in enumerate(texts):
        expected = _reference(tensors, tokenizer.encode(text).ids)
        np.testing.assert_allclose(vectors[row], expected, atol=1e-5, rtol=0)
    assert vectors.shape == (len(texts), HIDDEN)
    assert vectors.dtype == np.float32


def test_padding_in_a_batch_does_not_move_a_text_s_vector(tiny: tuple) -> None:
    embedder, _, _ = tiny
    alone = embedder.embed(["the cat"])
    beside_long = embedder.embed(["the cat", " ".join(WORDS * 3)])
    np.testing.assert_allclose(alone[0], beside_long[0], atol=1e-6, rtol=0)


def test_texts_past_the_window_are_cut_to_256_tokens(tiny: tuple) -> None:
    embedder, _, _ = tiny
    base = " ".join(WORDS[i % len(WORDS)] for i in range(MAX_TOKENS - 2))
    longer = embedder.embed([base + " cat dog", base + " revenue team mat"])
    np.testing.assert_array_equal(longer[0], longer[1])
    assert not np.array_equal(embedder.embed([base[:40]])[0], longer[0])


def test_the_graph_is_converted_once_into_the_cache_atomically(tiny: tuple) -> None:
    embedder, _, cache = tiny
    path = embedder.convert()
    assert path.parent == cache
    assert sorted(p.name for p in cache.iterdir()) == [path.name]  # no temporary left
    stamp = path.stat().st_mtime_ns
    again = OnnxEmbedder(model=str(embedder._dir), cache=cache)
    again.embed(["the cat"])
    assert again.convert() == path
    assert path.stat().st_mtime_ns == stamp


def test_the_window_gives_each_token_s_characters(tiny: tuple) -> None:
    embedder, _, _ = tiny
    window = embedder.window
    assert (window.max_tokens, window.special_tokens, window.text_tokens) == (256, 2, 254)
    text = "The cat  sat"
    spans = window.offsets(text)
    assert [text[a:b] for a, b in spans] == ["The", "cat", "sat"]
    long_text = " ".join(["cat"] * 400)
    assert len(window.offsets(long_text)) == 400  # offsets see the whole text
    assert embedder.embed([long_text]).shape == (1, HIDDEN)  # the model only its window


def test_the_fingerprint_is_sentence_transformers_own_definition(tiny: tuple) -> None:
    embedder, _, _ = tiny
    fingerprint = embedder.fingerprint
    assert (fingerprint.provider, fingerprint.dimension, fingerprint.normalization) == (
        "sentence-transformers",
        HIDDEN,
        "l2",
    )


def test_bad_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingConfigError, match="neither"):
        OnnxEmbedder(model=str(tmp_path / "nowhere"))
    with pytest.raises(EmbeddingConfigError, match="threads"):
        OnnxEmbedder(model=str(tmp_path), threads=-1)
    (tmp_path / "model.safetensors").write_bytes(b"\x01")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(EmbeddingConfigError):
        OnnxEmbedder(model=str(tmp_path))


def test_read_safetensors_refuses_a_file_that_is_not_one(tmp_path: Path) -> None:
    path = tmp_path / "x.safetensors"
    path.write_bytes(struct.pack("<Q", 5) + b"nojso")
    with pytest.raises(EmbeddingConfigError, match="not a safetensors"):
        read_safetensors(path)


def test_a_routing_file_routes_a_use_to_onnx(tiny: tuple, tmp_path: Path) -> None:
    embedder, _, _ = tiny
    path = tmp_path / "routing.toml"
    path.write_text(
        f'[embedding.recall]\nprovider = "onnx"\nmodel = "{embedder._dir}"\nthreads = 1\n'
    )
    routing = load_routing(path)
    assert isinstance(routing.route("recall"), OnnxRoute)
    assert isinstance(embedder_for("recall", routing), OnnxEmbedder)


def test_the_default_route_is_minilm_on_onnx_where_it_can_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ENGRAM_EMBEDDER", raising=False)
    monkeypatch.setattr(routing_module, "onnx_ready", lambda: True)
    assert load_routing().route("recall") == OnnxRoute()
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hash")
    assert load_routing().route("recall").__class__.__name__ == "HashRoute"
    monkeypatch.setenv("ENGRAM_EMBEDDER", "auto")
    monkeypatch.setattr(routing_module, "onnx_ready", lambda: False)
    assert load_routing().route("recall").__class__.__name__ == "HashRoute"
    monkeypatch.setenv("ENGRAM_EMBEDDER", "minilm")  # asked for, and not installed: said so
    with pytest.raises(EmbeddingConfigError, match="ENGRAM_EMBEDDER=minilm needs MiniLM"):
        load_routing()
    monkeypatch.setattr(routing_module, "onnx_ready", lambda: True)
    assert load_routing().route("recall") == OnnxRoute()
    monkeypatch.setenv("ENGRAM_EMBEDDER", "bert")
    with pytest.raises(EmbeddingConfigError, match="'auto', 'hash' or 'minilm'"):
        load_routing()


@pytest.mark.skipif(
    not (ready() and st_available()),
    reason="needs the bundled all-MiniLM-L6-v2 and sentence-transformers",
)
def test_minilm_on_onnx_equals_sentence_transformers_within_1e_5(tmp_path: Path) -> None:
    from engram.projections.embedding import SentenceTransformerEmbedder

    texts = [
        "the cat sat on the mat",
        "Ünïcode — ✓ 記憶",
        "",
        "word " * 400,
        "Caroline went to the LGBTQ support group on 7 May 2023.",
    ]
    onnx = OnnxEmbedder(model="all-MiniLM-L6-v2", cache=tmp_path)
    st = SentenceTransformerEmbedder(model="all-MiniLM-L6-v2", device="cpu")
    np.testing.assert_allclose(onnx.embed(texts), st.embed(texts), atol=1e-5, rtol=0)
    assert onnx.fingerprint == st.fingerprint
    assert onnx.fingerprint.model == MINILM
