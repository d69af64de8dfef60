"""A LangGraph graph with engram as its long-term memory store, offline (a fake chat model).

Run: ``python examples/langgraph_store.py [LEDGER]`` (needs ``pip install 'engram[langgraph]'``
and ``langgraph``). Two conversations on two threads share what the first one stored: the
graph's node writes a memory per user message into the store and searches it before each
answer. Every put is a ``store.put`` event in the ledger.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

import engram
from engram.integrations.langgraph import EngramStore

model = GenericFakeChatModel(
    messages=iter(
        [
            AIMessage(content="Noted: you are vegetarian."),
            AIMessage(content="Try the mushroom risotto: it is vegetarian."),
        ]
    )
)


def chat(state: MessagesState, *, store: BaseStore) -> dict[str, list[AIMessage]]:
    """Recall what the store holds about the user, remember the new message, answer."""
    namespace = ("memories", "user-1")
    question = str(state["messages"][-1].content)
    known = store.search(namespace, query=question, limit=3)
    print(f"  recalled: {[item.value['text'] for item in known]}")
    if question.lower().startswith("remember"):
        store.put(namespace, str(uuid.uuid4()), {"text": question})
    return {"messages": [model.invoke(state["messages"])]}


def main(ledger: str) -> None:
    """Run two conversations through one graph whose store is engram."""
    with engram.open_memory(ledger, config=os.devnull) as memory:
        graph = (
            StateGraph(MessagesState)
            .add_node("chat", chat)
            .add_edge(START, "chat")
            .compile(store=EngramStore.from_memory(memory))
        )
        for thread, text in [
            ("a", "Remember that I am vegetarian."),
            ("b", "What should I cook tonight?"),
        ]:
            print(f"thread {thread}> {text}")
            result = graph.invoke(
                {"messages": [("user", text)]}, {"configurable": {"thread_id": thread}}
            )
            print(f"  answer: {result['messages'][-1].content}")
        puts = sum(1 for _ in memory.ledger.read(kinds=["store.put"]))
        print(f"store.put events in the ledger: {puts}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "ledger.db"))
