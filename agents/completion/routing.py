"""The completion façade's routing: each use to a provider, from the embedders' routing file.

The same TOML file that routes embedders (``[embedding.<use>]``) routes completions in its
``[complete.<use>]`` tables. Uses: ``default``, ``learn`` (drafting suggestions from scars),
``supersede`` (judging whether a new memory replaces earlier ones),
``reflect`` (reflections), ``importance`` (scoring); a use with no route takes ``default``,
and with no ``default`` route, the offline provider::

    [complete.default]
    provider = "offline"

    [complete.learn]
    provider = "http"
    base_url = "https://api.openai.com/v1"
    model = "gpt-4o-mini"
    api_key_env = "OPENAI_API_KEY"      # the variable's name; the key is never in the file
    timeout = 60

A file that is missing or unreadable, is not TOML, or holds an invalid ``[complete]`` table
(an unknown provider or key, a wrong type or value) is ignored as a whole for completions,
with a :class:`CompletionConfigWarning` naming the file and the problem: every use then runs
offline. A file with no ``[complete]`` table routes everything offline without a warning
(it routes embedders only). Other top-level tables are left to their owners.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from engram.agents.completion.errors import CompletionConfigError
from engram.agents.completion.http_chat import HttpCompleter
from engram.agents.completion.offline import OfflineAnswer, OfflineCompleter
from engram.agents.completion.port import Completer
from engram.projections.tomlfile import TomlFileError, read_toml, route_tables

#: The uses engram routes; a route for another use name is accepted and served to callers
#: that ask for it.
USES = ("default", "learn", "reflect", "importance", "supersede")

_Seconds = Annotated[float, msgspec.Meta(ge=0)]
_Name = Annotated[str, msgspec.Meta(min_length=1)]


class CompletionConfigWarning(UserWarning):
    """The completion routing was missing or invalid; every use runs offline instead."""


class OfflineRoute(
    msgspec.Struct, tag_field="provider", tag="offline", frozen=True, forbid_unknown_fields=True
):
    """Route a use to the deterministic offline provider."""


class HttpRoute(
    msgspec.Struct,
    tag_field="provider",
    tag="http",
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
):
    """Route a use to an OpenAI-compatible chat completions endpoint."""

    base_url: _Name
    model: _Name
    api_key_env: str | None = None
    timeout: Annotated[float, msgspec.Meta(gt=0)] = 60.0
    backoff: _Seconds = 0.5
    max_retry_after: _Seconds = 30.0
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 1024


Route = OfflineRoute | HttpRoute


class CompletionRouting(msgspec.Struct, frozen=True):
    """Routes by use, and the file they came from (None for the built-in defaults)."""

    routes: dict[str, Route]
    source: str | None = None

    def route(self, use: str) -> Route:
        """Return the route for ``use``: its own, else ``default``, else offline."""
        return self.routes.get(use) or self.routes.get("default") or OfflineRoute()


def load_completion_routing(path: str | os.PathLike[str] | None = None) -> CompletionRouting:
    """Read the ``[complete.<use>]`` tables of the routing file at ``path``.

    None gives the defaults (every use offline). Never raises for a bad file: it warns
    (:class:`CompletionConfigWarning`) and returns the defaults.
    """
    if path is None:
        return CompletionRouting({"default": OfflineRoute()})
    try:
        return _parse(path)
    except TomlFileError as problem:
        warnings.warn(
            f"completion routing file {os.fspath(path)!r}: {problem}; "
            "every completion use runs offline",
            CompletionConfigWarning,
            stacklevel=2,
        )
        return CompletionRouting({"default": OfflineRoute()})


def completer_for(
    use: str,
    routing: CompletionRouting | None = None,
    *,
    offline: Mapping[type[msgspec.Struct], OfflineAnswer] | None = None,
) -> Completer:
    """Return the completer ``routing`` assigns to ``use``.

    ``offline`` gives the offline provider its deterministic answers by schema (a caller
    that has an extractive fallback passes it, whatever the route, since a model route may
    still be replaced by offline when the file is invalid).

    Raises:
        CompletionConfigError: ``use`` is not a non-empty str.
    """
    if not isinstance(use, str) or not use:
        raise CompletionConfigError(f"completer_for: use must be a non-empty str, got {use!r}")
    route = (routing or load_completion_routing()).route(use)
    if isinstance(route, OfflineRoute):
        return OfflineCompleter(offline)
    return _build(route)


def _parse(path: str | os.PathLike[str]) -> CompletionRouting:
    table = read_toml(path).get("complete")
    if table is None:
        return CompletionRouting({"default": OfflineRoute()}, os.fspath(path))
    if not isinstance(table, dict):
        raise TomlFileError(f"complete must be a table of [complete.<use>] tables, got {table!r}")
    routes: dict[str, Route] = route_tables(
        table,
        "complete",
        Route,
        check=_check,
        check_errors=(CompletionConfigError,),
        needs=("provider", 'provider = "offline" or "http"'),
    )
    routes.setdefault("default", OfflineRoute())
    return CompletionRouting(routes, os.fspath(path))


def _check(route: Route) -> None:
    if isinstance(route, HttpRoute):
        _build(route)  # every value checked now, not at the first request


def _build(route: HttpRoute) -> HttpCompleter:
    options: dict[str, Any] = msgspec.structs.asdict(route)
    return HttpCompleter(**options)
