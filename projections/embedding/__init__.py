"""Embedders: one port, one module per provider, and the façade that routes uses to them.

``port`` defines :class:`Embedder`, its :class:`Fingerprint` and :class:`TokenWindow`;
``hashing``, ``onnx_provider`` (with ``onnx_graph``), ``st`` and ``http_api`` are the
providers; ``cache`` keys vectors by content; ``routing`` reads the routing file and builds
the embedder for a use (ADR 0013, ADR 0061). Import from here.
"""

from engram.projections.embedding.cache import (
    CachedEmbedder,
    EmbeddingCache,
    EmbeddingCacheWarning,
    cache_key,
)
from engram.projections.embedding.hashing import DEFAULT_DIMENSION, HashEmbedder
from engram.projections.embedding.http_api import HttpEmbedder
from engram.projections.embedding.onnx_provider import OnnxEmbedder
from engram.projections.embedding.port import (
    DEFAULT_BATCH_SIZE,
    MAX_CHARS,
    MAX_DIMENSION,
    Embedder,
    Fingerprint,
    FloatArray,
    TokenWindow,
)
from engram.projections.embedding.routing import (
    EmbeddingConfigWarning,
    HashRoute,
    HttpRoute,
    OnnxRoute,
    Route,
    Routing,
    SentenceTransformersRoute,
    default_route,
    embedder_for,
    load_routing,
)
from engram.projections.embedding.st import SentenceTransformerEmbedder

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_DIMENSION",
    "MAX_CHARS",
    "MAX_DIMENSION",
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingCacheWarning",
    "EmbeddingConfigWarning",
    "Fingerprint",
    "FloatArray",
    "HashEmbedder",
    "HashRoute",
    "HttpEmbedder",
    "HttpRoute",
    "OnnxEmbedder",
    "OnnxRoute",
    "Route",
    "Routing",
    "SentenceTransformerEmbedder",
    "SentenceTransformersRoute",
    "TokenWindow",
    "cache_key",
    "default_route",
    "embedder_for",
    "load_routing",
]
