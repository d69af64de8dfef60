"""Forgetting reaches the framework adapters (ADR 0039, 0062, 0063).

An OpenAI Agents session's items and a LangGraph store's values are sealed under their
subject (the session's ``remember`` agent, else the actor; the store's actor). Once the
subject is forgotten, no file under the test's folder holds their text (ledger, projection
store, write-ahead logs), the adapters no longer return them, a rebuild brings nothing back,
and another agent's items are untouched. Events written before they were sealed (the object
or list itself, not its JSON text) still read.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents.memory.session_settings")
pytest.importorskip("langgraph.store.base")

import engram
from engram.integrations.langgraph import EngramStore, store_stream
from engram.integrations.openai_agents import EngramSession, session_stream
from engram.ledger import FORGOTTEN, NewEvent
from engram.ledger.catalog import SessionItemsAdded, StorePut
from engram.ledger.shred import SEALED_PREFIX
from engram.projections.embedding.cache import cache_key

ALICE = "QUOKKAALICE71"  # words nothing else in these tests says
BOB = "WOMBATBOB72"
CAROL = "NUMBATCAROL73"


def files_holding(root: Path, marker: str) -> list[str]:
    """Return every file under ``root`` whose bytes hold ``marker`` (-wal and -shm too)."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if marker.encode() in path.read_bytes():
                found.append(str(path.relative_to(root)))
    return found


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Any]:
    """An engram with the default configuration: a SQLite ledger, personal fields sealed."""
    with engram.open_memory(str(tmp_path / "ledger.db"), config=os.devnull) as opened:
        assert opened.ledger.sealer is not None
        yield opened


def items(session: EngramSession) -> list[Any]:
    return asyncio.run(session.get_items())


def add(session: EngramSession, *added: dict[str, Any]) -> None:
    asyncio.run(session.add_items(list(added)))


# -- sessions -----------------------------------------------------------------------------


def test_a_forgotten_agent_s_session_items_go_everywhere(memory: Any, tmp_path: Path) -> None:
    alice = EngramSession("chat-a", memory, remember="alice")
    bob = EngramSession("chat-b", memory, remember="bob")
    carol = EngramSession("chat-c", memory, actor="carol")  # no remember: the actor's items
    add(alice, {"role": "user", "content": f"my diagnosis is {ALICE}"})
    add(
        alice,
        {"role": "assistant", "content": [{"type": "output_text", "text": f"noted {ALICE}"}]},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    )
    add(bob, {"role": "user", "content": f"my plan is {BOB}"})
    add(carol, {"role": "user", "content": f"my note is {CAROL}"})
    bob_items = items(bob)
    # Sealed in the ledger from the start; opened on read while the key lives.
    assert [i["role"] for i in items(alice)[:2]] == ["user", "assistant"]
    assert items(alice)[0]["content"] == f"my diagnosis is {ALICE}"
    assert len(items(alice)) == 3
    raw = [e.payload for e in memory.ledger.read(kinds=["session.items_added"])]
    assert [(p.session, p.agent) for p in raw] == [
        ("chat-a", "alice"),
        ("chat-a", "alice"),
        ("chat-b", "bob"),
        ("chat-c", None),
    ]
    assert all(isinstance(p.items, str) for p in raw)
    assert not [f for f in files_holding(tmp_path, ALICE) if "projections" not in f]

    memory.forget("alice", reason="erasure")

    assert items(alice) == []
    assert asyncio.run(alice.pop_item()) is None
    assert items(bob) == bob_items
    assert items(carol)[0]["content"] == f"my note is {CAROL}"
    assert files_holding(tmp_path, ALICE) == []
    forgotten = [e.payload for e in memory.ledger.read(kinds=["session.items_added"])][:2]
    assert [p.items for p in forgotten] == [FORGOTTEN, FORGOTTEN]

    memory.engine.rebuild()
    assert items(alice) == []
    assert items(bob) == bob_items
    assert files_holding(tmp_path, ALICE) == []

    # The actor is the subject when nobody is remembered.
    memory.forget("carol")
    assert items(carol) == []
    assert items(bob) == bob_items
    assert files_holding(tmp_path, CAROL) == []

    # Alice may talk again: a new key, her new items served, the old ones still gone.
    add(alice, {"role": "user", "content": "hello again"})
    assert items(alice) == [{"role": "user", "content": "hello again"}]
    memory.engine.rebuild()
    assert items(alice) == [{"role": "user", "content": "hello again"}]
    assert items(bob) == bob_items
    assert files_holding(tmp_path, ALICE) == []


def test_a_forgotten_session_after_pops_and_clears_rebuilds_the_same(memory: Any) -> None:
    alice = EngramSession("chat", memory, remember="alice")
    bob = EngramSession("chat", memory, remember="bob")  # one session, two subjects
    add(alice, {"role": "user", "content": "a1"}, {"role": "user", "content": "a2"})
    add(bob, {"role": "user", "content": "b1"})
    add(alice, {"role": "user", "content": "a3"})
    assert asyncio.run(alice.pop_item()) == {"role": "user", "content": "a3"}
    memory.forget("alice")
    assert items(bob) == [{"role": "user", "content": "b1"}]
    memory.engine.rebuild()
    assert items(bob) == [{"role": "user", "content": "b1"}]
    asyncio.run(bob.clear_session())
    add(bob, {"role": "user", "content": "b2"})
    memory.engine.rebuild()
    assert items(bob) == [{"role": "user", "content": "b2"}]


def test_session_items_written_before_sealing_still_read(memory: Any) -> None:
    old = SessionItemsAdded(session="old", items=[{"role": "user", "content": "plain"}])
    memory.ledger.append(NewEvent.of(old, stream=session_stream("old"), actor="openai-agents"))
    session = EngramSession("old", memory)
    assert items(session) == [{"role": "user", "content": "plain"}]
    memory.engine.rebuild()
    assert items(session) == [{"role": "user", "content": "plain"}]
    memory.forget("openai-agents")  # its subject is the actor: the projection drops it
    assert items(session) == []


# -- the LangGraph store ------------------------------------------------------------------


def state(store: EngramStore) -> dict[tuple[tuple[str, ...], str], Any]:
    """Return every item the store serves, with its value and times."""
    found = store.search((), limit=1000)
    return {(tuple(i.namespace), i.key): (i.value, i.created_at, i.updated_at) for i in found}


def test_a_forgotten_actor_s_store_values_go_everywhere(memory: Any, tmp_path: Path) -> None:
    alice = EngramStore.from_memory(memory, actor="alice")
    bob = EngramStore.from_memory(memory, actor="bob")
    alice.put(("alice", "memories"), "k1", {"text": f"alice's allergy is {ALICE}", "n": 1})
    bob.put(("bob",), "k1", {"text": f"bob's plan is {BOB}", "nested": {"a": [1, None]}})
    alice.put(("shared",), "kept", {"text": f"first {ALICE}"})
    bob.put(("shared",), "kept", {"text": f"bob took it over {BOB}"})  # bob's latest: kept
    bob.put(("shared",), "gone", {"text": "bob's first"})
    alice.put(("shared",), "gone", {"text": f"alice took it over {ALICE}"})  # alice's: goes
    got = alice.get(("alice", "memories"), "k1")
    assert got is not None
    assert got.value == {"text": f"alice's allergy is {ALICE}", "n": 1}
    hits = alice.search(("alice",), query="allergy")
    assert [h.value["n"] for h in hits] == [1]
    # Search embedded the query and the value's text: no cache on disk keeps either
    # (ADR 0114), where forget could not find them.
    if hasattr(memory.embedder, "cache"):
        fingerprint = memory.embedder.fingerprint
        asked = [cache_key(fingerprint, t) for t in ("allergy", f"alice's allergy is {ALICE}")]
        assert memory.embedder.cache.get_many(asked) == {}
    raw = [e.payload.value for e in memory.ledger.read(kinds=["store.put"])]
    assert all(isinstance(v, str) for v in raw)
    assert not [f for f in files_holding(tmp_path, ALICE) if "projections" not in f]

    memory.forget("alice")

    assert alice.get(("alice", "memories"), "k1") is None
    assert alice.get(("shared",), "gone") is None
    kept = bob.get(("shared",), "kept")
    assert kept is not None
    assert kept.value == {"text": f"bob took it over {BOB}"}
    assert alice.search(("alice",)) == []
    assert alice.search(("alice",), query="allergy") == []
    assert sorted(alice.list_namespaces()) == [("bob",), ("shared",)]
    served = state(bob)
    assert set(served) == {(("bob",), "k1"), (("shared",), "kept")}
    assert ALICE not in repr(served)
    assert files_holding(tmp_path, ALICE) == []
    values = [e.payload.value for e in memory.ledger.read(kinds=["store.put"])]
    assert values.count(FORGOTTEN) == 3

    memory.engine.rebuild()
    assert state(bob) == served  # creation times included
    assert alice.get(("alice", "memories"), "k1") is None
    assert files_holding(tmp_path, ALICE) == []

    alice.put(("alice", "memories"), "k1", {"text": "after"})  # a new key
    again = alice.get(("alice", "memories"), "k1")
    assert again is not None
    assert again.value == {"text": "after"}
    memory.engine.rebuild()
    assert alice.get(("alice", "memories"), "k1") == again
    assert files_holding(tmp_path, ALICE) == []


def test_store_values_written_before_sealing_still_read(memory: Any) -> None:
    old = StorePut(namespace=["old"], key="k", value={"text": "plain", "n": 2})
    memory.ledger.append(NewEvent.of(old, stream=store_stream(["old"], "k"), actor="langgraph"))
    store = EngramStore.from_memory(memory)
    got = store.get(("old",), "k")
    assert got is not None
    assert got.value == {"text": "plain", "n": 2}
    memory.engine.rebuild()
    assert store.get(("old",), "k") == got
    memory.forget("langgraph")
    assert store.get(("old",), "k") is None


def test_unsealed_ledgers_read_the_json_text(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ledger.db"), config=os.devnull, seal=False) as m:
        assert m.ledger.sealer is None
        store = EngramStore.from_memory(m, actor="alice")
        store.put(("a",), "k", {"text": "hi"})
        session = EngramSession("s", m, remember="alice")
        add(session, {"role": "user", "content": "hi"})
        got = store.get(("a",), "k")
        assert got is not None
        assert got.value == {"text": "hi"}
        assert items(session) == [{"role": "user", "content": "hi"}]
        (put,) = m.ledger.read(kinds=["store.put"])
        assert put.payload.value == '{"text":"hi"}'
        assert not put.payload.value.startswith(SEALED_PREFIX)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: StorePut(namespace=["a"], key="k", value="[1]"), "object"),
        (lambda: StorePut(namespace=["a"], key="k", value="{"), "truncated"),
        (lambda: SessionItemsAdded(session="s", items="[]"), "length >= 1"),
        (lambda: SessionItemsAdded(session="s", items='[{"a": 1}, 2]'), "object"),
    ],
)
def test_json_text_payloads_are_checked(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()
