"""The http provider against a real server on 127.0.0.1: retries, permanent failures, the key."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import numpy as np
import pytest
from embedding_stub import Reply, StubServer, stub_server

from engram.projections.embedding import HashEmbedder, HttpEmbedder
from engram.projections.errors import EmbeddingConfigError, EmbeddingProviderError

DIMENSION = 16
KEY_ENV = "ENGRAM_TEST_EMBEDDING_KEY"
SECRET = "sk-test-0123456789-do-not-leak"


@pytest.fixture
def server() -> Iterator[StubServer]:
    with stub_server(DIMENSION) as running:
        yield running


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client(url: str, sleeps: list[float], **options: object) -> HttpEmbedder:
    settings: dict[str, object] = {
        "base_url": url,
        "model": "stub-model",
        "dimension": DIMENSION,
        "timeout": 2.0,
        "backoff": 0.25,
        "max_retry_after": 5.0,
        "sleep": sleeps.append,
        **options,
    }
    return HttpEmbedder(**settings)  # type: ignore[arg-type]


def test_vectors_match_what_the_server_sent(server: StubServer, sleeps: list[float]) -> None:
    texts = [f"text {i}" for i in range(70)]
    vectors = client(server.base_url, sleeps).embed(texts)
    assert vectors.tobytes() == HashEmbedder(dimension=DIMENSION).embed(texts).tobytes()
    assert [len(seen.body["input"]) for seen in server.requests] == [64, 6]
    assert server.requests[0].path == "/v1/embeddings"
    assert server.requests[0].body["model"] == "stub-model"
    assert "authorization" not in server.requests[0].headers
    assert sleeps == []


def test_429_then_200_succeeds_after_one_retry(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(429, {"error": "slow down"}))
    vectors = client(server.base_url, sleeps).embed(["retry me"])
    assert vectors.shape == (1, DIMENSION)
    assert len(server.requests) == 2
    assert sleeps == [0.25]


def test_retry_after_is_honoured_but_capped(server: StubServer, sleeps: list[float]) -> None:
    server.script += [
        Reply(429, {}, {"Retry-After": "1.5"}),
        Reply(503, {}, {"Retry-After": "3600"}),
    ]
    client(server.base_url, sleeps).embed(["patience"])
    assert sleeps == [1.5, 5.0]


def test_three_5xx_fail_after_three_attempts(
    server: StubServer, sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script += [Reply(500, {"error": "down"}) for _ in range(3)] + [Reply(200, {})]
    with pytest.raises(EmbeddingProviderError, match="after 3 attempts: HTTP 500") as caught:
        client(server.base_url, sleeps).embed(["doomed"])
    assert caught.value.status == 500
    assert len(server.requests) == 3
    assert sleeps == [0.25, 0.5]  # exponential backoff
    assert caplog.text.count("retry") == 2


def test_400_fails_at_once_with_status_and_body(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(400, {"error": {"message": "input too long for this model"}}))
    with pytest.raises(EmbeddingProviderError, match="HTTP 400") as caught:
        client(server.base_url, sleeps).embed(["bad request"])
    assert caught.value.status == 400
    assert "input too long for this model" in str(caught.value)
    assert len(server.requests) == 1
    assert sleeps == []


@pytest.mark.parametrize("status", [301, 401, 404, 422])
def test_other_non_2xx_are_permanent(server: StubServer, sleeps: list[float], status: int) -> None:
    server.script.append(Reply(status, {}, {"Location": "http://127.0.0.1:9/"}))
    with pytest.raises(EmbeddingProviderError, match=f"HTTP {status}"):
        client(server.base_url, sleeps).embed(["once"])
    assert len(server.requests) == 1


def test_network_errors_are_retried(sleeps: list[float]) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbeddingProviderError, match="after 3 attempts: network error") as caught:
        client(f"http://127.0.0.1:{port}/v1", sleeps).embed(["nobody home"])
    assert caught.value.status is None
    assert sleeps == [0.25, 0.5]


def test_a_timeout_is_retried(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(200, {}, delay=0.6))
    vectors = client(server.base_url, sleeps, timeout=0.2).embed(["eventually"])
    assert vectors.shape == (1, DIMENSION)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"<html>oops</html>", "not JSON"),
        ({"object": "list"}, "no 'data' list"),
        ({"data": []}, "0 embeddings for 1 texts"),
        ({"data": [{"index": 0, "embedding": [0.1] * 3}]}, "length 3, expected 16"),
        ({"data": [{"index": 5, "embedding": [0.1] * 16}]}, "index is 5"),
        ({"data": [{"index": 0, "embedding": ["0.1"] * 16}]}, "other than numbers"),
        ({"data": [{"index": 0, "embedding": [True] * 16}]}, "other than numbers"),
        (b'{"data": [{"index": 0, "embedding": [NaN' + b", 0" * 15 + b"]}]}", "non-finite"),
        ({"data": [{"index": 0, "embedding": [1e300] * 16}]}, "non-finite"),
    ],
)
def test_a_malformed_response_is_a_clear_error_and_not_retried(
    server: StubServer, sleeps: list[float], body: object, problem: str
) -> None:
    server.script.append(Reply(200, body))
    with pytest.raises(EmbeddingProviderError, match=problem) as caught:
        client(server.base_url, sleeps).embed(["one text"])
    assert caught.value.status == 200
    assert len(server.requests) == 1


def test_duplicate_indexes_are_refused(server: StubServer, sleeps: list[float]) -> None:
    row = {"index": 0, "embedding": [0.25] * DIMENSION}
    server.script.append(Reply(200, {"data": [row, row]}))
    with pytest.raises(EmbeddingProviderError, match="not a unique index"):
        client(server.base_url, sleeps).embed(["a", "b"])


def test_normalize_false_keeps_the_servers_vectors(server: StubServer, sleeps: list[float]) -> None:
    server.script.append(Reply(200, {"data": [{"index": 0, "embedding": [2.0] * DIMENSION}]}))
    vectors = client(server.base_url, sleeps, normalize=False).embed(["raw"])
    assert np.all(vectors == 2.0)


def test_the_api_key_reaches_the_server_and_nothing_else(
    server: StubServer,
    sleeps: list[float],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(KEY_ENV, SECRET)
    embedder = client(server.base_url, sleeps, api_key_env=KEY_ENV)

    embedder.embed(["authorised"])
    assert server.requests[-1].headers["authorization"] == f"Bearer {SECRET}"

    # A retried failure, then a permanent one whose body echoes the key back.
    server.script += [Reply(500, {"error": f"bad key {SECRET}"}) for _ in range(3)]
    server.script.append(Reply(401, {"error": f"invalid api key {SECRET}"}))
    messages = []
    for _ in range(2):
        with pytest.raises(EmbeddingProviderError) as caught:
            embedder.embed(["refused"])
        messages.append(str(caught.value))
    assert "[redacted]" in messages[1]

    exposed = [
        *messages,
        caplog.text,
        repr(embedder),
        embedder.fingerprint.text,
        repr(vars(embedder)),
    ]
    assert caplog.text  # the retries were logged
    for text in exposed:
        assert SECRET not in text
    assert KEY_ENV in repr(embedder)


def test_a_missing_key_variable_is_named_and_nothing_is_sent(
    server: StubServer, sleeps: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(EmbeddingConfigError, match=f"{KEY_ENV} \\(api_key_env\\) is not set"):
        client(server.base_url, sleeps, api_key_env=KEY_ENV).embed(["x"])
    assert server.requests == []


def test_credentials_in_the_url_stay_out_of_messages(sleeps: list[float]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = client(f"http://user:{SECRET}@127.0.0.1:{port}/v1", sleeps)
    with pytest.raises(EmbeddingProviderError) as caught:
        embedder.embed(["x"])
    assert SECRET not in str(caught.value)
    assert SECRET not in repr(embedder)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"base_url": "file:///etc/passwd"}, "base_url must be an http"),
        ({"base_url": "http://127.0.0.1:99999999/v1"}, "base_url must be an http"),
        ({"model": ""}, "model must be"),
        ({"dimension": 0}, "dimension"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"backoff": -1}, "backoff must be a non-negative"),
        ({"api_key_env": "no way"}, "api_key_env"),
    ],
)
def test_bad_options_are_refused(
    sleeps: list[float], options: dict[str, object], problem: str
) -> None:
    with pytest.raises(EmbeddingConfigError, match=problem):
        client(str(options.pop("base_url", "http://127.0.0.1:9/v1")), sleeps, **options)
