"""The façade's configuration error, beside the port's runtime errors."""

from __future__ import annotations

from engram.agents.completion.port import CompletionError


class CompletionConfigError(CompletionError):
    """A completer was built with a malformed option (the message names it)."""
