"""The http provider: an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, stdlib only.

Request ``{"model": ..., "input": [...]}``; response ``{"data": [{"index": i, "embedding":
[...]}, ...]}``. A 429, a 5xx or a network error is retried with exponential backoff, at most
twice (three attempts), honouring a capped ``Retry-After``; any other non-2xx status fails at
once. Redirects are not followed, so the Authorization header never leaves the configured host.

The API key is read from the environment variable *named* in the configuration, at each
request; it is never stored on the embedder, logged, or put in a message, repr or fingerprint.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import math
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, NoReturn, TypeVar

import numpy as np

from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    Fingerprint,
    FloatArray,
    check_dimension,
    l2_normalize,
)
from engram.projections.errors import (
    EmbeddingConfigError,
    EmbeddingError,
    EmbeddingProviderError,
)

logger = logging.getLogger(__name__)

ATTEMPTS = 3
T = TypeVar("T")
"""One try plus at most two retries."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_EXCERPT = 200


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises HTTPError with the 3xx status: a permanent failure


_OPENER = urllib.request.build_opener(_NoRedirect)


class RetryableError(EmbeddingError):
    """A request failure worth retrying (429, 5xx, a timeout or a dropped connection)."""

    def __init__(self, reason: str, status: int | None, retry_after: float | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after


def with_retries(
    post: Callable[[], T],
    *,
    what: str,
    url: str,
    backoff: float,
    max_retry_after: float,
    sleep: Callable[[float], None],
) -> T:
    """Return ``post()``, calling it up to :data:`ATTEMPTS` times while it raises RetryableError.

    Waits ``backoff`` doubling between attempts, or the server's Retry-After capped at
    ``max_retry_after``; each retry is logged. Raises the last :class:`RetryableError`.
    """
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return post()
        except RetryableError as failure:
            if attempt == ATTEMPTS:
                raise
            delay = backoff * 2 ** (attempt - 1)
            if failure.retry_after is not None:
                delay = min(failure.retry_after, max_retry_after)
            logger.warning(
                "%s request to %s failed (%s); retry %d of %d in %.2fs",
                what,
                url,
                failure.reason,
                attempt,
                ATTEMPTS - 1,
                delay,
            )
            sleep(delay)
    raise AssertionError("unreachable: the last attempt returns or raises")


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
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "engram-embedder",
        }
        secret = None
        if self._api_key_env is not None:
            secret = os.environ.get(self._api_key_env)
            if not secret:
                raise EmbeddingConfigError(
                    f"http embedder: environment variable {self._api_key_env} "
                    "(api_key_env) is not set or empty"
                )
            headers["Authorization"] = f"Bearer {secret}"
        url = safe_url(self._url)
        try:
            status, body = with_retries(
                lambda: self._post(payload, headers, url, secret),
                what="embedding",
                url=url,
                backoff=self._backoff,
                max_retry_after=self._max_retry_after,
                sleep=self._sleep,
            )
        except RetryableError as last:
            raise EmbeddingProviderError(
                f"embedding request to {url} failed after {ATTEMPTS} attempts: {last.reason}",
                last.status,
            ) from None
        return self._parse(body, len(texts), status, url, secret)

    def _post(
        self, payload: bytes, headers: dict[str, str], url: str, secret: str | None
    ) -> tuple[int, bytes]:
        request = urllib.request.Request(self._url, data=payload, headers=headers, method="POST")
        try:
            with _OPENER.open(request, timeout=self._timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as error:
            with error:
                status = error.code
                try:
                    body = error.read(4 * _EXCERPT)
                except (OSError, http.client.HTTPException):
                    body = b""
                retry_after = parse_retry_after(error.headers.get("Retry-After"))
            reason = f"HTTP {status}: {excerpt(body, secret)}"
            if status == 429 or 500 <= status <= 599:
                raise RetryableError(reason, status, retry_after) from None
            raise EmbeddingProviderError(
                f"embedding request to {url} failed with {reason}", status
            ) from None
        except (OSError, http.client.HTTPException) as error:
            # URLError, timeouts, refused and reset connections are OSErrors.
            reason = f"network error: {getattr(error, 'reason', None) or error!s}"
            raise RetryableError(reason, None, None) from None

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


def http_settings_problem(
    base_url: object,
    model: object,
    api_key_env: object,
    timeout: object,
    backoff: object,
    max_retry_after: object,
) -> str | None:
    """Say what is wrong with an OpenAI-compatible client's settings (None: nothing).

    The embedder and the chat completer check the same options with this, each raising its
    own error type with the message.
    """
    try:
        parts = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        _ = parts and parts.port  # an invalid port raises here, not at the first request
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return f"base_url must be an http(s) URL, got {safe_url(base_url)!r}"
    if not isinstance(model, str) or not model:
        return f"model must be a non-empty str, got {model!r}"
    if api_key_env is not None and (
        not isinstance(api_key_env, str) or not _ENV_NAME.match(api_key_env)
    ):
        return f"api_key_env must be an environment variable name, got {api_key_env!r}"
    for name, value, positive in (
        ("timeout", timeout, True),
        ("backoff", backoff, False),
        ("max_retry_after", max_retry_after, False),
    ):
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value < 0
            or (positive and value == 0)
        ):
            kind = "positive" if positive else "non-negative"
            return f"{name} must be a {kind} number of seconds, got {value!r}"
    return None


def parse_retry_after(value: str | None) -> float | None:
    """Return a ``Retry-After`` header's delay in seconds (number or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def excerpt(body: bytes, secret: str | None) -> str:
    """Return the start of ``body`` for a message, with ``secret`` (if any) redacted."""
    text = body.decode("utf-8", "replace")
    if secret:
        text = text.replace(secret, "[redacted]")
    text = " ".join(text.split())
    return repr(text[:_EXCERPT] + ("…" if len(text) > _EXCERPT else ""))


def safe_url(url: Any) -> str:
    """Return ``url`` without user:password, for messages and logs."""
    if not isinstance(url, str):
        return repr(url)
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
