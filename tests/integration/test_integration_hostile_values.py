"""The framework adapters under hostile input: refused with a clear error, nothing written.

A LangGraph store value or an OpenAI Agents session item that is not JSON (NaN, infinity,
bytes, sets, keys that are not str, objects, text that is not valid unicode, nesting too
deep) is refused naming the field, where it used to be stored changed or to fail deep in the
ledger; so are keys, namespaces and session ids the ledger could not name a stream with, and a
str namespace. Then the store's search past its in-memory vector bound, LangGraph's async
embedder through ``abatch``, and the documented payload size limit.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.memory.session_settings")
pytest.importorskip("langgraph.store.base")

from langgraph.store.base import GetOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

import engram
from engram.integrations import langgraph as langgraph_adapter
from engram.integrations.langgraph import EngramStore
from engram.integrations.openai_agents import EngramSession
from engram.ledger import PayloadError
from engram.projections.errors import QueryError


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic embedding: letter counts, so stores rank alike."""
    return [[1.0 + text.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for text in texts]


async def aletters(texts: Sequence[str]) -> list[list[float]]:
    """The same embedding as LangGraph's documented async embedding function."""
    await asyncio.sleep(0)
    return letters(texts)


def deep(levels: int) -> dict[str, Any]:
    """Return a dict nested ``levels`` dicts below the top one."""
    value: dict[str, Any] = {}
    current = value
    for _ in range(levels):
        current["a"] = {}
        current = current["a"]
    return value


class Opaque:
    """An object no JSON encoder knows."""


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Any]:
    with engram.open_memory(str(tmp_path / "ledger.db"), config=os.devnull) as opened:
        yield opened


# -- store values and session items that are not JSON ---------------------------------------

NOT_JSON = [
    pytest.param({"score": float("nan")}, ValueError, r"value\['score'\] is nan", id="nan"),
    pytest.param({"hi": float("inf")}, ValueError, r"value\['hi'\] is inf", id="inf"),
    pytest.param({"lo": [1, float("-inf")]}, ValueError, r"value\['lo'\]\[1\] is -inf", id="-inf"),
    pytest.param({"raw": b"\x00\x01"}, TypeError, r"value\['raw'\] is bytes: ", id="bytes"),
    pytest.param({"tags": {"a"}}, TypeError, r"value\['tags'\] is set", id="set"),
    pytest.param({"tags": frozenset("a")}, TypeError, r"value\['tags'\] is frozenset", id="fset"),
    pytest.param({"m": {1: "one", "1": "uno"}}, TypeError, r"value\['m'\] has the key 1", id="key"),
    pytest.param({2: "two"}, TypeError, r"value has the key 2 \(int\)", id="int-key"),
    pytest.param({"o": [Opaque()]}, TypeError, r"value\['o'\]\[0\] is Opaque", id="object"),
    pytest.param({"t": "a\udc80"}, ValueError, r"value\['t'\] is not valid unicode", id="lone"),
    pytest.param({"\ud800": 1}, ValueError, "value has a key that is not valid", id="lone-key"),
    pytest.param(deep(1_000), ValueError, "nested more than 256 levels", id="deep-1000"),
    pytest.param(deep(10_000), ValueError, "nested more than 256 levels", id="deep-10000"),
]


@pytest.mark.parametrize(("value", "error", "message"), NOT_JSON)
def test_a_store_value_that_is_not_json_is_refused_and_nothing_is_written(
    memory: Any, value: dict[Any, Any], error: type[Exception], message: str
) -> None:
    store = EngramStore.from_memory(memory)
    head = memory.ledger.head()
    with pytest.raises(error, match=message) as raised:
        store.put(("users", "u1"), "prefs", value)
    assert "store values must be JSON" in str(raised.value) or "256" in str(raised.value)
    # One bad put refuses its whole batch: the good put beside it is not written either.
    with pytest.raises(error, match=message):
        store.batch([PutOp(("users",), "good", {"x": 1}), PutOp(("users",), "bad", value)])
    assert memory.ledger.head() == head
    assert store.get(("users",), "good") is None
    assert store.get(("users", "u1"), "prefs") is None


@pytest.mark.parametrize(("value", "error", "message"), NOT_JSON)
def test_a_session_item_that_is_not_json_is_refused_and_nothing_is_written(
    memory: Any, value: dict[Any, Any], error: type[Exception], message: str
) -> None:
    session = EngramSession("s", memory, remember="helper")
    head = memory.ledger.head()
    ok = {"role": "user", "content": "hello"}
    item_message = message.replace("value", r"items\[1\]", 1)
    with pytest.raises(error, match=item_message):
        asyncio.run(session.add_items([ok, {"role": "user", "content": "x", **value}]))
    assert memory.ledger.head() == head
    assert asyncio.run(session.get_items()) == []


def test_json_values_round_trip_and_a_tuple_reads_back_as_a_list(memory: Any) -> None:
    store = EngramStore.from_memory(memory)
    value = {"n": 1, "f": -0.5, "b": True, "z": None, "s": "é 記", "l": [{"a": []}], "t": (1, 2)}
    store.put(("users",), "k", value)
    item = store.get(("users",), "k")
    assert item is not None
    assert item.value == {**value, "t": [1, 2]}
    store.put(("users",), "deep", deep(255))  # 256 levels: the most allowed
    session = EngramSession("s", memory)
    asyncio.run(session.add_items([{"role": "user", "content": "x", "t": ("a",), "d": deep(254)}]))
    assert asyncio.run(session.get_items())[0]["t"] == ["a"]


# -- keys, namespaces and session ids -----------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "key", "error", "message"),
    [
        pytest.param(("users", "u1"), "k" * 500, ValueError, "^key 'kkk.* too long", id="key"),
        pytest.param(("u" * 600,), "k", ValueError, "and namespace .* too long", id="label"),
        pytest.param(("users",), "k\udc80", ValueError, "^key is not valid unicode", id="key-lone"),
        pytest.param(
            ("a\ud800",), "k", ValueError, "^namespace label 0 is not valid", id="ns-lone"
        ),
        pytest.param(
            "users", "k", QueryError, "a namespace is a tuple of str, got 'users'", id="str"
        ),
    ],
)
def test_a_bad_key_or_namespace_is_refused_naming_it(
    memory: Any, namespace: Any, key: str, error: type[Exception], message: str
) -> None:
    store = EngramStore.from_memory(memory)
    head = memory.ledger.head()
    with pytest.raises(error, match=message):
        store.put(namespace, key, {"x": 1})
    with pytest.raises(error, match=message):
        asyncio.run(store.aput(namespace, key, {"x": 1}))
    assert memory.ledger.head() == head
    assert store.list_namespaces() == []


STR_NAMESPACE_CALLS = {
    "get": lambda store: store.get("users", "k"),
    "put": lambda store: store.put("users", "k", {"x": 1}),
    "delete": lambda store: store.delete("users", "k"),
    "search": lambda store: store.search("users"),
    "list_namespaces": lambda store: store.list_namespaces(prefix="users"),
    "batch": lambda store: store.batch([GetOp("users", "k")]),
    "aput": lambda store: asyncio.run(store.aput("users", "k", {"x": 1})),
    "asearch": lambda store: asyncio.run(store.asearch("users", query="x")),
}


@pytest.mark.parametrize("method", STR_NAMESPACE_CALLS)
def test_a_str_namespace_is_refused_by_every_method_as_get_refuses_it(
    memory: Any, method: str
) -> None:
    store: Any = EngramStore.from_memory(memory)
    head = memory.ledger.head()
    with pytest.raises(QueryError, match="is a tuple of str, got 'users'"):
        STR_NAMESPACE_CALLS[method](store)
    assert memory.ledger.head() == head
    assert store.list_namespaces() == []


@pytest.mark.parametrize(
    "session_id",
    [" s ", "s ", " s", "a\x00b", "a\ud800", "s" * 505],
    ids=["spaces", "trailing", "leading", "nul", "lone", "505"],
)
def test_a_session_id_the_ledger_cannot_name_a_stream_with_is_refused(
    memory: Any, session_id: str
) -> None:
    head = memory.ledger.head()
    with pytest.raises(ValueError, match=r"^session_id must be at most 504 characters"):
        EngramSession(session_id, memory)
    with pytest.raises(ValueError, match=r"^remember must be at most 506 characters"):
        EngramSession("s", memory, remember=session_id.replace("s" * 505, "s" * 507))
    assert memory.ledger.head() == head
    EngramSession("s" * 504, memory)  # the longest the stream allows


def test_adding_no_items_from_any_iterable_is_a_no_op(memory: Any) -> None:
    session = EngramSession("s", memory)
    head = memory.ledger.head()
    asyncio.run(session.add_items(iter([])))
    asyncio.run(session.add_items([]))
    assert memory.ledger.head() == head
    asyncio.run(session.add_items(iter([{"role": "user", "content": "hi"}])))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "hi"}]


# -- search past the vector bound; the async embedder ---------------------------------------


def test_search_keeps_working_once_the_store_holds_more_texts_than_it_keeps_vectors_of(
    memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(langgraph_adapter, "_VECTORS_KEPT", 3)
    index: Any = {"dims": 26, "embed": letters, "fields": ["text"]}
    store = EngramStore.from_memory(memory, index=index)
    reference = InMemoryStore(index=index)
    texts = ["pizza", "pasta", "tennis", "chess", "paris"]
    for number, text in enumerate(texts):
        for each in (store, reference):
            each.put(("docs",), f"d{number}", {"text": text})

    def keys(found: list[Any]) -> list[tuple[str, float]]:
        scored = [(item.key, round(item.score, 9)) for item in found]
        return sorted(scored, key=lambda pair: (-pair[1], pair[0]))  # ties in any order

    for query in ("pasta", "chess", "pasta"):
        assert keys(store.search(("docs",), query=query)) == keys(
            reference.search(("docs",), query=query)
        )
        assert len(store._vectors) <= 3  # memory stays bounded
    for each in (store, reference):
        each.put(("docs",), "new", {"text": "rome"})
    for query in ("rome", "pizza", "rome", "tennis"):
        assert keys(store.search(("docs",), query=query)) == keys(
            reference.search(("docs",), query=query)
        )
        assert len(store._vectors) <= 3


def test_vectors_within_the_bound_are_embedded_once(memory: Any) -> None:
    embedded: list[str] = []

    def counting(texts: Sequence[str]) -> list[list[float]]:
        embedded.extend(texts)
        return letters(texts)

    store = EngramStore.from_memory(
        memory, index={"dims": 26, "embed": counting, "fields": ["text"]}
    )
    store.put(("docs",), "a", {"text": "pizza"})
    store.put(("docs",), "b", {"text": "chess"})
    store.search(("docs",), query="pizza")
    store.search(("docs",), query="chess")
    assert sorted(embedded) == ["chess", "chess", "pizza", "pizza"]  # two queries, two texts


def test_langgraph_s_async_embedder_serves_the_async_methods(memory: Any) -> None:
    index: Any = {"dims": 26, "embed": aletters, "fields": ["text"]}

    async def play(store: Any) -> list[Any]:
        await store.aput(("docs",), "d1", {"text": "python tutorial"})
        await store.aput(("docs",), "d2", {"text": "typescript guide"})
        await asyncio.gather(
            *(store.aput(("docs",), f"g{n}", {"text": f"note {n}"}, index=False) for n in range(4))
        )
        found = await store.asearch(("docs",), query="python", limit=2)
        # Within one batch, reads see the store before its writes.
        before = await store.abatch(
            [PutOp(("docs",), "d3", {"text": "go"}), GetOp(("docs",), "d3")]
        )
        after = await store.aget(("docs",), "d3")  # a write is visible to the next call
        return [[(i.key, round(i.score, 9)) for i in found], before, after.value]

    assert asyncio.run(play(EngramStore.from_memory(memory, index=index))) == asyncio.run(
        play(InMemoryStore(index=index))
    )


def test_abatch_does_its_ledger_work_off_the_event_loop_in_call_order(
    memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    index: Any = {"dims": 26, "embed": aletters, "fields": ["text"]}
    store = EngramStore.from_memory(memory, index=index)
    appended_on: list[str] = []
    append = memory.ledger.append

    def recording(*args: Any, **kwargs: Any) -> Any:
        appended_on.append(threading.current_thread().name)
        return append(*args, **kwargs)

    monkeypatch.setattr(memory.ledger, "append", recording)

    async def play() -> Any:
        await asyncio.gather(*(store.aput(("docs",), "k", {"text": f"v{n}"}) for n in range(8)))
        await store.abatch(
            [PutOp(("docs",), "q", {"text": "query"}), SearchOp(("docs",), query="v7")]
        )
        return await store.aget(("docs",), "k")

    item = asyncio.run(play())
    assert item.value == {"text": "v7"}  # the calls' writes landed in the order they came
    assert len(appended_on) == 9
    assert threading.main_thread().name not in appended_on


def test_close_ends_the_worker_thread_and_a_later_call_starts_another(memory: Any) -> None:
    def workers() -> int:
        return sum(t.name.startswith("engram-store") for t in threading.enumerate())

    before = workers()
    with EngramStore.from_memory(memory) as store:
        asyncio.run(store.aput(("m",), "a", {"text": "the parser build failed"}))
        assert workers() == before + 1
    assert workers() == before  # ended with the block
    asyncio.run(store.aput(("m",), "b", {"text": "the linter passed"}))
    assert asyncio.run(store.aget(("m",), "a")).value == {"text": "the parser build failed"}
    store.close()
    store.close()  # twice is harmless
    assert workers() == before


def test_engram_s_own_embedder_serves_the_async_methods_too(memory: Any) -> None:
    store = EngramStore.from_memory(memory)

    async def play() -> list[Any]:
        await store.aput(("m",), "a", {"text": "the parser build failed on tuesday"})
        await store.aput(("m",), "b", {"text": "quarterly revenue for the finance team"})
        return await store.asearch(("m",), query="why did the parser build fail")

    hits = asyncio.run(play())
    assert hits[0].key == "a"
    assert hits[0].score is not None


# -- the payload size limit, as documented -------------------------------------------------


def test_the_documented_size_limit_holds(memory: Any) -> None:
    """docs/integrations.md: a put or an add is refused once its JSON text passes ~524,000 bytes."""
    store = EngramStore.from_memory(memory)
    session = EngramSession("s", memory)
    store.put(("d",), "fits", {"text": "y" * 520_000})
    asyncio.run(session.add_items([{"type": "function_call_output", "output": "é" * 260_000}]))
    head = memory.ledger.head()
    with pytest.raises(PayloadError, match="over the limit of 1048576"):
        store.put(("d",), "big", {"text": "y" * 530_000})
    with pytest.raises(PayloadError, match="over the limit of 1048576"):
        asyncio.run(session.add_items([{"type": "function_call_output", "output": "é" * 265_000}]))
    assert memory.ledger.head() == head
