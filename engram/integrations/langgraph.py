"""engram as a LangGraph long-term memory store: ``langgraph.store.base.BaseStore`` (ADR 0062).

Needs the ``langgraph`` extra (``pip install 'engram[langgraph]'``, which installs
``langgraph-checkpoint``). Every put is a ``store.put`` event and every delete a
``store.deleted`` tombstone on the item's own stream (``store:[namespace, key]``); the
``keyvalue`` projection serves the latest value. A put is visible to the next call
(read-your-writes); within one batch, reads see the store as it was before the batch's writes
and the last write to a key wins, as in LangGraph's ``InMemoryStore``.

Search filters by namespace prefix and ``filter`` (exact values, nested objects, and the
operators ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``), then, given a ``query``,
ranks by the cosine similarity of the query's vector to the item's indexed fields (the best
field wins): through the store's ``index`` config when given (LangGraph's ``{"embed": ...,
"fields": [...]}``), else through engram's routed embedder (MiniLM where it can run, with its
embedding cache). Without a query, the most recently updated items come first. TTL is not
supported (``supports_ttl`` is False): refreshing on every read would append an event per read.

Values are personal (ADR 0039): sealed in the ledger under the key of the store's ``actor``,
whose data they are. ``Memory.forget`` of that actor takes every item whose latest value it
put: ``get`` answers None and ``search`` and ``list_namespaces`` leave it out, as if deleted.
Give each user's store its own actor (``EngramStore.from_memory(memory, actor="alice")``) to
forget users one by one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
import numpy as np

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
    from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "engram.integrations.langgraph needs the langgraph extra: pip install 'engram[langgraph]'"
    ) from error

from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import StoreDeleted, StorePut
from engram.ledger.catalog_adapters import json_text
from engram.projections import keyvalue
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.keyvalue import StoredItem

__all__ = ["EngramStore", "store_stream"]

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_VECTORS_KEPT = 10_000  # texts whose vectors one store keeps in memory between searches


def store_stream(namespace: Sequence[str], key: str) -> str:
    """Return the stream of the item at ``namespace`` and ``key``."""
    return "store:" + msgspec.json.encode([list(namespace), key]).decode()


class EngramStore(BaseStore):
    """A LangGraph store whose writes are ledger events and whose reads are a projection.

    Args:
        ledger: the ledger to append to.
        engine: the projection engine holding the ``keyvalue`` projection.
        embedder: engram's embedder for queries when no ``index`` is given (None: search
            without a query ranking unless ``index`` is given).
        index: LangGraph's index config (``embed``, ``fields``); it takes precedence.
        actor: who the events are appended as, and whose the values are: the subject they
            are sealed under, which ``Memory.forget`` takes.

    Use :meth:`from_memory` with an opened engram (``engram.open_memory``).
    """

    supports_ttl = False

    def __init__(
        self,
        ledger: Ledger,
        engine: ProjectionEngine,
        *,
        embedder: Embedder | None = None,
        index: IndexConfig | None = None,
        actor: str = "langgraph",
    ) -> None:
        self.ledger = ledger
        self.engine = engine
        self.actor = actor
        self.index_config = index
        fields = (index or {}).get("fields") or ["$"]
        self._fields = [(path, path if path == "$" else tokenize_path(path)) for path in fields]
        self._embeddings: Any = None
        if index is not None and index.get("embed") is not None:
            self._embeddings = ensure_embeddings(index["embed"])
        elif embedder is not None:
            # Transient (ADR 0114): a query, and the field texts of values sealed under their
            # actor's key, are kept by no embedding cache on disk, where forget could not
            # find them; this store keeps the values' vectors in memory only.
            self._embeddings = ensure_embeddings(
                lambda texts: embedder.embed_transient(list(texts)).astype(np.float64).tolist()
            )
        self._vectors: dict[str, list[float]] = {}

    @classmethod
    def from_memory(
        cls, memory: Any, *, index: IndexConfig | None = None, actor: str = "langgraph"
    ) -> EngramStore:
        """Return a store over an opened engram (its ledger, projections and embedder)."""
        return cls(memory.ledger, memory.engine, embedder=memory.embedder, index=index, actor=actor)

    # -- BaseStore -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops``: reads against the store before the batch, then every write at once."""
        ops = list(ops)
        self.engine.wait_for(self.ledger.head())
        results: list[Result] = []
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        with self.engine.read() as conn:
            for op in ops:
                if isinstance(op, GetOp):
                    found = keyvalue.get_item(conn, op.namespace, op.key)
                    results.append(None if found is None else _item(found))
                elif isinstance(op, SearchOp):
                    results.append(
                        self._search(keyvalue.items_under(conn, op.namespace_prefix), op)
                    )
                elif isinstance(op, ListNamespacesOp):
                    results.append(_list_namespaces(keyvalue.namespaces(conn), op))
                elif isinstance(op, PutOp):
                    writes[(tuple(op.namespace), op.key)] = op
                    results.append(None)
                else:
                    raise ValueError(f"Unknown operation type: {type(op)}")
        if writes:
            positions = self.ledger.append([self._event(op) for op in writes.values()])
            self.engine.wait_for(positions[-1])
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` as :meth:`batch` does (the embedded SQLite store answers in-thread)."""
        return self.batch(ops)

    # -- helpers ---------------------------------------------------------------------------

    def _event(self, op: PutOp) -> NewEvent:
        namespace = list(op.namespace)
        payload: msgspec.Struct
        if op.value is None:
            payload = StoreDeleted(namespace=namespace, key=op.key)
        else:
            index = None if op.index is None else ([] if op.index is False else list(op.index))
            # JSON text, so the value is sealed under the actor's key (ADR 0039): the actor
            # (the store's writer) is the subject, as ``StorePut`` has no ``agent``.
            value: dict[str, Any] | str
            try:
                value = json_text(dict(op.value))
            except (TypeError, ValueError, msgspec.EncodeError):  # the ledger refuses it, as before
                value = dict(op.value)
            payload = StorePut(namespace=namespace, key=op.key, value=value, index=index)
        return NewEvent.of(payload, stream=store_stream(namespace, op.key), actor=self.actor)

    def _search(self, candidates: list[StoredItem], op: SearchOp) -> list[SearchItem]:
        if op.filter:
            candidates = [
                item
                for item in candidates
                if all(_matches(item.value.get(k), v) for k, v in op.filter.items())
            ]
        if not (op.query and self._embeddings is not None):
            page = candidates[op.offset : op.offset + op.limit]
            return [_item(item, None, search=True) for item in page]
        texts = {item.position: self._texts(item) for item in candidates}
        query = np.asarray(self._embeddings.embed_query(op.query), dtype=np.float64)
        vectors = self._embed(sorted({t for group in texts.values() for t in group}))
        scored: list[tuple[float, int, StoredItem]] = []
        scoreless: list[StoredItem] = []
        for rank, item in enumerate(candidates):
            group = texts[item.position]
            if not group:
                scoreless.append(item)
                continue
            best = max(_cosine(query, vectors[text]) for text in group)
            scored.append((best, rank, item))
        scored.sort(key=lambda entry: (-entry[0], entry[1]))
        ranked: list[tuple[float | None, StoredItem]] = [(s, item) for s, _, item in scored]
        ranked += [(None, item) for item in scoreless]
        window = ranked[op.offset : op.offset + op.limit]
        return [_item(item, score, search=True) for score, item in window]

    def _texts(self, item: StoredItem) -> list[str]:
        if item.indexed is None:
            paths = self._fields
        else:
            paths = [(path, path if path == "$" else tokenize_path(path)) for path in item.indexed]
        texts: list[str] = []
        for _, field in paths:
            texts += get_text_at_path(item.value, field)
        return texts

    def _embed(self, texts: list[str]) -> dict[str, np.ndarray]:
        missing = [text for text in texts if text not in self._vectors]
        if missing:
            if len(self._vectors) + len(missing) > _VECTORS_KEPT:
                self._vectors.clear()
            fresh = self._embeddings.embed_documents(missing)
            self._vectors.update(zip(missing, fresh, strict=True))
        return {text: np.asarray(self._vectors[text], dtype=np.float64) for text in texts}


def _item(stored: StoredItem, score: float | None = None, *, search: bool = False) -> Any:
    if score is not None or search:
        return SearchItem(
            stored.namespace, stored.key, stored.value, stored.created_at, stored.updated_at, score
        )
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


def _cosine(query: np.ndarray, vector: np.ndarray) -> float:
    norms = float(np.linalg.norm(query) * np.linalg.norm(vector))
    return float(query @ vector / norms) if norms else 0.0


def _matches(value: Any, wanted: Any) -> bool:
    """Compare a stored value with a filter's, as JSONB containment with operators does."""
    if isinstance(wanted, dict):
        if any(key.startswith("$") for key in wanted):
            return all(_operator(value, op, operand) for op, operand in wanted.items())
        return isinstance(value, dict) and all(
            _matches(value.get(key), sub) for key, sub in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator not in _OPERATORS:
        raise ValueError(f"Unsupported operator: {operator} (use one of {', '.join(_OPERATORS)})")
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric value compares as SQL's NULL: no match
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right}.get(
        operator, left <= right
    )


def _list_namespaces(found: list[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    if op.match_conditions:
        found = [ns for ns in found if all(_match(c, ns) for c in op.match_conditions)]
    if op.max_depth is not None:
        found = sorted({ns[: op.max_depth] for ns in found})
    return found[op.offset : op.offset + op.limit]


def _match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(label == want or want == "*" for label, want in pairs)
