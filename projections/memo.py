"""The shared memo: the last notes posted to each session, for every agent to read each cycle.

A ``memo.posted`` event adds a note to its session's memo; each session keeps its newest
:data:`RING` notes (a ring buffer), so reading the memo is one indexed query however long the
session has run. Older notes stay in the ledger.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from engram.ledger import Event
from engram.ledger.catalog import MemoPosted
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError
from engram.projections.salience import micros

#: How many notes a session's memo keeps.
RING = 50
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Note(NamedTuple):
    """A note on the memo: its ledger position, author, text and time."""

    position: int
    session: str
    agent: str
    text: str
    posted_at: datetime


class Memo(Projection):
    """The newest notes of each session's memo."""

    name = "memo"
    version = 1
    kinds = (MemoPosted,)
    tables = ("memo_notes",)

    def create(self, db: Tables) -> None:
        """Create the notes table, indexed by session."""
        table = db["memo_notes"]
        db.conn.execute(
            f"CREATE TABLE {table} (position INTEGER PRIMARY KEY, session TEXT NOT NULL,"
            " agent TEXT NOT NULL, text TEXT NOT NULL, posted_us INTEGER NOT NULL)"
        )
        db.conn.execute(f'CREATE INDEX {table[:-1]}_session" ON {table} (session, position)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Add each note, then trim every session touched to its newest notes."""
        table = db["memo_notes"]
        db.conn.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)",
            [
                (e.position, e.payload.session, e.payload.agent, e.payload.text, micros(e.at))
                for e in events
            ],
        )
        for session in dict.fromkeys(e.payload.session for e in events):
            db.conn.execute(
                f"DELETE FROM {table} WHERE session = ? AND position < (SELECT min(position)"
                f" FROM (SELECT position FROM {table} WHERE session = ?"
                " ORDER BY position DESC LIMIT ?))",
                (session, session, RING),
            )


def recent(conn: sqlite3.Connection, session: str, *, limit: int = RING) -> list[Note]:
    """Return the newest ``limit`` notes of ``session``'s memo, oldest first."""
    if not isinstance(session, str) or not session:
        raise QueryError(f"session must be a non-empty string, got {session!r}")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= RING:
        raise QueryError(f"limit must be an int in 1..{RING}, got {limit!r}")
    rows = conn.execute(
        "SELECT position, session, agent, text, posted_us FROM (SELECT * FROM memo_notes"
        " WHERE session = ? ORDER BY position DESC LIMIT ?) ORDER BY position",
        (session, limit),
    ).fetchall()
    return [
        Note(position, s, agent, text, _EPOCH + timedelta(microseconds=us))
        for position, s, agent, text, us in rows
    ]


def sessions(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """Return every session with a memo and how many notes it keeps, by session name."""
    return [
        (str(s), int(n))
        for s, n in conn.execute(
            "SELECT session, count(*) FROM memo_notes GROUP BY session ORDER BY session"
        )
    ]
