"""The shared memo: each session's newest notes, addressed, and its plans (ADR 0034, 0066).

A ``memo.posted`` or ``memo.addressed`` event adds a note to its session's memo: from an
agent, to an agent (``*``: everyone; every ``memo.posted`` note is to everyone) and of a type
(``note`` for ``memo.posted``). Each session keeps its newest :data:`RING` notes (a ring
buffer), so reading the memo is one indexed query however long the session has run; older
notes stay in the ledger.

Plans are kept whole: ``plan.proposed`` adds a plan (goal, steps, status ``PROPOSED``);
``plan.updated`` moves it on. Events that do not fit follow fixed rules, so a rebuild
replays them the same way: a second proposal of a plan id is ignored (the first wins); an
update of an unknown plan, one that moves the status back (``PROPOSED`` < ``IN_PROGRESS`` <
``DONE`` or ``ABANDONED``), one after ``DONE`` or ``ABANDONED``, or one whose ``done``
exceeds the plan's steps is ignored.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from engram.ledger import Event
from engram.ledger.catalog import MemoAddressed, MemoPosted, PlanProposed, PlanUpdated
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError
from engram.projections.salience import micros

#: How many notes a session's memo keeps.
RING = 50
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RANK = {"PROPOSED": 0, "IN_PROGRESS": 1, "DONE": 2, "ABANDONED": 2}
_NOTES = (MemoPosted.__kind__, MemoAddressed.__kind__)


class Note(NamedTuple):
    """A note on the memo: its ledger position, author, text, time, addressee and type."""

    position: int
    session: str
    agent: str
    text: str
    posted_at: datetime
    to: str = "*"
    type: str = "note"


class PlanState(NamedTuple):
    """A plan as it stands: goal, steps, status, steps done, and who moved it last."""

    plan: str
    session: str
    agent: str
    goal: str
    steps: tuple[str, ...]
    status: str
    done: int
    updated_by: str
    note: str
    proposed_position: int
    updated_position: int


class Memo(Projection):
    """The newest notes of each session's memo, and its plans."""

    name = "memo"
    version = 2
    kinds = (MemoPosted, MemoAddressed, PlanProposed, PlanUpdated)
    tables = ("memo_notes", "memo_plans")

    def create(self, db: Tables) -> None:
        """Create the notes table, indexed by session, and the plans table."""
        table = db["memo_notes"]
        db.conn.execute(
            f"CREATE TABLE {table} (position INTEGER PRIMARY KEY, session TEXT NOT NULL,"
            " agent TEXT NOT NULL, text TEXT NOT NULL, posted_us INTEGER NOT NULL,"
            " to_agent TEXT NOT NULL, type TEXT NOT NULL)"
        )
        db.conn.execute(f'CREATE INDEX {table[:-1]}_session" ON {table} (session, position)')
        plans = db["memo_plans"]
        db.conn.execute(
            f"CREATE TABLE {plans} (plan TEXT PRIMARY KEY, session TEXT NOT NULL,"
            " agent TEXT NOT NULL, goal TEXT NOT NULL, steps TEXT NOT NULL,"
            " status TEXT NOT NULL, done INTEGER NOT NULL, updated_by TEXT NOT NULL,"
            " note TEXT NOT NULL, proposed_position INTEGER NOT NULL,"
            " updated_position INTEGER NOT NULL) WITHOUT ROWID"
        )
        db.conn.execute(f'CREATE INDEX {plans[:-1]}_session" ON {plans} (session, plan)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Add each note, trim every session touched to its newest notes, move the plans."""
        table = db["memo_notes"]
        notes = [e for e in events if e.kind in _NOTES]
        db.conn.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    e.position,
                    e.payload.session,
                    e.payload.agent,
                    e.payload.text,
                    micros(e.at),
                    getattr(e.payload, "to", "*"),
                    getattr(e.payload, "type", "note"),
                )
                for e in notes
            ],
        )
        for session in dict.fromkeys(e.payload.session for e in notes):
            db.conn.execute(
                f"DELETE FROM {table} WHERE session = ? AND position < (SELECT min(position)"
                f" FROM (SELECT position FROM {table} WHERE session = ?"
                " ORDER BY position DESC LIMIT ?))",
                (session, session, RING),
            )
        plans = db["memo_plans"]
        for e in events:
            p = e.payload
            if e.kind == PlanProposed.__kind__:
                db.conn.execute(
                    f"INSERT INTO {plans} VALUES (?, ?, ?, ?, ?, 'PROPOSED', 0, ?, '', ?, ?)"
                    " ON CONFLICT (plan) DO NOTHING",
                    (p.plan, p.session, p.agent, p.goal, json.dumps(p.steps), p.agent,
                     e.position, e.position),
                )  # fmt: skip
            elif e.kind == PlanUpdated.__kind__:
                row = db.conn.execute(
                    f"SELECT status, done, steps FROM {plans} WHERE plan = ?", (p.plan,)
                ).fetchone()
                if row is None or row[0] in ("DONE", "ABANDONED"):
                    continue
                done = row[1] if p.done is None else p.done
                if _RANK[p.status] < _RANK[row[0]] or done > len(json.loads(row[2])):
                    continue
                db.conn.execute(
                    f"UPDATE {plans} SET status = ?, done = ?, updated_by = ?, note = ?,"
                    " updated_position = ? WHERE plan = ?",
                    (p.status, done, p.agent, p.note, e.position, p.plan),
                )


def recent(
    conn: sqlite3.Connection, session: str, *, limit: int = RING, to: str | None = None
) -> list[Note]:
    """Return the newest ``limit`` notes of ``session``'s memo, oldest first.

    With ``to``, only the notes addressed to that agent or to everyone.
    """
    if not isinstance(session, str) or not session:
        raise QueryError(f"session must be a non-empty string, got {session!r}")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= RING:
        raise QueryError(f"limit must be an int in 1..{RING}, got {limit!r}")
    if to is not None and (not isinstance(to, str) or not to):
        raise QueryError(f"to must be a non-empty string, got {to!r}")
    addressed = "" if to is None else " AND to_agent IN ('*', ?)"
    rows = conn.execute(
        "SELECT position, session, agent, text, posted_us, to_agent, type FROM (SELECT *"
        f" FROM memo_notes WHERE session = ?{addressed} ORDER BY position DESC LIMIT ?)"
        " ORDER BY position",
        (session, limit) if to is None else (session, to, limit),
    ).fetchall()
    return [
        Note(position, s, agent, text, _EPOCH + timedelta(microseconds=us), to_agent, type_)
        for position, s, agent, text, us, to_agent, type_ in rows
    ]


def sessions(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """Return every session with a memo and how many notes it keeps, by session name."""
    return [
        (str(s), int(n))
        for s, n in conn.execute(
            "SELECT session, count(*) FROM memo_notes GROUP BY session ORDER BY session"
        )
    ]


def plans(conn: sqlite3.Connection, session: str) -> list[PlanState]:
    """Return ``session``'s plans in the order they were proposed."""
    if not isinstance(session, str) or not session:
        raise QueryError(f"session must be a non-empty string, got {session!r}")
    rows = conn.execute(
        "SELECT * FROM memo_plans WHERE session = ? ORDER BY proposed_position", (session,)
    ).fetchall()
    return [_plan(row) for row in rows]


def plan(conn: sqlite3.Connection, plan_id: str) -> PlanState | None:
    """Return one plan as it stands (None if no such plan was proposed)."""
    row = conn.execute("SELECT * FROM memo_plans WHERE plan = ?", (plan_id,)).fetchone()
    return None if row is None else _plan(row)


def _plan(row: Sequence[object]) -> PlanState:
    plan_id, session, agent, goal, steps, status, done, by, note, proposed, updated = row
    return PlanState(
        str(plan_id), str(session), str(agent), str(goal), tuple(json.loads(str(steps))),
        str(status), int(str(done)), str(by), str(note), int(str(proposed)), int(str(updated)),
    )  # fmt: skip
