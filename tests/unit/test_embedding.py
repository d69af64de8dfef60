"""The embedder façade: the hash provider, batching, input checks, routing, fingerprints, cache."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import msgspec
import numpy as np
import pytest

from engram.projections.embedding import (
    MAX_CHARS,
    CachedEmbedder,
    Embedder,
    EmbeddingCache,
    EmbeddingConfigWarning,
    Fingerprint,
    FloatArray,
    HashEmbedder,
    HashRoute,
    HttpEmbedder,
    HttpRoute,
    SentenceTransformersRoute,
    cache_key,
    embedder_for,
    load_routing,
)
from engram.projections.embedding import st as embedding_st
from engram.projections.errors import (
    EmbeddingConfigError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingProviderError,
    EmbeddingUnavailableError,
    ProjectionError,
)

TEXTS = ["Hello world", "the cat sat on the mat", "", "Ünïcode — ✓ 記憶", "x" * 20_000]

# sha256 of HashEmbedder().embed(["hello world", "the cat sat on the mat"]).tobytes().
# If this changes, the vectors changed: bump _FEATURES_VERSION so the fingerprint follows.
GOLDEN = "5492e5baaeaeb7fc87e73b7424c9685fa0b7b2be522c98b17a68a9873f29f3af"


class Recording(Embedder):
    """A provider that records the batches it is given and returns constant rows."""

    provider = "recording"

    def __init__(
        self, *, batch_size: int = 64, dimension: int = 4, fingerprint: Fingerprint | None = None
    ) -> None:
        super().__init__(batch_size=batch_size)
        self._dim = dimension
        self._fingerprint = fingerprint or Fingerprint(
            provider="recording", model="m", dimension=dimension, normalization="l2"
        )
        self.batches: list[list[str]] = []

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return self._dim

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        self.batches.append(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        out[:, 0] = [len(t) for t in texts]
        return out


# -- hash provider ---------------------------------------------------------------------------


def test_hash_bytes_are_identical_across_processes() -> None:
    script = (
        "import sys, hashlib; from engram.projections.embedding import HashEmbedder; "
        f"sys.stdout.write(HashEmbedder().embed({TEXTS!r}).tobytes().hex())"
    )
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": seed},
            text=True,
        )
        for seed in ("1", "2")
    ]
    outputs = [run.communicate(timeout=60)[0] for run in runs]
    assert all(run.returncode == 0 for run in runs)
    here = HashEmbedder().embed(TEXTS).tobytes().hex()
    assert outputs == [here, here]


def test_hash_vectors_match_the_golden_digest() -> None:
    vectors = HashEmbedder().embed(["hello world", "the cat sat on the mat"])
    assert hashlib.sha256(vectors.tobytes()).hexdigest() == GOLDEN


def test_hash_rows_are_unit_length_and_empty_text_is_zero() -> None:
    vectors = HashEmbedder().embed(["some text", "", "   \n\t "])
    assert np.linalg.norm(vectors[0]) == pytest.approx(1.0, abs=1e-6)
    assert not vectors[1].any()
    assert not vectors[2].any()


def test_hash_ignores_case_and_whitespace() -> None:
    a, b = HashEmbedder().embed(["Hello   World\n", "hello world"])
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dimension", [1, 7, 384, 1024])
def test_hash_dimension_is_configurable(dimension: int) -> None:
    assert HashEmbedder(dimension=dimension).embed(["a b c"]).shape == (1, dimension)


@pytest.mark.parametrize(
    "options",
    [
        {"dimension": 0},
        {"dimension": 1 << 20},
        {"dimension": True},
        {"char_ngrams": (5, 3)},
        {"char_ngrams": (0, 3)},
        {"word_ngrams": 0},
        {"batch_size": 0},
    ],
)
def test_hash_refuses_bad_options(options: dict[str, object]) -> None:
    with pytest.raises(EmbeddingConfigError, match=r"hash|batch_size"):
        HashEmbedder(**options)  # type: ignore[arg-type]


# -- the façade: truncation, batching, input ------------------------------------------------


def test_texts_are_cut_at_16000_characters() -> None:
    embedder = Recording()
    embedder.embed(["a" * 15_999, "b" * 16_000, "c" * 16_001, "d" * 100_000])
    assert [len(t) for t in embedder.batches[0]] == [15_999, 16_000, 16_000, 16_000]
    assert MAX_CHARS == 16_000
    hashed = HashEmbedder().embed(["z" * 16_000 + " tail", "z" * 16_000, "z" * 15_999])
    assert hashed[0].tobytes() == hashed[1].tobytes() != hashed[2].tobytes()


def test_embed_calls_the_provider_in_batches_of_64_by_default() -> None:
    embedder = Recording()
    texts = [f"text {i}" for i in range(150)]
    vectors = embedder.embed(texts)
    assert [len(b) for b in embedder.batches] == [64, 64, 22]
    assert [t for b in embedder.batches for t in b] == texts
    assert vectors[:, 0].tolist() == [len(t) for t in texts]


def test_a_provider_that_batches_internally_gets_the_whole_list_at_once() -> None:
    class SortsItself(Recording):
        batches_internally = True

    embedder = SortsItself()
    texts = [f"text {i}" for i in range(150)]
    vectors = embedder.embed(texts)
    assert [len(b) for b in embedder.batches] == [150]
    assert vectors[:, 0].tolist() == [len(t) for t in texts]
    assert embedder.embed([]).shape == (0, 4)


def test_batch_size_is_configurable_and_does_not_change_vectors() -> None:
    small = Recording(batch_size=7)
    small.embed(["x"] * 20)
    assert [len(b) for b in small.batches] == [7, 7, 6]
    texts = [f"note {i}" for i in range(30)]
    assert (
        HashEmbedder(batch_size=4).embed(texts).tobytes() == HashEmbedder().embed(texts).tobytes()
    )


def test_empty_list_never_calls_the_provider() -> None:
    embedder = Recording(dimension=5)
    assert embedder.embed([]).shape == (0, 5)
    assert embedder.batches == []


def test_a_tuple_is_accepted() -> None:
    assert HashEmbedder().embed(("a", "b")).shape == (2, 384)


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("text", "got str \\(wrap a single text in a list\\)"),
        (b"bytes", "got bytes"),
        (None, "got NoneType"),
        ({"a": 1}, "got dict"),
        (iter(["a"]), "got list_iterator"),
        (["a", None], "item 1 is NoneType"),
        (["a", "b", "c", 4.5], "item 3 is float"),
    ],
)
def test_bad_input_names_the_problem(bad: object, needle: str) -> None:
    embedder = Recording()
    with pytest.raises(EmbeddingInputError, match=needle):
        embedder.embed(bad)  # type: ignore[arg-type]
    assert embedder.batches == []


def test_a_provider_returning_the_wrong_shape_is_an_error() -> None:
    class Short(Recording):
        def _embed_batch(self, texts: list[str]) -> FloatArray:
            return super()._embed_batch(texts)[:-1]

    with pytest.raises(EmbeddingProviderError, match=r"shape \(1, 4\) for 2 texts"):
        Short().embed(["a", "b"])


def test_errors_form_one_family() -> None:
    for error in (
        EmbeddingConfigError,
        EmbeddingInputError,
        EmbeddingProviderError,
        EmbeddingUnavailableError,
    ):
        assert issubclass(error, EmbeddingError)
    assert issubclass(EmbeddingError, ProjectionError)
    assert EmbeddingProviderError("boom", 503).status == 503


# -- fingerprints -----------------------------------------------------------------------------


def test_fingerprint_is_stable_and_canonical() -> None:
    a, b = HashEmbedder().fingerprint, HashEmbedder().fingerprint
    assert a == b
    assert hash(a) == hash(b)
    assert a.text == b.text == str(a)
    decoded = msgspec.json.decode(a.text)
    assert decoded["provider"] == "hash"
    assert decoded["dimension"] == 384
    assert decoded["normalization"] == "l2"
    assert decoded["max_chars"] == MAX_CHARS


def test_fingerprint_changes_with_every_parameter() -> None:
    http = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "dimension": 8}
    fingerprints = [
        HashEmbedder().fingerprint,
        HashEmbedder(dimension=256).fingerprint,
        HashEmbedder(char_ngrams=(2, 4)).fingerprint,
        HashEmbedder(word_ngrams=1).fingerprint,
        HttpEmbedder(**http).fingerprint,  # type: ignore[arg-type]
        HttpEmbedder(**{**http, "model": "m2"}).fingerprint,  # type: ignore[arg-type]
        HttpEmbedder(**{**http, "dimension": 9}).fingerprint,  # type: ignore[arg-type]
        HttpEmbedder(**http, normalize=False).fingerprint,  # type: ignore[arg-type]
    ]
    assert len({f.text for f in fingerprints}) == len(fingerprints)
    # Batching and transport settings do not shape vectors.
    assert HashEmbedder(batch_size=3).fingerprint == HashEmbedder().fingerprint
    assert (
        HttpEmbedder(**http, timeout=1.0, api_key_env="K").fingerprint  # type: ignore[arg-type]
        == HttpEmbedder(**http).fingerprint  # type: ignore[arg-type]
    )


# -- routing ---------------------------------------------------------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.toml"
    path.write_text(text, encoding="utf-8")
    return path


ROUTES = """
[embedding.default]
provider = "hash"
dimension = 128

[embedding.recall]
provider = "sentence-transformers"
model = "all-MiniLM-L6-v2"

[embedding.remote]
provider = "http"
base_url = "http://127.0.0.1:9/v1"
model = "text-embedding-3-small"
dimension = 1536
api_key_env = "OPENAI_API_KEY"
timeout = 5

[llm.reflect]
model = "left to its owner"
"""


def test_no_routing_file_means_hash_everywhere() -> None:
    routing = load_routing(None)
    assert routing.source is None
    embedder = embedder_for("anything", routing)
    assert isinstance(embedder, HashEmbedder)
    assert embedder.dimension == 384
    assert isinstance(embedder_for("default"), HashEmbedder)


def test_routing_file_maps_uses_to_providers(tmp_path: Path) -> None:
    routing = load_routing(write(tmp_path, ROUTES))
    assert routing.source == str(tmp_path / "models.toml")
    assert routing.route("default") == HashRoute(dimension=128)
    assert routing.route("recall") == SentenceTransformersRoute(model="all-MiniLM-L6-v2")
    remote = routing.route("remote")
    assert isinstance(remote, HttpRoute)
    assert remote.timeout == 5.0
    assert remote.api_key_env == "OPENAI_API_KEY"
    assert isinstance(embedder_for("remote", routing), HttpEmbedder)
    unrouted = embedder_for("reflection", routing)
    assert isinstance(unrouted, HashEmbedder)
    assert unrouted.dimension == 128


def test_a_file_without_default_keeps_the_hash_default(tmp_path: Path) -> None:
    routing = load_routing(write(tmp_path, '[embedding.small]\nprovider = "hash"\ndimension = 8\n'))
    assert embedder_for("small", routing).dimension == 8
    assert embedder_for("other", routing).dimension == 384


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[embedding.default\nprovider = 'hash'", "not valid TOML"),
        ("[other]\nx = 1\n", r"no \[embedding.<use>\] tables"),
        ("[embedding.default]\nprovider = 'magic'\n", "Invalid value 'magic'"),
        ("[embedding.default]\ndimension = 8\n", "missing required field `provider`"),
        ("[embedding.default]\nprovider = 'hash'\ndimension = 'big'\n", "Expected `int`"),
        ("[embedding.default]\nprovider = 'hash'\ndimension = 0\n", ">= 1"),
        ("[embedding.default]\nprovider = 'hash'\ncolour = 'red'\n", "unknown field `colour`"),
        ("[embedding.remote]\nprovider = 'http'\nmodel = 'm'\ndimension = 8\n", "base_url"),
        (
            "[embedding.remote]\nprovider = 'http'\nbase_url = 'ftp://x'\nmodel = 'm'\n"
            "dimension = 8\n",
            r"\[embedding.remote\]: http embedder: base_url must be an http\(s\) URL",
        ),
        (
            "[embedding.remote]\nprovider = 'http'\nbase_url = 'http://x'\nmodel = 'm'\n"
            "dimension = 8\napi_key_env = 'not a name'\n",
            "api_key_env must be an environment variable name",
        ),
        ("[embedding.default]\nprovider = 'hash'\nchar_ngrams = [5, 3]\n", "char_ngrams"),
        ("[embedding.recall]\nprovider = 'sentence-transformers'\n", "`model`"),
    ],
)
def test_an_invalid_file_falls_back_to_hash_with_a_warning(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.warns(EmbeddingConfigWarning, match=problem) as caught:
        routing = load_routing(path)
    assert str(path) in str(caught[0].message)
    assert "default hash embedder" in str(caught[0].message)
    assert routing.source is None
    assert list(routing.routes) == ["default"]
    assert isinstance(embedder_for("remote", routing), HashEmbedder)


def test_a_missing_file_falls_back_to_hash_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.toml"
    with pytest.warns(EmbeddingConfigWarning, match="cannot be read") as caught:
        routing = load_routing(path)
    assert str(path) in str(caught[0].message)
    assert isinstance(embedder_for("recall", routing), HashEmbedder)


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embedding_st, "available", lambda: False)
    routing = load_routing(write(tmp_path, ROUTES))
    with pytest.raises(EmbeddingUnavailableError, match=r"engram\[embeddings\]"):
        embedder_for("recall", routing)


def test_use_must_be_a_name() -> None:
    with pytest.raises(EmbeddingConfigError, match="use must be"):
        embedder_for("")


# -- cache -----------------------------------------------------------------------------------


def test_cache_key_is_sha256_of_fingerprint_and_text() -> None:
    fingerprint = HashEmbedder().fingerprint
    key = cache_key(fingerprint, "hello")
    assert len(key) == 32
    assert key == cache_key(fingerprint.text, "hello")
    assert key != cache_key(fingerprint, "hello!")
    assert key != cache_key(HashEmbedder(dimension=8).fingerprint, "hello")
    assert cache_key(fingerprint, "\ud800") != cache_key(fingerprint, "\ud801")  # lone surrogates


def test_cache_table_has_the_documented_shape(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "store.db") as cache:
        columns = cache.conn.execute("PRAGMA table_info(embedding_cache)").fetchall()
    assert [(c[1], c[2], c[5]) for c in columns] == [
        ("key", "BLOB", 1),
        ("fingerprint", "TEXT", 0),
        ("vector", "BLOB", 0),
    ]


def test_cache_hits_avoid_re_embedding(tmp_path: Path) -> None:
    inner = Recording()
    with EmbeddingCache(tmp_path / "store.db") as cache:
        cached = CachedEmbedder(inner, cache)
        first = cached.embed(["a", "bb", "a", "ccc"])
        assert inner.batches == [["a", "bb", "ccc"]]  # "a" twice in one call: embedded once
        second = cached.embed(["ccc", "a", "dddd"])
        assert inner.batches[1:] == [["dddd"]]
        assert (cached.misses, cached.hits) == (4, 3)
        assert first.tobytes() == inner.embed(["a", "bb", "a", "ccc"]).tobytes()
        assert second[0].tobytes() == first[3].tobytes()
        assert len(cache) == 4
        assert cached.fingerprint == inner.fingerprint


def test_discard_drops_texts_under_every_fingerprint_and_zeroes_their_pages(
    tmp_path: Path,
) -> None:
    secret = "wombat-" + "x" * 5000  # long enough to be cut: discarded as it was keyed
    path = tmp_path / "store.db"
    with EmbeddingCache(path) as cache:
        CachedEmbedder(HashEmbedder(), cache).embed([secret, "kept"])
        CachedEmbedder(HashEmbedder(dimension=64), cache).embed([secret])
        assert len(cache) == 3
        assert cache.discard([secret, secret, "never cached", ""]) == 2
        assert len(cache) == 1
        assert cache.discard([]) == 0
        inner = Recording(dimension=384, fingerprint=HashEmbedder().fingerprint)
        CachedEmbedder(inner, cache).embed(["kept"])
        assert inner.batches == []  # the other text stays cached
    assert HashEmbedder().embed([secret]).tobytes() not in path.read_bytes()


def test_cache_survives_reopening_and_returns_the_same_bytes(tmp_path: Path) -> None:
    texts = [f"memory {i}" for i in range(100)]
    with EmbeddingCache(tmp_path / "store.db") as cache:
        expected = CachedEmbedder(HashEmbedder(), cache).embed(texts)
    # Another process, another embedder object: same fingerprint, so every text hits.
    inner = Recording(dimension=384, fingerprint=HashEmbedder().fingerprint)
    with EmbeddingCache(str(tmp_path / "store.db")) as cache:
        again = CachedEmbedder(inner, cache).embed(texts)
    assert inner.batches == []
    assert again.tobytes() == expected.tobytes()


def test_another_fingerprint_misses(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path / "store.db") as cache:
        CachedEmbedder(HashEmbedder(dimension=8), cache).embed(["same text"])
        other = CachedEmbedder(HashEmbedder(dimension=16), cache)
        assert other.embed(["same text"]).shape == (1, 16)
        assert (other.hits, other.misses) == (0, 1)
        assert len(cache) == 2


def test_cache_on_a_connection_joins_the_callers_transaction() -> None:
    conn = sqlite3.connect(":memory:")
    cache = EmbeddingCache(conn)
    conn.execute("BEGIN")
    CachedEmbedder(HashEmbedder(), cache).embed(["kept only if the caller commits"])
    assert conn.in_transaction
    conn.rollback()
    assert len(cache) == 0
    CachedEmbedder(HashEmbedder(), cache).embed(["committed: no transaction was open"])
    assert not conn.in_transaction
    assert len(cache) == 1
    conn.close()


def test_embedder_for_wraps_in_the_cache() -> None:
    conn = sqlite3.connect(":memory:")
    embedder = embedder_for("default", cache=EmbeddingCache(conn))
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.embedder, HashEmbedder)
    conn.close()


def test_cache_refuses_other_things() -> None:
    with pytest.raises(EmbeddingConfigError, match=r"sqlite3\.Connection or a path"):
        EmbeddingCache(42)  # type: ignore[arg-type]


def test_a_cache_opened_in_one_thread_keeps_vectors_on_disk_from_others(
    tmp_path: Path,
) -> None:
    """The daemon opens the cache in its main thread and embeds from two others."""
    import threading
    import warnings

    path = tmp_path / "embeddings.db"
    cache = EmbeddingCache(path)
    cached = CachedEmbedder(HashEmbedder(), cache)
    failures: list[BaseException] = []

    def embed(prefix: str) -> None:
        try:
            for i in range(50):
                cached.embed([f"{prefix} text {i}", f"shared {i % 7}"])
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=embed, args=(name,)) for name in ("follow", "job")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cache.close()  # from the main thread, as the daemon's stop does
    assert failures == []
    assert [str(w.message) for w in caught] == []  # never degraded to memory
    with EmbeddingCache(path) as reopened:
        assert len(reopened) == 2 * 50 + 7
        assert cached.misses + cached.hits == 200
