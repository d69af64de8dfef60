"""The key-value store: the latest value under each namespace and key (ADR 0062).

A ``store.put`` stores a JSON object under ``(namespace, key)``, replacing the one before (its
creation time kept); a ``store.deleted`` removes it. Namespaces are paths of labels, kept as
canonical JSON arrays with their first label beside them, so a prefix read starts from an
index. Times are the events' times, so a rebuild gives the same rows byte for byte.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import msgspec

from engram.ledger import Event
from engram.ledger.catalog import StoreDeleted, StorePut, SubjectForgotten
from engram.ledger.catalog_adapters import store_value
from engram.ledger.shred import subject_of
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError
from engram.projections.salience import micros

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class StoredItem(NamedTuple):
    """An item of the store: where it is, its value, which fields search embeds, its times."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]
    indexed: list[str] | None  # the fields search embeds: None the store's default, [] none
    created_at: datetime
    updated_at: datetime
    position: int  # of the put that wrote this value


class KeyValueStore(Projection):
    """The latest value of every (namespace, key) that was put and not deleted since."""

    name = "keyvalue"
    version = 2  # 2: each value's subject, and a forgotten subject's values go (ADR 0039)
    kinds = (StorePut, StoreDeleted, SubjectForgotten)
    tables = ("store_items",)

    def create(self, db: Tables) -> None:
        """Create the items table, keyed by namespace and key, indexed by first label.

        ``value`` is NULL while a put's value is forgotten (until its forgetting deletes it).
        """
        table = db["store_items"]
        db.conn.execute(
            f"CREATE TABLE {table} (namespace TEXT NOT NULL, key TEXT NOT NULL,"
            " head TEXT NOT NULL, value TEXT, indexed TEXT, created_us INTEGER NOT NULL,"
            " updated_us INTEGER NOT NULL, position INTEGER NOT NULL, subject TEXT NOT NULL,"
            " PRIMARY KEY (namespace, key))"
        )
        db.conn.execute(f'CREATE INDEX {table[:-1]}_head" ON {table} (head)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Store each put's value (keeping the creation time), drop each deleted item."""
        table = db["store_items"]
        encode = msgspec.json.encode
        for event in events:
            payload = event.payload
            if isinstance(payload, SubjectForgotten):  # ADR 0039: the subject's values go
                db.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed
                db.conn.execute(
                    f"DELETE FROM {table} WHERE subject = ? AND position < ?",
                    (payload.subject, event.position),
                )
                continue
            namespace = encode(payload.namespace).decode()
            if isinstance(payload, StoreDeleted):
                db.conn.execute(
                    f"DELETE FROM {table} WHERE namespace = ? AND key = ?",
                    (namespace, payload.key),
                )
                continue
            at = micros(event.at)
            indexed = None if payload.index is None else encode(payload.index).decode()
            value = store_value(payload)
            db.conn.execute(
                f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value,"
                " indexed = excluded.indexed, updated_us = excluded.updated_us,"
                " position = excluded.position, subject = excluded.subject",
                (
                    namespace,
                    payload.key,
                    payload.namespace[0],
                    None if value is None else encode(value).decode(),
                    indexed,
                    at,
                    at,
                    event.position,
                    subject_of(event.actor, payload),
                ),
            )


def get_item(conn: sqlite3.Connection, namespace: Sequence[str], key: str) -> StoredItem | None:
    """Return the item under ``namespace`` and ``key``, or None."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM store_items WHERE namespace = ? AND key = ? AND value IS NOT NULL",
        (_namespace(namespace), key),
    ).fetchone()
    return None if row is None else _item(row)


def items_under(conn: sqlite3.Connection, prefix: Sequence[str]) -> list[StoredItem]:
    """Return every item whose namespace starts with ``prefix``, newest update first.

    Ties (one time, several puts) go to the later put.
    """
    if prefix:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM store_items WHERE head = ? AND value IS NOT NULL"
            " ORDER BY updated_us DESC, position DESC",
            (_label(prefix[0]),),
        ).fetchall()
    else:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM store_items WHERE value IS NOT NULL"
            " ORDER BY updated_us DESC, position DESC"
        ).fetchall()
    width = len(prefix)
    found = [_item(row) for row in rows]
    return [item for item in found if item.namespace[:width] == tuple(prefix)]


def namespaces(conn: sqlite3.Connection) -> list[tuple[str, ...]]:
    """Return every namespace that holds an item, sorted."""
    decode = msgspec.json.decode
    return sorted(
        tuple(decode(text))
        for (text,) in conn.execute(
            "SELECT DISTINCT namespace FROM store_items WHERE value IS NOT NULL"
        )
    )


_COLUMNS = "namespace, key, value, indexed, created_us, updated_us, position"


def _item(row: tuple[Any, ...]) -> StoredItem:
    namespace, key, value, indexed, created, updated, position = row
    decode = msgspec.json.decode
    return StoredItem(
        tuple(decode(namespace)),
        key,
        decode(value),
        None if indexed is None else decode(indexed),
        _EPOCH + timedelta(microseconds=created),
        _EPOCH + timedelta(microseconds=updated),
        position,
    )


def _namespace(namespace: Sequence[str]) -> str:
    if isinstance(namespace, str) or not all(isinstance(label, str) for label in namespace):
        raise QueryError(f"a namespace is a tuple of str, got {namespace!r}")
    return msgspec.json.encode(list(namespace)).decode()


def _label(label: Any) -> str:
    if not isinstance(label, str):
        raise QueryError(f"a namespace label is a str, got {label!r}")
    return label
