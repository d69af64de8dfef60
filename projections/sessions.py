"""Agent sessions: the items each session holds now, in order (ADR 0063).

``session.items_added`` appends items (JSON objects) to a session; ``session.item_popped``
removes the one item it names (a tombstone: the add stays in the ledger); ``session.cleared``
removes every item the session held before it. An item is named by the position of the add
that carried it and its index there, which also orders a session's items.

The items are personal (ADR 0039): sealed under the subject of their add (the session's
``agent`` when it names one, else the event's actor), kept here beside it. ``subject.forgotten``
deletes that subject's earlier items (the freed pages zeroed), and an add whose items read
``[forgotten]`` (a rebuild after the forgetting) or are still sealed adds nothing: nothing is
served in their place, as a session holds messages, not placeholders.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, NamedTuple

import msgspec

from engram.ledger import Event
from engram.ledger.catalog import (
    SessionCleared,
    SessionItemPopped,
    SessionItemsAdded,
    SubjectForgotten,
)
from engram.ledger.catalog_adapters import session_items as items_of
from engram.ledger.shred import subject_of
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError


class SessionItem(NamedTuple):
    """An item a session holds: the add that carried it, its place there, the item."""

    position: int
    slot: int
    item: dict[str, Any]


class SessionItems(Projection):
    """The items every session holds, in the order they were added."""

    name = "sessions"
    version = 2  # 2: each item's subject, and a forgotten subject's items go (ADR 0039)
    kinds = (SessionItemsAdded, SessionItemPopped, SessionCleared, SubjectForgotten)
    tables = ("session_items",)

    def create(self, db: Tables) -> None:
        """Create the items table, ordered by session, position and index."""
        db.conn.execute(
            f"CREATE TABLE {db['session_items']} (session TEXT NOT NULL,"
            " position INTEGER NOT NULL, idx INTEGER NOT NULL, item TEXT NOT NULL,"
            " subject TEXT NOT NULL, PRIMARY KEY (session, position, idx)) WITHOUT ROWID"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Add, pop and clear items as the events say, in order."""
        table = db["session_items"]
        encode = msgspec.json.encode
        for event in events:
            payload = event.payload
            if isinstance(payload, SessionItemsAdded):
                items = items_of(payload)
                if items is None:  # forgotten (or sealed): nothing to serve
                    continue
                subject = subject_of(event.actor, payload)
                db.conn.executemany(
                    f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)",
                    [
                        (payload.session, event.position, index, encode(item).decode(), subject)
                        for index, item in enumerate(items)
                    ],
                )
            elif isinstance(payload, SubjectForgotten):  # ADR 0039: the subject's items go
                db.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed
                db.conn.execute(
                    f"DELETE FROM {table} WHERE subject = ? AND position < ?",
                    (payload.subject, event.position),
                )
            elif isinstance(payload, SessionItemPopped):
                db.conn.execute(
                    f"DELETE FROM {table} WHERE session = ? AND position = ? AND idx = ?",
                    (payload.session, payload.position, payload.index),
                )
            else:
                db.conn.execute(
                    f"DELETE FROM {table} WHERE session = ? AND position < ?",
                    (payload.session, event.position),
                )


def session_items(
    conn: sqlite3.Connection, session: str, *, limit: int | None = None
) -> list[SessionItem]:
    """Return ``session``'s items oldest first; with ``limit``, only the newest ``limit``."""
    if not isinstance(session, str) or not session:
        raise QueryError(f"session must be a non-empty string, got {session!r}")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise QueryError(f"limit must be an int >= 0 or None, got {limit!r}")
    if limit is None:
        rows = conn.execute(
            "SELECT position, idx, item FROM session_items WHERE session = ?"
            " ORDER BY position, idx",
            (session,),
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT position, idx, item FROM (SELECT * FROM session_items WHERE session = ?"
            " ORDER BY position DESC, idx DESC LIMIT ?) ORDER BY position, idx",
            (session, limit),
        ).fetchall()
    decode = msgspec.json.decode
    return [SessionItem(position, index, decode(item)) for position, index, item in rows]
