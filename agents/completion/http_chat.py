"""The http provider: an OpenAI-compatible ``POST {base_url}/chat/completions``.

Request: the system text and the prompt as two messages, ``temperature`` 0 and
``response_format {"type": "json_object"}``; the schema's JSON Schema is appended to the
system text so any compatible server knows the shape wanted. Response: the first choice's
``message.content``, decoded as JSON and validated against the msgspec schema.

Failures map onto the port's errors: a 429, a 5xx, a timeout or a network error is retried
with exponential backoff, at most twice (three attempts), honouring a capped
``Retry-After``, then :class:`CompletionUnavailableError`; any other non-2xx status is
:class:`CompletionRejectedError` at once; an answer that is not JSON or does not fit the
schema is :class:`CompletionFormatError`. Redirects are not followed, so the Authorization
header never leaves the configured host (the one HTTP client's rules:
:mod:`engram.projections.embedding.http_client`).

The API key is read from the environment variable *named* in the route, at each request; it
is never stored on the completer, logged, or put in a message, repr or fingerprint.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TypeVar

import msgspec

from engram.agents.completion.errors import CompletionConfigError
from engram.agents.completion.port import (
    CompletionFormatError,
    CompletionRejectedError,
    CompletionUnavailableError,
)
from engram.projections.embedding.http_client import (
    ATTEMPTS,
    RejectedError,
    RetryableError,
    excerpt,
    http_settings_problem,
    post_json,
    safe_url,
)

T = TypeVar("T", bound=msgspec.Struct)


class HttpCompleter:
    """Ask an OpenAI-compatible chat completions endpoint for a JSON object.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1``.
        model: the model name sent with every request.
        api_key_env: name of the environment variable holding the bearer token, if any.
        timeout: seconds per attempt (connect and read).
        backoff: first retry delay in seconds; doubled for the next one.
        max_retry_after: cap, in seconds, on a server's ``Retry-After``.
        max_tokens: the answer's length cap sent to the server.
        sleep: how to wait between attempts (``time.sleep``; tests pass a recorder).

    Raises:
        CompletionConfigError: an option is malformed (named in the message).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        backoff: float = 0.5,
        max_retry_after: float = 30.0,
        max_tokens: int = 1024,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        problem = http_settings_problem(
            base_url, model, api_key_env, timeout, backoff, max_retry_after
        )
        if problem is not None:
            raise CompletionConfigError(problem)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise CompletionConfigError(f"max_tokens must be a positive int, got {max_tokens!r}")
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key_env = api_key_env
        self._timeout = float(timeout)
        self._backoff = float(backoff)
        self._max_retry_after = float(max_retry_after)
        self._max_tokens = max_tokens
        self._sleep = sleep

    @property
    def fingerprint(self) -> str:
        """Name the provider and model: ``"http:<model>"``."""
        return f"http:{self._model}"

    def __repr__(self) -> str:
        return (
            f"HttpCompleter(url={safe_url(self._url)!r}, model={self._model!r}, "
            f"api_key_env={self._api_key_env!r})"
        )

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        """Return the model's answer to ``prompt`` as an instance of ``schema``."""
        if not isinstance(system, str) or not isinstance(prompt, str):
            raise TypeError("complete: system and prompt must be str")
        shape = json.dumps(msgspec.json.schema(schema), sort_keys=True)
        body = {
            "model": self._model,
            "messages": [
                {
                    "role": "system",
                    "content": f"{system}\n\nAnswer with one JSON object of this schema: {shape}",
                },
                {"role": "user", "content": prompt},
            ],
            "temperature": 0,
            "max_tokens": self._max_tokens,
            "response_format": {"type": "json_object"},
        }
        secret = None
        if self._api_key_env is not None:
            secret = os.environ.get(self._api_key_env)
            if not secret:
                raise CompletionUnavailableError(
                    f"environment variable {self._api_key_env} (api_key_env) is not set or empty"
                )
        url = safe_url(self._url)
        try:
            _, raw = post_json(
                self._url,
                json.dumps(body).encode(),
                secret=secret,
                timeout=self._timeout,
                user_agent="engram-completer",
                what="completion",
                backoff=self._backoff,
                max_retry_after=self._max_retry_after,
                sleep=self._sleep,
            )
        except RetryableError as last:
            raise CompletionUnavailableError(
                f"completion request to {url} failed after {ATTEMPTS} attempts: {last.reason}"
            ) from None
        except RejectedError as refused:
            raise CompletionRejectedError(
                f"completion request to {url} refused with {refused.reason}"
            ) from None
        return _answer(raw, schema, url, secret)


def _answer(raw: bytes, schema: type[T], url: str, secret: str | None) -> T:
    try:
        document = json.loads(raw)
        content = document["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise CompletionFormatError(
            f"completion response from {url} is not a chat completion: {excerpt(raw, secret)}"
        ) from None
    if not isinstance(content, str):
        raise CompletionFormatError(f"completion response from {url}: content is not a string")
    text = content.strip()
    if text.startswith("```"):  # some servers fence JSON despite the response format
        text = text.strip("`").removeprefix("json").strip()
    try:
        return msgspec.json.decode(text.encode(), type=schema)
    except msgspec.ValidationError as error:
        raise CompletionFormatError(
            f"completion answer from {url} does not fit {schema.__name__}: {error}"
        ) from None
    except msgspec.DecodeError:
        raise CompletionFormatError(
            f"completion answer from {url} is not JSON: {excerpt(text.encode(), secret)}"
        ) from None
