"""The model façade's ``complete``: structured answers from a model, for the agents layer."""

from engram.agents.completion.port import (
    Completer,
    CompletionError,
    CompletionFormatError,
    CompletionRejectedError,
    CompletionUnavailableError,
)

__all__ = [
    "Completer",
    "CompletionError",
    "CompletionFormatError",
    "CompletionRejectedError",
    "CompletionUnavailableError",
]
