"""The embedder façade: one place for every model call, routed by use from a TOML file.

A routing file maps *uses* (``default``, ``recall``...) to a provider and its options::

    [embedding.default]
    provider = "hash"
    dimension = 384

    [embedding.recall]
    provider = "sentence-transformers"
    model = "all-MiniLM-L6-v2"

    [embedding.remote]
    provider = "http"
    base_url = "https://api.openai.com/v1"
    model = "text-embedding-3-small"
    dimension = 1536
    api_key_env = "OPENAI_API_KEY"

A use with no route takes ``default``; with no ``default`` route, the hash provider. A file
that is missing or invalid (bad TOML, unknown provider or key, wrong type or value) is
ignored as a whole, with an :class:`EmbeddingConfigWarning` naming the file and the problem:
memory keeps working on the deterministic hash embedder. Top-level tables other than
``[embedding]`` are left to their owners.

Providers: :class:`HashEmbedder` (default, numpy only), :class:`SentenceTransformerEmbedder`
(the ``embeddings`` extra), :class:`HttpEmbedder` (an OpenAI-compatible endpoint).
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated, Any

import msgspec

from engram.projections.embedding.cache import CachedEmbedder, EmbeddingCache
from engram.projections.embedding.hashing import DEFAULT_DIMENSION, HashEmbedder
from engram.projections.embedding.http_api import HttpEmbedder
from engram.projections.embedding.port import DEFAULT_BATCH_SIZE, MAX_DIMENSION, Embedder
from engram.projections.embedding.st import SentenceTransformerEmbedder
from engram.projections.errors import EmbeddingConfigError
from engram.projections.tomlfile import TomlFileError, read_toml, route_tables

_Dimension = Annotated[int, msgspec.Meta(ge=1, le=MAX_DIMENSION)]
_BatchSize = Annotated[int, msgspec.Meta(ge=1)]
_Seconds = Annotated[float, msgspec.Meta(ge=0)]
_Name = Annotated[str, msgspec.Meta(min_length=1)]


#: Top-level tables of the routing file that other façades own (``[complete.<use>]``); a
#: file holding only those leaves embeddings on their defaults without a warning.
OTHER_OWNERS = frozenset({"complete"})


class EmbeddingConfigWarning(UserWarning):
    """The embedding routing file was missing or invalid; the defaults are used instead."""


class _Route(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    batch_size: _BatchSize = DEFAULT_BATCH_SIZE


class HashRoute(_Route, tag_field="provider", tag="hash", frozen=True):
    """Route a use to :class:`HashEmbedder`."""

    dimension: _Dimension = DEFAULT_DIMENSION
    char_ngrams: tuple[int, int] = (3, 5)
    word_ngrams: int = 2


class SentenceTransformersRoute(
    _Route, tag_field="provider", tag="sentence-transformers", frozen=True
):
    """Route a use to :class:`SentenceTransformerEmbedder`."""

    model: _Name
    dimension: _Dimension | None = None
    device: str | None = None


class HttpRoute(_Route, tag_field="provider", tag="http", frozen=True):
    """Route a use to :class:`HttpEmbedder`."""

    base_url: _Name
    model: _Name
    dimension: _Dimension
    api_key_env: str | None = None
    timeout: Annotated[float, msgspec.Meta(gt=0)] = 30.0
    normalize: bool = True
    backoff: _Seconds = 0.5
    max_retry_after: _Seconds = 30.0


Route = HashRoute | SentenceTransformersRoute | HttpRoute


class Routing(msgspec.Struct, frozen=True):
    """Routes by use, and the file they came from (None for the built-in defaults)."""

    routes: dict[str, Route]
    source: str | None = None

    def route(self, use: str) -> Route:
        """Return the route for ``use``: its own, else ``default``, else the hash provider."""
        return self.routes.get(use) or self.routes.get("default") or HashRoute()


def load_routing(path: str | os.PathLike[str] | None = None) -> Routing:
    """Read the routing file at ``path``; None gives the defaults (everything on hash).

    Never raises for a bad file: it warns (:class:`EmbeddingConfigWarning`) and returns the
    defaults.
    """
    if path is None:
        return Routing({"default": HashRoute()})
    try:
        routing = _parse(path)
    except TomlFileError as problem:
        warnings.warn(
            f"embedding routing file {os.fspath(path)!r}: {problem}; "
            "using the default hash embedder for every use",
            EmbeddingConfigWarning,
            stacklevel=2,
        )
        return Routing({"default": HashRoute()})
    return routing


def embedder_for(
    use: str, routing: Routing | None = None, *, cache: EmbeddingCache | None = None
) -> Embedder:
    """Return the embedder ``routing`` assigns to ``use``, wrapped in ``cache`` if given.

    Raises:
        EmbeddingUnavailableError: the route needs an extra that is not installed.
    """
    if not isinstance(use, str) or not use:
        raise EmbeddingConfigError(f"embedder_for: use must be a non-empty str, got {use!r}")
    embedder = _build((routing or load_routing()).route(use))
    return CachedEmbedder(embedder, cache) if cache is not None else embedder


def _parse(path: str | os.PathLike[str]) -> Routing:
    document = read_toml(path)
    table = document.get("embedding")
    if table is None and OTHER_OWNERS & set(document):  # a file routing other uses only
        return Routing({"default": HashRoute()}, os.fspath(path))
    if not isinstance(table, dict) or not table:
        raise TomlFileError("has no [embedding.<use>] tables")
    routes: dict[str, Route] = route_tables(
        table, "embedding", Route, check=_check, check_errors=(EmbeddingConfigError,)
    )
    routes.setdefault("default", HashRoute())
    return Routing(routes, os.fspath(path))


def _check(route: Route) -> None:
    # Building checks every value; the sentence-transformers route is not built here, since
    # a missing extra is not a configuration error (embedder_for reports it).
    if not isinstance(route, SentenceTransformersRoute):
        _build(route)


def _build(route: Route) -> Embedder:
    options: dict[str, Any] = msgspec.structs.asdict(route)
    if isinstance(route, HashRoute):
        return HashEmbedder(**options)
    if isinstance(route, SentenceTransformersRoute):
        return SentenceTransformerEmbedder(**options)
    return HttpEmbedder(**options)
