"""The one HTTP client engram uses to reach a model's API: embeddings and chat completions.

Built on httpx. One place holds what both need: a timeout per attempt; redirects never
followed, so the Authorization header never leaves the configured host; a 429, a 5xx, a
timeout or a network error retried with exponential backoff, at most twice (three
attempts), honouring a capped ``Retry-After``; any other non-2xx status failing at once; the
bearer token read by the caller from the environment variable *named* in its settings, at
each request, and redacted from every message this module makes (a response's excerpt, a
network error, a log line). Callers translate :class:`RetryableError` (retries spent) and
:class:`RejectedError` (a permanent refusal) into their own layer's errors.
"""

from __future__ import annotations

import email.utils
import logging
import math
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from engram.projections.errors import EmbeddingError

logger = logging.getLogger(__name__)

ATTEMPTS = 3
"""One try plus at most two retries."""

T = TypeVar("T")

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_EXCERPT = 200
if TYPE_CHECKING:
    import httpx

_client: httpx.Client | None = None
_client_lock = threading.Lock()


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


class RejectedError(EmbeddingError):
    """The server refused the request with a status not worth retrying (a 3xx or a 4xx)."""

    def __init__(self, reason: str, status: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def post_json(
    url: str,
    body: bytes,
    *,
    secret: str | None,
    timeout: float,
    user_agent: str,
    what: str,
    backoff: float,
    max_retry_after: float,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, bytes]:
    """POST ``body`` (JSON) to ``url`` and return the status and body of a 2xx answer.

    ``secret``, when given, is sent as a bearer token and redacted from every message.

    Raises:
        RetryableError: the retries are spent (the last failure's reason and status).
        RejectedError: a status not worth retrying.
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": user_agent,
    }
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    shown = safe_url(url)
    return with_retries(
        lambda: _post_once(url, body, headers, timeout, secret),
        what=what,
        url=shown,
        backoff=backoff,
        max_retry_after=max_retry_after,
        sleep=sleep,
    )


def _post_once(
    url: str, body: bytes, headers: dict[str, str], timeout: float, secret: str | None
) -> tuple[int, bytes]:
    import httpx  # imported on the first request: a process that never calls out never loads it

    try:
        response = _shared_client().post(url, content=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as error:  # timeouts, refused and reset connections, bad answers
        reason = redact(f"network error: {error!s} ({type(error).__name__})", secret)
        raise RetryableError(reason, None, None) from None
    status = response.status_code
    if 200 <= status <= 299:
        return status, response.content
    reason = f"HTTP {status}: {excerpt(response.content[: 4 * _EXCERPT], secret)}"
    if status == 429 or 500 <= status <= 599:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        raise RetryableError(reason, status, retry_after)
    raise RejectedError(reason, status)


def _shared_client() -> httpx.Client:
    # One pooled client per process; httpx clients are safe to share between threads.
    global _client
    with _client_lock:
        if _client is None:
            import httpx

            _client = httpx.Client(follow_redirects=False)
        return _client


def redact(text: str, secret: str | None) -> str:
    """Return ``text`` with ``secret`` (if any) replaced by ``[redacted]``."""
    return text.replace(secret, "[redacted]") if secret else text


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
    text = " ".join(redact(body.decode("utf-8", "replace"), secret).split())
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
