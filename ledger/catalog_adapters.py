"""Framework adapters' kinds (ADR 0062, ADR 0063): a key-value store and agent sessions.

A stored value and a session's items are what their writer said, so they are personal
(``DEFAULT_PERSONAL``, ADR 0039): sealed at append under the key of the event's subject and
gone once it is forgotten. Sealing works on strings, so they are written as the JSON text of
the object or list (:func:`json_text`); events written before, with the object or list
itself, still read. A reader goes through :func:`store_value` and :func:`session_items`,
which say None for a value that reads :data:`~engram.ledger.shred.FORGOTTEN` (its subject
was forgotten) or is still sealed (read without the keys): nothing to serve.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec

from engram.ledger.payload import Name, Payload, Position
from engram.ledger.shred import FORGOTTEN, SEALED_PREFIX

#: A store namespace: a path of non-empty labels (LangGraph's ``("users", "123")``).
StoreNamespace = Annotated[
    list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1)
]
StoreKey = Annotated[str, msgspec.Meta(max_length=1024)]
#: A session's items as written: a non-empty list of JSON objects.
SessionItemList = Annotated[list[dict[str, object]], msgspec.Meta(min_length=1)]
#: The JSON text of a stored value or of a session's items: what is sealed (ADR 0039).
JsonText = Annotated[str, msgspec.Meta(min_length=1)]

_ENCODE = msgspec.json.encode
_OBJECT = msgspec.json.Decoder(dict[str, object])
_ITEMS = msgspec.json.Decoder(SessionItemList)


def json_text(value: object) -> str:
    """Return ``value`` (a stored value, a session's items) as the JSON text payloads carry."""
    return _ENCODE(value).decode()


def _readable(text: str) -> bool:
    """Say whether a JSON text field holds text to decode: not forgotten, not still sealed."""
    return text != FORGOTTEN and not text.startswith(SEALED_PREFIX)


class StorePut(Payload, frozen=True):
    """A value was stored under a namespace and key, replacing any earlier one.

    ``index`` says which fields search embeds: None the store's default, ``[]`` none, else
    the field paths (LangGraph's ``index=``). ``value`` is a JSON object, written as its
    JSON text (:func:`json_text`) so it can be sealed; events written before carry the
    object itself. Its subject is the event's actor (the store's writer): a namespace is the
    application's and names nobody engram can tell. Read it with :func:`store_value`.
    """

    __kind__: ClassVar[str] = "store.put"

    namespace: StoreNamespace
    key: StoreKey
    value: dict[str, object] | JsonText
    index: list[str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, str) and _readable(self.value):
            _OBJECT.decode(self.value)  # a JSON object's text, or refused here


class StoreDeleted(Payload, frozen=True):
    """The value under a namespace and key was deleted (a tombstone; the puts stay)."""

    __kind__: ClassVar[str] = "store.deleted"

    namespace: StoreNamespace
    key: StoreKey


class SessionItemsAdded(Payload, frozen=True):
    """Items (messages, tool calls: JSON objects) were added to the end of a session.

    ``items`` is written as the JSON text of the list (:func:`json_text`) so it can be
    sealed; events written before carry the list itself. ``agent``, when given, is whose
    conversation it is, and so the subject the items are sealed under (``subject_of``);
    without it the subject is the event's actor. Read them with :func:`session_items`.
    """

    __kind__: ClassVar[str] = "session.items_added"

    session: Name
    items: SessionItemList | JsonText
    agent: Name | None = None

    def __post_init__(self) -> None:
        if isinstance(self.items, str) and _readable(self.items):
            _ITEMS.decode(self.items)  # a non-empty list of JSON objects' text, or refused


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


def store_value(payload: StorePut) -> dict[str, Any] | None:
    """Return a put's value, or None when it is forgotten or still sealed (none to serve)."""
    value = payload.value
    if not isinstance(value, str):
        return value
    return _OBJECT.decode(value) if _readable(value) else None


def session_items(payload: SessionItemsAdded) -> list[dict[str, Any]] | None:
    """Return an add's items, or None when they are forgotten or still sealed (none to serve)."""
    items = payload.items
    if not isinstance(items, str):
        return items
    return _ITEMS.decode(items) if _readable(items) else None
