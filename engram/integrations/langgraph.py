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
``abatch`` embeds through the index's async embedder (``aembed_documents``, ``aembed_query``)
and runs its ledger reads and writes on the store's own worker thread, one call after another
in the order they came, so an async graph's event loop is not held.

A value must be JSON that reads back as it was put: str, int, float, bool, None, lists (a tuple
is stored as a list) and dicts with str keys, at most 256 levels deep. NaN, infinity, bytes,
sets, other keys or objects, and text that is not valid unicode are refused with an error naming
the field (``value['raw']``) before anything is written; so are a str namespace, and a namespace
and key too long together for the item's stream (512 characters).

Values are personal (ADR 0039): sealed in the ledger under the key of the store's ``actor``,
whose data they are. ``Memory.forget`` of that actor takes every item whose latest value it
put: ``get`` answers None and ``search`` and ``list_namespaces`` leave it out, as if deleted.
Give each user's store its own actor (``EngramStore.from_memory(memory, actor="alice")``) to
forget users one by one.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, TypeVar

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
from engram.ledger.json_values import check_json, short, unicode
from engram.ledger.planning import MAX_NAME
from engram.projections import keyvalue
from engram.projections.embedding import Embedder
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.keyvalue import StoredItem

__all__ = ["EngramStore", "store_stream"]

_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_VECTORS_KEPT = 10_000  # texts whose vectors one store keeps in memory between searches
_T = TypeVar("_T")
#: What a batch's reads found: the results so far, and each search with its candidates.
_Read = tuple[list[Result], list[tuple[int, SearchOp, list[StoredItem]]]]


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
        self._vectors: dict[str, list[float]] = {}  # least recently used first
        self._lock = threading.Lock()
        # One thread for abatch's ledger work, started by the first call: calls run in the
        # order they came, and the projection store's reader connection (one per thread) is
        # opened once. close() ends it.
        self._worker: ThreadPoolExecutor | None = None

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
        events = self._events(ops)
        results, searches = self._read(ops)
        for index, op, candidates in searches:
            results[index] = self._search(op, candidates)
        if events:
            self._append(events)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` as :meth:`batch` does, embedding through the index's async embedder.

        The ledger and projection work (checks, reads, the append) runs on the store's worker
        thread, in the order the calls came; a put is still visible to the next call, and
        reads still see the store before the batch's writes.
        """
        ops = list(ops)
        if not any(self._ranks(op) for op in ops):  # nothing to embed: all of it in the worker
            return await self._in_worker(self.batch, ops)
        events, (results, searches) = await self._in_worker(self._begin, ops)
        for index, op, candidates in searches:
            results[index] = await self._asearch(op, candidates)
        if events:
            await self._in_worker(self._append, events)
        return results

    def close(self) -> None:
        """End the worker thread :meth:`abatch` runs on, once its calls are done (the
        engram itself stays open; a later :meth:`abatch` starts a new thread)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)

    def __enter__(self) -> EngramStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------

    async def _in_worker(self, call: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="engram-store")
            future = self._worker.submit(call, *args)
        return await asyncio.wrap_future(future)

    def _ranks(self, op: Op) -> bool:
        return isinstance(op, SearchOp) and bool(op.query) and self._embeddings is not None

    def _begin(self, ops: list[Op]) -> tuple[list[NewEvent], _Read]:
        return self._events(ops), self._read(ops)

    def _events(self, ops: list[Op]) -> list[NewEvent]:
        """Check every op, then return the events of its writes (the last to a key wins).

        Raises before anything is read or written: bad input changes nothing.
        """
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                _check_namespace(op.namespace, "namespace")
                _check_key(op.key)
            elif isinstance(op, SearchOp):
                _check_namespace(op.namespace_prefix, "namespace prefix")
            elif isinstance(op, ListNamespacesOp):
                for condition in op.match_conditions or ():
                    _check_namespace(condition.path, f"namespace {condition.match_type}")
            elif isinstance(op, PutOp):
                _check_namespace(op.namespace, "namespace")
                _check_key(op.key)
                writes[(tuple(op.namespace), op.key)] = op
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
        return [self._event(op) for op in writes.values()]

    def _read(self, ops: list[Op]) -> _Read:
        """Answer the reads; searches get their filtered candidates, ranked by the caller."""
        self.engine.wait_for(self.ledger.head())
        results: list[Result] = []
        searches: list[tuple[int, SearchOp, list[StoredItem]]] = []
        with self.engine.read() as conn:
            for index, op in enumerate(ops):
                if isinstance(op, GetOp):
                    found = keyvalue.get_item(conn, op.namespace, op.key)
                    results.append(None if found is None else _item(found))
                elif isinstance(op, SearchOp):
                    candidates = keyvalue.items_under(conn, op.namespace_prefix)
                    searches.append((index, op, _filtered(candidates, op)))
                    results.append(None)
                elif isinstance(op, ListNamespacesOp):
                    results.append(_list_namespaces(keyvalue.namespaces(conn), op))
                else:
                    results.append(None)
        return results, searches

    def _append(self, events: list[NewEvent]) -> None:
        positions = self.ledger.append(events)
        self.engine.wait_for(positions[-1])

    def _event(self, op: PutOp) -> NewEvent:
        namespace = list(op.namespace)
        stream = store_stream(namespace, op.key)
        if len(stream) > MAX_NAME:
            raise ValueError(
                f"key {short(op.key)} and namespace {short(tuple(namespace))} are too long"
                f" together: the item's stream `store:[namespace, key]` would be {len(stream)}"
                f" characters, over the limit of {MAX_NAME}"
            )
        payload: msgspec.Struct
        if op.value is None:
            payload = StoreDeleted(namespace=namespace, key=op.key)
        else:
            index = None if op.index is None else ([] if op.index is False else list(op.index))
            try:
                value = dict(op.value)
            except (TypeError, ValueError):
                raise TypeError(
                    f"value must be a mapping with str keys (a JSON object), got"
                    f" {type(op.value).__name__}; put to {short(tuple(namespace))},"
                    f" key {short(op.key)}"
                ) from None
            check_json(
                value,
                "value",
                "store values",
                f"put to {short(tuple(namespace))}, key {short(op.key)}",
            )
            # JSON text, so the value is sealed under the actor's key (ADR 0039): the actor
            # (the store's writer) is the subject, as ``StorePut`` has no ``agent``.
            payload = StorePut(namespace=namespace, key=op.key, value=json_text(value), index=index)
        return NewEvent.of(payload, stream=stream, actor=self.actor)

    def _search(self, op: SearchOp, candidates: list[StoredItem]) -> list[SearchItem]:
        if not self._ranks(op):
            return _page(op, candidates)
        texts = {item.position: self._texts(item) for item in candidates}
        query = self._embeddings.embed_query(op.query)
        cached, missing = self._cached(texts)
        fresh = self._embeddings.embed_documents(missing) if missing else []
        return _ranked(op, candidates, texts, query, self._remember(cached, missing, fresh))

    async def _asearch(self, op: SearchOp, candidates: list[StoredItem]) -> list[SearchItem]:
        if not self._ranks(op):
            return _page(op, candidates)
        texts = {item.position: self._texts(item) for item in candidates}
        query = await self._embeddings.aembed_query(op.query)
        cached, missing = self._cached(texts)
        fresh = await self._embeddings.aembed_documents(missing) if missing else []
        return _ranked(op, candidates, texts, query, self._remember(cached, missing, fresh))

    def _texts(self, item: StoredItem) -> list[str]:
        if item.indexed is None:
            paths = self._fields
        else:
            paths = [(path, path if path == "$" else tokenize_path(path)) for path in item.indexed]
        texts: list[str] = []
        for _, field in paths:
            texts += get_text_at_path(item.value, field)
        return texts

    def _cached(self, texts: dict[int, list[str]]) -> tuple[dict[str, list[float]], list[str]]:
        """Return the vectors kept for ``texts``, and the texts still to embed (sorted)."""
        wanted = sorted({text for group in texts.values() for text in group})
        with self._lock:
            cached = {text: self._vectors[text] for text in wanted if text in self._vectors}
        return cached, [text for text in wanted if text not in cached]

    def _remember(
        self, cached: dict[str, list[float]], missing: list[str], fresh: list[list[float]]
    ) -> dict[str, np.ndarray]:
        """Return this search's vectors, and keep them as the most recently used ones.

        The answer is built before anything is evicted, so eviction never drops a vector this
        search is about to use; the least recently used ones go once more than
        ``_VECTORS_KEPT`` are kept.
        """
        vectors = dict(cached)
        vectors.update(zip(missing, fresh, strict=True))
        with self._lock:
            for text in vectors:
                self._vectors.pop(text, None)  # re-inserted below: the newest
            self._vectors.update(vectors)
            excess = len(self._vectors) - _VECTORS_KEPT
            for text in list(islice(self._vectors, max(excess, 0))):
                del self._vectors[text]
        return {text: np.asarray(vector, dtype=np.float64) for text, vector in vectors.items()}


def _check_namespace(namespace: Any, what: str) -> None:
    """Refuse a namespace that is not a sequence of str, or holds text that is not unicode."""
    if isinstance(namespace, str) or not isinstance(namespace, tuple | list):
        raise QueryError(f"a {what} is a tuple of str, got {short(namespace)}")
    for position, label in enumerate(namespace):
        if not isinstance(label, str):
            raise QueryError(f"a {what} is a tuple of str, got {short(namespace)}")
        if not unicode(label):
            raise ValueError(
                f"{what} label {position} is not valid unicode (it holds a lone surrogate):"
                f" {short(label)}"
            )


def _check_key(key: Any) -> None:
    if isinstance(key, str) and not unicode(key):
        raise ValueError(f"key is not valid unicode (it holds a lone surrogate): {short(key)}")


def _filtered(candidates: list[StoredItem], op: SearchOp) -> list[StoredItem]:
    if not op.filter:
        return candidates
    return [
        item
        for item in candidates
        if all(_matches(item.value.get(k), v) for k, v in op.filter.items())
    ]


def _page(op: SearchOp, candidates: list[StoredItem]) -> list[SearchItem]:
    page = candidates[op.offset : op.offset + op.limit]
    return [_item(item, None, search=True) for item in page]


def _ranked(
    op: SearchOp,
    candidates: list[StoredItem],
    texts: dict[int, list[str]],
    query: Sequence[float],
    vectors: dict[str, np.ndarray],
) -> list[SearchItem]:
    """Rank ``candidates`` by their best field's cosine to ``query``; unindexed ones last."""
    wanted = np.asarray(query, dtype=np.float64)
    scored: list[tuple[float, int, StoredItem]] = []
    scoreless: list[StoredItem] = []
    for rank, item in enumerate(candidates):
        group = texts[item.position]
        if not group:
            scoreless.append(item)
            continue
        best = max(_cosine(wanted, vectors[text]) for text in group)
        scored.append((best, rank, item))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    ranked: list[tuple[float | None, StoredItem]] = [(s, item) for s, _, item in scored]
    ranked += [(None, item) for item in scoreless]
    window = ranked[op.offset : op.offset + op.limit]
    return [_item(item, score, search=True) for score, item in window]


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
