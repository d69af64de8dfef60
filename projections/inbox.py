"""The inbox: signals sent through the ledger, and which agent has taken which.

Agents talk through the ledger, never through an orchestrator (DESIGN.md): a
``signal.sent`` event names a recipient (an agent, or ``*`` for every agent but the sender)
and ``signal.acked`` says an agent has taken it. An agent's inbox is the signals addressed
to it, or broadcast by another agent, that it has not acknowledged, oldest first.

The sender is the event's actor. An acknowledgement counts only from an agent the signal
was addressed to and only the first time; an acknowledgement of a signal the ledger does
not hold (yet), or by an agent it was not for, reached the ledger without the API's checks
and changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from engram.ledger import Event
from engram.ledger.catalog import SignalAcked, SignalSent
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError
from engram.projections.salience import micros

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The recipient that means "every agent but the sender".
BROADCAST = "*"


class Signal(NamedTuple):
    """A signal in an inbox: where it sits in the ledger, who sent it to whom, about what."""

    position: int
    id: str
    sender: str
    to: str
    topic: str
    body: str
    sent_at: datetime
    correlation_id: str | None


class Inbox(Projection):
    """Signals by recipient, and the acknowledgements that take them out of an inbox."""

    name = "inbox"
    version = 1
    kinds = (SignalSent, SignalAcked)
    tables = ("inbox_signals", "inbox_acks")

    def create(self, db: Tables) -> None:
        """Create the signal and acknowledgement tables."""
        db.conn.execute(
            f"CREATE TABLE {db['inbox_signals']} (position INTEGER PRIMARY KEY,"
            " id TEXT NOT NULL UNIQUE, sender TEXT NOT NULL, recipient TEXT NOT NULL,"
            " topic TEXT NOT NULL, body TEXT NOT NULL, sent_us INTEGER NOT NULL,"
            " correlation_id TEXT)"
        )
        db.conn.execute(
            f'CREATE INDEX {db["inbox_signals"][:-1]}_recipient"'
            f" ON {db['inbox_signals']} (recipient, position)"
        )
        db.conn.execute(
            f"CREATE TABLE {db['inbox_acks']} (signal INTEGER NOT NULL, agent TEXT NOT NULL,"
            " acked_position INTEGER NOT NULL, acked_us INTEGER NOT NULL,"
            " PRIMARY KEY (signal, agent)) WITHOUT ROWID"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Record each signal; record each first, rightful acknowledgement."""
        for event in events:
            if event.kind == "signal.sent":
                self._on_sent(db, event)
            else:
                self._on_acked(db, event)

    @staticmethod
    def _on_sent(db: Tables, event: Event) -> None:
        p = event.payload
        db.conn.execute(
            f"INSERT INTO {db['inbox_signals']} VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.position,
                event.id,
                event.actor,
                p.to,
                p.topic,
                p.body,
                micros(event.at),
                event.correlation_id,
            ),
        )

    @staticmethod
    def _on_acked(db: Tables, event: Event) -> None:
        p = event.payload
        row = db.conn.execute(
            f"SELECT position, sender, recipient FROM {db['inbox_signals']} WHERE id = ?",
            (p.signal,),
        ).fetchone()
        if row is None or not _addressed(p.agent, row[1], row[2]):
            return
        db.conn.execute(
            f"INSERT OR IGNORE INTO {db['inbox_acks']} VALUES (?, ?, ?, ?)",
            (row[0], p.agent, event.position, micros(event.at)),
        )


def _addressed(agent: str, sender: str, recipient: str) -> bool:
    return recipient == agent or (recipient == BROADCAST and sender != agent)


_COLUMNS = "position, id, sender, recipient, topic, body, sent_us, correlation_id"


def pending(conn: sqlite3.Connection, agent: str, *, limit: int = 100) -> list[Signal]:
    """Return ``agent``'s unacknowledged signals, oldest first (at most ``limit``)."""
    _check_agent(agent)
    check_count(limit, "limit")
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM inbox_signals s"
        " WHERE (recipient = ? OR (recipient = ? AND sender != ?))"
        " AND NOT EXISTS (SELECT 1 FROM inbox_acks a WHERE a.signal = s.position AND a.agent = ?)"
        " ORDER BY position LIMIT ?",
        (agent, BROADCAST, agent, agent, limit),
    ).fetchall()
    return [_signal(row) for row in rows]


def signal(conn: sqlite3.Connection, signal_id: str) -> Signal | None:
    """Return the signal whose ``signal.sent`` event has id ``signal_id``, or None."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM inbox_signals WHERE id = ?", (signal_id,)
    ).fetchone()
    return None if row is None else _signal(row)


def acknowledged(conn: sqlite3.Connection, signal_position: int, agent: str) -> int | None:
    """Return the position of ``agent``'s acknowledgement of a signal, or None."""
    row = conn.execute(
        "SELECT acked_position FROM inbox_acks WHERE signal = ? AND agent = ?",
        (signal_position, agent),
    ).fetchone()
    return None if row is None else int(row[0])


def addressed_to(item: Signal, agent: str) -> bool:
    """Return whether ``item`` is for ``agent`` (to it, or broadcast by someone else)."""
    return _addressed(agent, item.sender, item.to)


def _signal(row: tuple[int, str, str, str, str, str, int, str | None]) -> Signal:
    position, id_, sender, to, topic, body, sent_us, correlation = row
    sent = _EPOCH + timedelta(microseconds=sent_us)
    return Signal(position, id_, sender, to, topic, body, sent, correlation)


def _check_agent(agent: object) -> None:
    if not isinstance(agent, str) or not agent:
        raise QueryError(f"agent must be a non-empty string, got {agent!r}")
