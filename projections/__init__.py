"""Derived state: the projection engine and one module per projection.

Projections are pure functions of the ledger (DESIGN.md, rules 2-4); they import ``ledger``
and nothing above it. :class:`ProjectionEngine` keeps their generations in one local store
and catches them up; each projection module owns its tables and the read functions over
them, so nothing above this layer writes SQL against a projection's tables:

- ``graph`` (:class:`NeuronGraph`) and ``salience`` (:class:`SalienceIndex`), read through
  ``queries`` (top, salience as of a time, the graph's export, :func:`queries.known_at`);
- ``lexical`` (:class:`LexicalIndex`, FTS5 and BM25) with ``lexical.search``;
- ``semantic`` (:class:`SemanticIndex`, FAISS through :class:`VectorSearcher`), its vectors
  made by an :class:`~engram.projections.embedding.Embedder` (``embedding``);
- ``activation``: spreading activation over a snapshot of the graph;
- ``suggestions`` (:class:`SuggestionQueue`, the lessons queue under review) and ``rules``
  (:class:`RuleBook`, the applied rules every session loads).

To add a projection, read ``projections/lexical.py``: a name, a version, the kinds it
consumes, its tables, ``create`` and ``apply`` dispatching per kind, and its read functions.
"""

from engram.projections.activation import Activation, GraphSnapshot, SnapshotCache
from engram.projections.base import Projection, Tables
from engram.projections.engine import ProjectionEngine, ProjectionStatus
from engram.projections.errors import (
    CatchUpError,
    EmbeddingConfigError,
    EmbeddingError,
    EmbeddingInputError,
    EmbeddingProviderError,
    EmbeddingUnavailableError,
    HandlerError,
    ProjectionConfigError,
    ProjectionError,
    ProjectionStoreError,
    QueryError,
    UnknownProjectionError,
    WaitTimeoutError,
)
from engram.projections.graph import NeuronGraph
from engram.projections.lexical import LexicalIndex
from engram.projections.queries import Item, MemoryFacts, Vitality
from engram.projections.rules import RuleBook
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorHit, VectorSearcher
from engram.projections.semantic_file import IndexFileWarning
from engram.projections.store import ProjectionStore
from engram.projections.suggestions import SuggestionQueue

__all__ = [
    "Activation",
    "CatchUpError",
    "EmbeddingConfigError",
    "EmbeddingError",
    "EmbeddingInputError",
    "EmbeddingProviderError",
    "EmbeddingUnavailableError",
    "GraphSnapshot",
    "HandlerError",
    "IndexFileWarning",
    "Item",
    "LexicalIndex",
    "MemoryFacts",
    "NeuronGraph",
    "Projection",
    "ProjectionConfigError",
    "ProjectionEngine",
    "ProjectionError",
    "ProjectionStatus",
    "ProjectionStore",
    "ProjectionStoreError",
    "QueryError",
    "RuleBook",
    "SalienceIndex",
    "SemanticIndex",
    "SnapshotCache",
    "SuggestionQueue",
    "Tables",
    "UnknownProjectionError",
    "VectorHit",
    "VectorSearcher",
    "Vitality",
    "WaitTimeoutError",
]
