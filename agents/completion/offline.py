"""The offline provider: deterministic answers computed on this machine, no model.

An :class:`OfflineCompleter` knows how to answer a few schemas, each with a plain function
of the system text and the prompt (``answers``): the lessons loop registers its extractive
drafter for the suggestion schema, so the default drafter takes the same path as a model,
prompt scrubbing included. A schema it has no answer for is
:class:`~engram.agents.completion.port.CompletionUnavailableError`: the caller leaves the
work waiting, as it would for a model that is down.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import msgspec

from engram.agents.completion.port import CompletionFormatError, CompletionUnavailableError

T = TypeVar("T", bound=msgspec.Struct)

#: An offline answer: ``answer(system, prompt)`` returns an instance of the schema.
OfflineAnswer = Callable[[str, str], msgspec.Struct]


class OfflineCompleter:
    """Answer known schemas with deterministic local functions; fingerprint ``"offline"``."""

    def __init__(self, answers: Mapping[type[msgspec.Struct], OfflineAnswer] | None = None):
        self._answers: dict[type[msgspec.Struct], OfflineAnswer] = dict(answers or {})

    @property
    def fingerprint(self) -> str:
        """Name the provider: ``"offline"``."""
        return "offline"

    def __repr__(self) -> str:
        known = sorted(t.__name__ for t in self._answers)
        return f"OfflineCompleter(schemas={known})"

    def with_answers(self, answers: Mapping[type[msgspec.Struct], OfflineAnswer]) -> Any:
        """Return a completer that also answers ``answers``' schemas."""
        return OfflineCompleter({**self._answers, **answers})

    def complete(self, system: str, prompt: str, schema: type[T]) -> T:
        """Return the registered answer for ``schema``, checked against it."""
        if not isinstance(system, str) or not isinstance(prompt, str):
            raise TypeError("complete: system and prompt must be str")
        answer = self._answers.get(schema)
        if answer is None:
            raise CompletionUnavailableError(
                f"the offline completer has no answer for {schema.__name__}; "
                'route this use to a model ([complete.<use>] provider = "http")'
            )
        result = answer(system, prompt)
        if not isinstance(result, schema):
            raise CompletionFormatError(
                f"offline answer for {schema.__name__} is a {type(result).__name__}"
            )
        return result
