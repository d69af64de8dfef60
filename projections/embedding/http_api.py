"""The http provider: an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Request ``{"model": ..., "input": [...]}``; response ``{"data": [{"index": i, "embedding":
[...]}, ...]}``. A 429, a 5xx or a network error is retried with exponential backoff, at most
twice (three attempts), honouring a capped ``Retry-After``; any other non-2xx status fails at
once. Redirects are not followed, so the Authorization header never leaves the configured host
(all of this is the one HTTP client's, :mod:`engram.projections.embedding.http_client`).

The API key is read from the environment variable *named* in the configuration, at each
request; it is never stored on the embedder, logged, or put in a message, repr or fingerprint.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import ClassVar, NoReturn

import numpy as np

from engram.projections.embedding.http_client import (
    ATTEMPTS,
    RejectedError,
    RetryableError,
    excerpt,
    http_settings_problem,
    post_json,
    safe_url,
)
from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    Fingerprint,
    FloatArray,
    check_dimension,
    l2_normalize,
)
from engram.projections.errors import EmbeddingConfigError, EmbeddingProviderError


class HttpEmbedder(Embedder):
    """Embed texts with an OpenAI-compatible embeddings endpoint.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1`` (``/embeddings`` is added).
        model: the model name sent with every request.
        dimension: the vector length the model returns (checked on every response).
        api_key_env: name of the environment variable holding the bearer token, if any.
        timeout: seconds per attempt (connect and read).
        normalize: L2-normalise the returned vectors (default) or keep them as sent.
        backoff: first retry delay in seconds; doubled for the next one.
        max_retry_after: cap, in seconds, on a server's ``Retry-After``.
        sleep: how to wait between attempts (``time.sleep``; tests pass a recorder).
    """

    provider: ClassVar[str] = "http"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimension: int,
        api_key_env: str | None = None,
        timeout: float = 30.0,
        normalize: bool = True,
        backoff: float = 0.5,
        max_retry_after: float = 30.0,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(batch_size=batch_size)
        problem = http_settings_problem(
            base_url, model, api_key_env, timeout, backoff, max_retry_after
        )
        if problem is not None:
            raise EmbeddingConfigError(f"http embedder: {problem}")
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimension = check_dimension(dimension, "http embedder")
        self._api_key_env = api_key_env
        self._timeout = float(timeout)
        self._normalize = bool(normalize)
        self._backoff = float(backoff)
        self._max_retry_after = float(max_retry_after)
        self._sleep = sleep
        self._fingerprint = Fingerprint(
            provider=self.provider,
            model=model,
            dimension=self._dimension,
            normalization="l2" if self._normalize else "none",
            params=(("api", "openai-embeddings"),),
        )

    @property
    def fingerprint(self) -> Fingerprint:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return self._dimension

    def __repr__(self) -> str:
        return (
            f"HttpEmbedder(url={safe_url(self._url)!r}, model={self._model!r}, "
            f"dimension={self._dimension}, api_key_env={self._api_key_env!r})"
        )

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        payload = json.dumps({"model": self._model, "input": texts}).encode()
        secret = None
        if self._api_key_env is not None:
            secret = os.environ.get(self._api_key_env)
            if not secret:
                raise EmbeddingConfigError(
                    f"http embedder: environment variable {self._api_key_env} "
                    "(api_key_env) is not set or empty"
                )
        url = safe_url(self._url)
        try:
            status, body = post_json(
                self._url,
                payload,
                secret=secret,
                timeout=self._timeout,
                user_agent="engram-embedder",
                what="embedding",
                backoff=self._backoff,
                max_retry_after=self._max_retry_after,
                sleep=self._sleep,
            )
        except RetryableError as last:
            raise EmbeddingProviderError(
                f"embedding request to {url} failed after {ATTEMPTS} attempts: {last.reason}",
                last.status,
            ) from None
        except RejectedError as refused:
            raise EmbeddingProviderError(
                f"embedding request to {url} failed with {refused.reason}", refused.status
            ) from None
        return self._parse(body, len(texts), status, url, secret)

    def _parse(
        self, body: bytes, count: int, status: int, url: str, secret: str | None
    ) -> FloatArray:
        def fail(problem: str) -> NoReturn:
            raise EmbeddingProviderError(f"embedding response from {url}: {problem}", status)

        try:
            document = json.loads(body)
        except ValueError:
            fail(f"not JSON: {excerpt(body, secret)}")
        data = document.get("data") if isinstance(document, dict) else None
        if not isinstance(data, list):
            fail(f"no 'data' list in {excerpt(body, secret)}")
        if len(data) != count:
            fail(f"{len(data)} embeddings for {count} texts")
        rows: list[list[float] | None] = [None] * count
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                fail(f"data[{position}] is not an object")
            index = item.get("index", position)
            if type(index) is not int or not 0 <= index < count or rows[index] is not None:
                fail(f"data[{position}].index is {index!r}: not a unique index below {count}")
            vector = item.get("embedding")
            if not isinstance(vector, list) or len(vector) != self._dimension:
                length = len(vector) if isinstance(vector, list) else type(vector).__name__
                fail(f"data[{position}].embedding has length {length}, expected {self._dimension}")
            if not all(type(x) is float or type(x) is int for x in vector):
                fail(f"data[{position}].embedding holds something other than numbers")
            rows[index] = vector
        with np.errstate(over="ignore"):
            vectors = np.array(rows, dtype=np.float64).reshape(count, -1).astype(np.float32)
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            bad = int(np.nonzero(~finite)[0][0])
            fail(f"embedding {bad} holds a non-finite or out-of-range number")
        return l2_normalize(vectors) if self._normalize else vectors
