"""Derived state: the projection engine and one module per projection.

Projections are pure functions of the ledger (DESIGN.md, rules 2-4); they import ``ledger``
and nothing above it. :class:`ProjectionEngine` keeps their generations in one local store
and catches them up; each projection module owns its tables and the read functions over
them, so nothing above this layer writes SQL against a projection's tables:

- ``graph`` (:class:`NeuronGraph`: the agents' JSON export, single neurons and connections)
  and ``salience`` (:class:`SalienceIndex`: top, above, salience as of a time, memory facts),
  each with its read functions; ``timetravel``: what the store knew at a past time
  (:func:`timetravel.known_at`, :func:`timetravel.check_as_of`);
- ``lexical`` (:class:`LexicalIndex`, FTS5 and BM25) with ``lexical.search``, and its memory
  rows' duplicate groups and authors (``lexical.memories``);
- ``semantic`` (:class:`SemanticIndex`, FAISS through :class:`VectorSearcher`), its vectors
  made by an :class:`~engram.projections.embedding.Embedder` (``embedding``);
- ``concepts`` (:class:`Concepts`: the HDoD concept tree and its links);
- ``inbox`` (:class:`Inbox`: signals by recipient and their acknowledgements) and ``memo``
  (:class:`Memo`: each session's newest notes), with their read functions;
- ``activation``: spreading activation over a snapshot of the graph; ``vitality``: the
  graph's vital signs as of a time;
- ``scars`` (:class:`ScarsTable`): failures and victories with their lessons and recall
  counters, read through ``scars.get`` and ``scars.list_scars``;
- ``reflections`` (:class:`Reflections`): beliefs with their evidence, and each agent's
  counters since its last reflection (the reflection triggers);
- ``suggestions`` (:class:`SuggestionQueue`, the lessons queue under review) and ``rules``
  (:class:`RuleBook`, the applied rules every session loads); ``doctrine``
  (:class:`Doctrine`, tier 2: the applied notes and skills, linked to their scars).

To add a projection, read ``projections/scars.py``: a name, a version, the kinds it
consumes, its tables, ``create``, ``apply`` dispatching to one handler per kind, and its
read functions beside it.
"""

from engram.projections.activation import Activation, GraphSnapshot, SnapshotCache
from engram.projections.base import Projection, Tables
from engram.projections.concepts import Concept, Concepts
from engram.projections.doctrine import Doctrine
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
    ProjectionStoreDamagedError,
    ProjectionStoreError,
    QueryError,
    UnknownProjectionError,
    WaitTimeoutError,
)
from engram.projections.graph import NeuronGraph
from engram.projections.inbox import Inbox, Signal
from engram.projections.lexical import LexicalIndex
from engram.projections.memo import Memo, Note
from engram.projections.reflections import Reflections
from engram.projections.rules import RuleBook
from engram.projections.salience import Item, MemoryFacts, SalienceIndex
from engram.projections.scars import Scar, ScarsTable
from engram.projections.semantic import SemanticIndex, VectorHit, VectorSearcher
from engram.projections.semantic_file import IndexFileWarning
from engram.projections.store import ProjectionStore
from engram.projections.suggestions import SuggestionQueue
from engram.projections.vitality import BrainVitality

__all__ = [
    "Activation",
    "BrainVitality",
    "CatchUpError",
    "Concept",
    "Concepts",
    "Doctrine",
    "EmbeddingConfigError",
    "EmbeddingError",
    "EmbeddingInputError",
    "EmbeddingProviderError",
    "EmbeddingUnavailableError",
    "GraphSnapshot",
    "HandlerError",
    "Inbox",
    "IndexFileWarning",
    "Item",
    "LexicalIndex",
    "Memo",
    "MemoryFacts",
    "NeuronGraph",
    "Note",
    "Projection",
    "ProjectionConfigError",
    "ProjectionEngine",
    "ProjectionError",
    "ProjectionStatus",
    "ProjectionStore",
    "ProjectionStoreDamagedError",
    "ProjectionStoreError",
    "QueryError",
    "Reflections",
    "RuleBook",
    "SalienceIndex",
    "Scar",
    "ScarsTable",
    "SemanticIndex",
    "Signal",
    "SnapshotCache",
    "SuggestionQueue",
    "Tables",
    "UnknownProjectionError",
    "VectorHit",
    "VectorSearcher",
    "WaitTimeoutError",
]
