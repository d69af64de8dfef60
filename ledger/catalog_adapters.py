"""Framework adapters' kinds (ADR 0062, ADR 0063): a key-value store and agent sessions."""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from engram.ledger.payload import Name, Payload, Position

#: A store namespace: a path of non-empty labels (LangGraph's ``("users", "123")``).
StoreNamespace = Annotated[
    list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1)
]
StoreKey = Annotated[str, msgspec.Meta(max_length=1024)]


class StorePut(Payload, frozen=True):
    """A value was stored under a namespace and key, replacing any earlier one.

    ``index`` says which fields search embeds: None the store's default, ``[]`` none, else
    the field paths (LangGraph's ``index=``).
    """

    __kind__: ClassVar[str] = "store.put"

    namespace: StoreNamespace
    key: StoreKey
    value: dict[str, object]
    index: list[str] | None = None


class StoreDeleted(Payload, frozen=True):
    """The value under a namespace and key was deleted (a tombstone; the puts stay)."""

    __kind__: ClassVar[str] = "store.deleted"

    namespace: StoreNamespace
    key: StoreKey


class SessionItemsAdded(Payload, frozen=True):
    """Items (messages, tool calls: JSON objects) were added to the end of a session."""

    __kind__: ClassVar[str] = "session.items_added"

    session: Name
    items: Annotated[list[dict[str, object]], msgspec.Meta(min_length=1)]


class SessionItemPopped(Payload, frozen=True):
    """A session's last item was taken off: the item at ``index`` of the add at ``position``."""

    __kind__: ClassVar[str] = "session.item_popped"

    session: Name
    position: Position
    index: Annotated[int, msgspec.Meta(ge=0)]


class SessionCleared(Payload, frozen=True):
    """Every item a session held was cleared (a tombstone; the adds stay in the ledger)."""

    __kind__: ClassVar[str] = "session.cleared"

    session: Name
