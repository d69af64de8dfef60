"""The lexical index: SQLite FTS5 with BM25 over every text-bearing event.

One row per ``memory.observed``, ``scar.recorded`` and ``memory.reflected`` event, and per
concept (its newest ``concept.upserted``, ADR 0037), keyed by its ledger position, with the
author, visibility, item type and time kept beside the text so every search filters in the
statement that ranks. :mod:`.index` is the write side (what is indexed, the projection);
:mod:`.read` the read side (searches, query terms and the rows' other reads), over
:mod:`.vocabulary` (row counts, stems and frequencies read from FTS5's tables). This face is
what the other layers use: ``from engram.projections import lexical; lexical.search(...)``.

To add a projection, read ``projections/scars.py``, the plain template; this package batches
its inserts for speed.
"""

from engram.projections.lexical.index import (
    ARCHIVES,
    CONCEPT_TYPES,
    MAX_TEXT,
    MEMORY_TYPES,
    REFLECTION_TYPES,
    SCAR_TYPES,
    TEXT_KINDS,
    TOKENIZER,
    TOKENIZERS,
    LexicalIndex,
    concept_text,
    item_text,
    lowered_words,
    memory_types,
    tokens,
)
from engram.projections.lexical.memories import written_inside
from engram.projections.lexical.read import (
    BM25_B,
    BM25_K1,
    MAX_POSTINGS,
    MIN_TERMS,
    POOL,
    PRUNE_SHARE,
    PRUNING,
    Hit,
    Terms,
    archived_after,
    concept_ids,
    idf,
    latest_archival,
    match_expression,
    neighbours,
    own_texts,
    row_count,
    search,
    seen_by,
    servable,
    share,
    share_of,
    share_words,
    terms,
    texts,
    visible_to,
)

__all__ = [
    "ARCHIVES",
    "BM25_B",
    "BM25_K1",
    "CONCEPT_TYPES",
    "MAX_POSTINGS",
    "MAX_TEXT",
    "MEMORY_TYPES",
    "MIN_TERMS",
    "POOL",
    "PRUNE_SHARE",
    "PRUNING",
    "REFLECTION_TYPES",
    "SCAR_TYPES",
    "TEXT_KINDS",
    "TOKENIZER",
    "TOKENIZERS",
    "Hit",
    "LexicalIndex",
    "Terms",
    "archived_after",
    "concept_ids",
    "concept_text",
    "idf",
    "item_text",
    "latest_archival",
    "lowered_words",
    "match_expression",
    "memory_types",
    "neighbours",
    "own_texts",
    "row_count",
    "search",
    "seen_by",
    "servable",
    "share",
    "share_of",
    "share_words",
    "terms",
    "texts",
    "tokens",
    "visible_to",
    "written_inside",
]
