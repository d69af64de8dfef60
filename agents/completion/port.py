"""The completion port: how the agents layer asks a model for a structured answer.

A :class:`Completer` takes a system text and a user prompt and returns a JSON object
decoded and validated against a msgspec Struct type. Callers never see a provider's wire
format, keys or retries. A model's answer enters the system only as an event payload, so a
rebuild never calls a model (DESIGN.md, rule 2).

Contract:

- ``complete`` returns an instance of ``schema`` or raises a :class:`CompletionError`.
- :class:`CompletionUnavailableError`: the model could not be reached or kept failing
  (timeouts, 429 and 5xx after the retries); the caller leaves its work waiting and records
  the reason. Never a crash of the caller's loop.
- :class:`CompletionRejectedError`: the provider refused the request (4xx other than 429);
  retrying the same request will not help.
- :class:`CompletionFormatError`: the answer was not JSON or did not fit ``schema``.
- ``fingerprint`` names provider and model (``"offline"``, ``"http:gpt-4o-mini"``); it is
  stored beside what the answer produced (a suggestion's ``drafter``).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import msgspec

from engram.agents.errors import AgentError

T = TypeVar("T", bound=msgspec.Struct)


class CompletionError(AgentError):
    """A completion could not produce a valid answer."""


class CompletionUnavailableError(CompletionError):
    """The model could not be reached, or kept failing; try again later."""


class CompletionRejectedError(CompletionError):
    """The provider refused the request; the same request will not succeed."""


class CompletionFormatError(CompletionError):
    """The model's answer was not a JSON object of the expected schema."""


class Completer(Protocol):
    """Asks a model for a JSON object that fits a msgspec Struct type."""

    @property
    def fingerprint(self) -> str:
        """Name the provider and model, e.g. ``"http:gpt-4o-mini"``."""
        ...

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        """Return the model's answer to ``prompt`` as an instance of ``schema``."""
        ...
