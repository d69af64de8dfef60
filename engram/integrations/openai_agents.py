"""engram as an OpenAI Agents SDK session: the ``Session`` protocol on the ledger (ADR 0063).

Needs the ``openai-agents`` extra (``pip install 'engram[openai-agents]'``). Each
``add_items`` is one ``session.items_added`` event on the session's stream
(``session:<id>``); ``pop_item`` appends a ``session.item_popped`` tombstone naming the item
it took, with the stream's version as the expectation, so two concurrent pops never take the
same item; ``clear_session`` appends ``session.cleared``. The ``sessions`` projection serves
the current list, and a write is visible to the next read.

Beyond a plain session, opt in with ``remember="agent-name"``: the text of every message
added (its content, a tool's output) is also observed as that agent's memory in the same
atomic append, so ``recall`` and context frames serve it in later sessions.

The items are personal (ADR 0039): sealed in the ledger under the key of the session's
subject, which is the ``remember`` agent when there is one (the conversation is hers: her
messages are her memories too), else ``actor``. ``Memory.forget`` of that subject takes the
session's items with its memories: :meth:`EngramSession.get_items` no longer returns them,
and nothing stands in their place.

An item must be a JSON object that reads back as it was added: str, int, float, bool, None,
lists (a tuple is stored as a list) and dicts with str keys, at most 256 levels deep. NaN,
infinity, bytes, sets, other keys or objects, and text that is not valid unicode are refused
with an error naming the item and field (``items[0]['content']``) before anything is written;
so is a session id the ledger cannot name a stream with (empty, over 504 characters, with
surrounding spaces, NUL or invalid unicode).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

try:
    from agents.memory.session_settings import SessionSettings, resolve_session_limit
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "engram.integrations.openai_agents needs the openai-agents extra: "
        "pip install 'engram[openai-agents]'"
    ) from error

from engram.ledger import ConcurrencyError, NewEvent
from engram.ledger.catalog import (
    MemoryObserved,
    SessionCleared,
    SessionItemPopped,
    SessionItemsAdded,
)
from engram.ledger.catalog_adapters import json_text
from engram.ledger.json_values import check_json, short, unicode
from engram.ledger.planning import MAX_NAME
from engram.projections.sessions import session_items

__all__ = ["EngramSession", "item_text", "session_stream"]

_POP_ATTEMPTS = 20


def session_stream(session_id: str) -> str:
    """Return the stream a session's events are appended to."""
    return f"session:{session_id}"


def item_text(item: dict[str, Any]) -> str:
    """Return the text an item carries for memory: a message's content or a tool's output."""
    content = item.get("content")
    if isinstance(content, str):
        return content.strip()
    parts: list[str] = []
    if isinstance(content, list):
        parts = [str(p["text"]) for p in content if isinstance(p, dict) and p.get("text")]
    output = item.get("output")
    if isinstance(output, str):
        parts.append(output)
    return "\n".join(parts).strip()


class EngramSession:
    """An OpenAI Agents SDK session kept in an engram ledger.

    Args:
        session_id: the conversation's id.
        memory: an opened engram (``engram.open_memory``).
        remember: an agent name: also observe each added message's text as its memory;
            the session's items are then that agent's, sealed under its key.
        session_settings: the SDK's settings (``limit`` is the default of :meth:`get_items`).
        actor: who the session events are appended as (and, without ``remember``, whose
            items they are: the subject they are sealed under).
    """

    def __init__(
        self,
        session_id: str,
        memory: Any,
        *,
        remember: str | None = None,
        session_settings: SessionSettings | None = None,
        actor: str = "openai-agents",
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
        _check_name(session_id, "session_id", session_stream(session_id))
        if remember is not None and (not isinstance(remember, str) or not remember):
            raise ValueError(f"remember must be an agent name or None, got {remember!r}")
        if remember is not None:
            _check_name(remember, "remember", f"agent:{remember}")
        self.session_id = session_id
        self.session_settings = session_settings
        self.memory = memory
        self.remember = remember
        self.actor = actor
        self._stream = session_stream(session_id)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """Return the session's items oldest first; with ``limit``, the newest ``limit``."""
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted == 0:
            return []
        engine = self.memory.engine
        engine.wait_for(self.memory.ledger.head())
        with engine.read() as conn:
            rows = session_items(
                conn, self.session_id, limit=None if wanted is None or wanted < 0 else wanted
            )
        return [row.item for row in rows]

    async def add_items(self, items: Iterable[Any]) -> None:
        """Append ``items`` to the session (and, opted in, to the agent's memories).

        No items is a no-op. Raises TypeError or ValueError, naming the item and field,
        for an item that is not a JSON object (see the module's docstring); nothing is then
        written.
        """
        plain = [_plain(item, f"items[{index}]") for index, item in enumerate(items)]
        if not plain:
            return
        # The items are sealed under the event's subject (ADR 0039): with ``remember``, the
        # agent whose conversation this is, named as the payload's ``agent``: the same words
        # are its memories, sealed under its key, so forgetting it takes both; the actor is
        # only the adapter appending (one for every session). Without it, the actor. Written
        # as JSON text: sealing seals strings.
        events = [
            NewEvent.of(
                SessionItemsAdded(
                    session=self.session_id, items=json_text(plain), agent=self.remember
                ),
                stream=self._stream,
                actor=self.actor,
            )
        ]
        if self.remember is not None:
            events += self._memories(plain)
        positions = self.memory.ledger.append(events)
        self.memory.engine.wait_for(positions[-1])

    async def pop_item(self) -> Any | None:
        """Remove and return the session's newest item, or None when it holds none."""
        ledger, engine = self.memory.ledger, self.memory.engine
        version = 0
        for _ in range(_POP_ATTEMPTS):
            version = ledger.versions([self._stream]).get(self._stream, 0)
            engine.wait_for(ledger.head())
            with engine.read() as conn:
                rows = session_items(conn, self.session_id, limit=1)
            if not rows:
                return None
            last = rows[0]
            event = NewEvent.of(
                SessionItemPopped(session=self.session_id, position=last.position, index=last.slot),
                stream=self._stream,
                actor=self.actor,
            )
            try:
                position = ledger.append(event, expect=version)[0]
            except ConcurrencyError:
                continue  # another writer moved the session on: read it again
            engine.wait_for(position)
            return last.item
        raise ConcurrencyError(
            f"session {self.session_id!r}: pop met concurrent writes {_POP_ATTEMPTS} times",
            stream=self._stream,
            expected=version,
            actual=ledger.versions([self._stream]).get(self._stream, 0),
        )

    async def clear_session(self) -> None:
        """Remove every item of the session (the ledger keeps them, under a tombstone)."""
        event = NewEvent.of(
            SessionCleared(session=self.session_id), stream=self._stream, actor=self.actor
        )
        self.memory.engine.wait_for(self.memory.ledger.append(event)[0])

    def _memories(self, items: Sequence[dict[str, Any]]) -> list[NewEvent]:
        assert self.remember is not None
        scorer = self.memory.agent(self.remember).scorer
        events = []
        for item in items:
            text = item_text(item)
            if not text:
                continue
            role = item.get("role") or item.get("type") or "item"
            events.append(
                NewEvent.of(
                    MemoryObserved(
                        agent=self.remember,
                        text=text,
                        importance=scorer.score(text, "observation"),
                        source=self._stream,
                        tags=["session", str(role)[:512]],
                    ),
                    stream=f"agent:{self.remember}",
                    actor=self.remember,
                )
            )
        return events


def _plain(item: Any, where: str) -> dict[str, Any]:
    """Return ``item`` as a JSON object (the SDK passes dicts; pydantic models are dumped)."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, dict):
        raise TypeError(f"{where}: a session item is a dict, got {type(item).__name__}")
    check_json(item, where, "session items")
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(item))
    return decoded


def _check_name(name: str, argument: str, stream: str) -> None:
    """Refuse ``name`` when the ledger could not name its stream (or actor) with it."""
    if len(stream) > MAX_NAME or name != name.strip() or "\x00" in name or not unicode(name):
        raise ValueError(
            f"{argument} must be at most {MAX_NAME - len(stream) + len(name)} characters"
            f" without surrounding spaces, NUL or invalid unicode (it names the ledger stream"
            f" {stream[: len(stream) - len(name)]}<{argument}>), got {short(name)}"
        )
