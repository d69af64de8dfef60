"""The model façade's ``complete``: structured answers from a model, for the agents layer.

:func:`completer_for` returns the :class:`Completer` the routing file's ``[complete.<use>]``
tables assign to a use (:func:`load_completion_routing`): the deterministic offline provider
by default, or an OpenAI-compatible chat completions endpoint (:class:`HttpCompleter`).
"""

from engram.agents.completion.errors import CompletionConfigError
from engram.agents.completion.http_chat import HttpCompleter
from engram.agents.completion.offline import OfflineAnswer, OfflineCompleter
from engram.agents.completion.port import (
    Completer,
    CompletionError,
    CompletionFormatError,
    CompletionRejectedError,
    CompletionUnavailableError,
)
from engram.agents.completion.routing import (
    USES,
    CompletionConfigWarning,
    CompletionRouting,
    HttpRoute,
    OfflineRoute,
    completer_for,
    load_completion_routing,
)

__all__ = [
    "USES",
    "Completer",
    "CompletionConfigError",
    "CompletionConfigWarning",
    "CompletionError",
    "CompletionFormatError",
    "CompletionRejectedError",
    "CompletionRouting",
    "CompletionUnavailableError",
    "HttpCompleter",
    "HttpRoute",
    "OfflineAnswer",
    "OfflineCompleter",
    "OfflineRoute",
    "completer_for",
    "load_completion_routing",
]
