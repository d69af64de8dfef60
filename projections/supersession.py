"""Supersessions: which memory replaced which, from when, and the proposals under review.

A memory replaces earlier ones by an event (ADR 0052), never by an edit: nothing is deleted,
and the chain of replacements is in the ledger and in these tables, for SQL.

- ``memory.superseded``: one ``supersessions`` row per replaced memory: the event, the
  replaced (``old``) and replacing (``new``) positions, the agent, the valid time from which
  the old one no longer holds, the record time, the method;
- ``memory.observed`` with ``supersedes`` (a revision, ADR 0121): the same rows, keyed by
  the observation itself (``event`` = ``new``), method ``explicit``;
- ``supersession.proposed``: a ``supersession_proposals`` row, ``pending``;
- ``supersession.reviewed``: a pending proposal becomes ``applied`` (its rows are added,
  keyed by the review's position) or ``refused``; a review of anything else changes nothing
  (the agents layer refuses it before it is appended, this handler only has to be total);
- ``supersession.reverted``: the supersession's rows get the revert's time; recall then
  serves the old memory as current again;
- ``subject.forgotten``: the reasons of the subject's earlier rows become ``[forgotten]``,
  as a rebuild reads them (a reason quotes the memories' values; ADR 0039).

Handlers read only their event and the tables (DESIGN.md, rule 2).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC
from typing import NamedTuple

from engram.ledger import FORGOTTEN, Event, chunked
from engram.ledger.catalog import (
    MemoryObserved,
    MemorySuperseded,
    SubjectForgotten,
    SupersessionProposed,
    SupersessionReverted,
    SupersessionReviewed,
)
from engram.projections.base import Projection, Tables
from engram.projections.salience import micros

__all__ = [
    "Proposal",
    "Replacement",
    "Supersession",
    "Supersessions",
    "applied",
    "in_force",
    "of_event",
    "pending",
    "proposal",
    "replacements",
    "true_from",
]

_FOREVER = 1 << 62


class Replacement(NamedTuple):
    """What replaced a memory: the replacing memory, from when (valid time), by which event."""

    old: int
    new: int
    valid_from_us: int
    event: int
    method: str


class Supersession(NamedTuple):
    """A supersession in force: the event that applied it, the memories it joins."""

    event: int
    agent: str
    new: int
    replaces: list[int]
    method: str
    valid_from_us: int
    recorded_us: int
    why: str


class Proposal(NamedTuple):
    """A proposed supersession and where its review stands."""

    event: int
    agent: str
    new: int
    replaces: list[int]
    similarity: float
    status: str  # pending, applied, refused
    valid_from_us: int
    method: str  # what found it: the offline rule ("overlap") or a model ("model")
    why: str  # the rule's evidence or the model's reason


class Supersessions(Projection):
    """Which memory replaced which, and the proposals under review."""

    name = "supersessions"
    version = 4  # 3: a forgotten subject's reasons go; 4: a revision's own memory.observed
    kinds = (
        MemoryObserved,
        MemorySuperseded,
        SupersessionProposed,
        SupersessionReviewed,
        SupersessionReverted,
        SubjectForgotten,
    )
    tables = ("supersessions", "supersession_proposals")

    def create(self, db: Tables) -> None:
        """Create the two tables and the index recall reads replacements by."""
        table = db["supersessions"]
        db.conn.execute(
            f"""CREATE TABLE {table} (
                event         INTEGER NOT NULL,
                old           INTEGER NOT NULL,
                new           INTEGER NOT NULL,
                agent         TEXT NOT NULL,
                valid_from_us INTEGER NOT NULL,
                recorded_us   INTEGER NOT NULL,
                method        TEXT NOT NULL,
                reverted_us   INTEGER,
                reason        TEXT NOT NULL,
                PRIMARY KEY (event, old)
            )"""
        )
        name = table.strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_old" ON {table} (old)')
        db.conn.execute(
            f"""CREATE TABLE {db["supersession_proposals"]} (
                event         INTEGER PRIMARY KEY,
                agent         TEXT NOT NULL,
                new           INTEGER NOT NULL,
                replaces      TEXT NOT NULL,
                similarity    REAL NOT NULL,
                status        TEXT NOT NULL,
                valid_from_us INTEGER NOT NULL,
                reviewed      INTEGER,
                method        TEXT NOT NULL,
                reason        TEXT NOT NULL
            )"""
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply each event, in position order."""
        for e in events:
            p = e.payload
            if e.kind == "memory.observed":  # a revision: it says what it replaces itself
                if p.supersedes:
                    when = p.valid_from if p.valid_from else e.at
                    self._add(
                        db, e, p.agent, e.position, p.supersedes, micros(when), "explicit", ""
                    )
            elif e.kind == "memory.superseded":
                when = p.valid_from if p.valid_from is not None else e.at
                if when.tzinfo is None:  # written before appends refused a naive time: UTC
                    when = when.replace(tzinfo=UTC)
                valid = micros(when)
                self._add(db, e, p.agent, p.position, p.replaces, valid, p.method, p.reason)
            elif e.kind == "supersession.proposed":
                db.conn.execute(
                    f"INSERT OR IGNORE INTO {db['supersession_proposals']}"
                    " VALUES (?, ?, ?, ?, ?, 'pending', ?, NULL, ?, ?)",
                    (e.position, p.agent, p.position, json.dumps(p.replaces), p.similarity,
                     micros(e.at), p.method, p.reason),
                )  # fmt: skip
            elif e.kind == "supersession.reviewed":
                self._review(db, e)
            elif e.kind == "subject.forgotten":
                for table in ("supersessions", "supersession_proposals"):
                    db.conn.execute(
                        f"UPDATE {db[table]} SET reason = ? WHERE agent = ? AND event < ?",
                        (FORGOTTEN, p.subject, e.position),
                    )
            else:
                db.conn.execute(
                    f"UPDATE {db['supersessions']} SET reverted_us = ?"
                    " WHERE event = ? AND reverted_us IS NULL",
                    (micros(e.at), p.supersession),
                )

    def _add(
        self, db: Tables, e: Event, agent: str, new: int, olds: Sequence[int], valid: int,
        how: str, why: str,
    ) -> None:  # fmt: skip
        db.conn.executemany(
            f"INSERT OR IGNORE INTO {db['supersessions']} VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?)",
            [(e.position, old, new, agent, valid, micros(e.at), how, why) for old in olds],
        )

    def _review(self, db: Tables, e: Event) -> None:
        p: SupersessionReviewed = e.payload
        table = db["supersession_proposals"]
        row = db.conn.execute(
            f"SELECT agent, new, replaces, status, valid_from_us, reason FROM {table}"
            " WHERE event = ?",
            (p.proposal,),
        ).fetchone()
        if row is None or row[3] != "pending":
            return
        db.conn.execute(
            f"UPDATE {table} SET status = ?, reviewed = ? WHERE event = ?",
            (p.decision, e.position, p.proposal),
        )
        if p.decision == "applied":
            self._add(db, e, row[0], row[1], json.loads(row[2]), row[4], "reviewed", row[5])


def replacements(
    conn: sqlite3.Connection, positions: Sequence[int], *, as_of_us: int | None = None
) -> dict[int, Replacement]:
    """Return what replaced each of ``positions`` (the latest valid replacement), as the
    store knew it at ``as_of_us`` (None: now). Reverted supersessions do not count."""
    cut = _FOREVER if as_of_us is None else as_of_us
    found: dict[int, Replacement] = {}
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        for old, new, valid, event, method in conn.execute(
            f"SELECT old, new, valid_from_us, event, method FROM supersessions"
            f" WHERE old IN ({marks}) AND recorded_us <= ?"
            " AND (reverted_us IS NULL OR reverted_us > ?) ORDER BY old, valid_from_us, event",
            [*chunk, cut, cut],
        ):
            found[old] = Replacement(old, new, valid, event, method)
    return found


def true_from(
    conn: sqlite3.Connection, positions: Sequence[int], *, as_of_us: int | None = None
) -> dict[int, int]:
    """Return, for each of ``positions`` that replaced a memory, the earliest valid time from
    which it did (what it says was true from then: a replacement told late may say the change
    came before it was told), as the store knew it at ``as_of_us`` (None: now). Reverted
    supersessions do not count."""
    cut = _FOREVER if as_of_us is None else as_of_us
    found: dict[int, int] = {}
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        for new, valid in conn.execute(
            f"SELECT new, MIN(valid_from_us) FROM supersessions WHERE new IN ({marks})"
            " AND recorded_us <= ? AND (reverted_us IS NULL OR reverted_us > ?) GROUP BY new",
            [*chunk, cut, cut],
        ):
            found[int(new)] = int(valid)
    return found


def _proposal(row: tuple[object, ...]) -> Proposal:
    event, agent, new, replaces, similarity, status, valid, method, why = row
    return Proposal(
        int(str(event)), str(agent), int(str(new)), json.loads(str(replaces)),
        float(str(similarity)), str(status), int(str(valid)), str(method), str(why),
    )  # fmt: skip


_PROPOSAL = "event, agent, new, replaces, similarity, status, valid_from_us, method, reason"


def pending(conn: sqlite3.Connection, agent: str | None = None) -> list[Proposal]:
    """Return the proposals waiting for review (of ``agent``'s memories, if given), oldest
    first."""
    sql = f"SELECT {_PROPOSAL} FROM supersession_proposals WHERE status = 'pending'"
    args: list[str] = []
    if agent is not None:
        sql += " AND agent = ?"
        args.append(agent)
    return [_proposal(r) for r in conn.execute(sql + " ORDER BY event", args)]


def proposal(conn: sqlite3.Connection, event: int) -> Proposal | None:
    """Return the proposal appended at position ``event``, None when there is none."""
    row = conn.execute(
        f"SELECT {_PROPOSAL} FROM supersession_proposals WHERE event = ?", (event,)
    ).fetchone()
    return None if row is None else _proposal(row)


def applied(conn: sqlite3.Connection, event: int) -> bool:
    """Say whether ``event`` applied a supersession not reverted since."""
    row = conn.execute(
        "SELECT 1 FROM supersessions WHERE event = ? AND reverted_us IS NULL LIMIT 1", (event,)
    ).fetchone()
    return row is not None


_IN_FORCE = (
    "SELECT event, agent, new, json_group_array(old), method, valid_from_us, recorded_us,"
    " reason FROM (SELECT * FROM supersessions WHERE reverted_us IS NULL{where}"
    " ORDER BY event, old)"
    " GROUP BY event ORDER BY event DESC LIMIT ?"
)


def _supersession(row: tuple[object, ...]) -> Supersession:
    event, agent, new, olds, method, valid, recorded, why = row
    return Supersession(
        int(str(event)), str(agent), int(str(new)), sorted(json.loads(str(olds))), str(method),
        int(str(valid)), int(str(recorded)), str(why),
    )  # fmt: skip


def in_force(
    conn: sqlite3.Connection, agent: str | None = None, limit: int = 50
) -> list[Supersession]:
    """Return the supersessions in force (not reverted), newest first, of ``agent``'s
    memories if given; at most ``limit``."""
    where, args = ("", []) if agent is None else (" AND agent = ?", [agent])
    sql = _IN_FORCE.format(where=where)
    return [_supersession(r) for r in conn.execute(sql, [*args, limit])]


def already(conn: sqlite3.Connection, new: int, olds: Sequence[int]) -> dict[int, int]:
    """Return, for those of ``olds`` that ``new`` replaces in a supersession in force, the
    event that applied it: saying it again would take two reverts to undo."""
    found: dict[int, int] = {}
    for chunk in chunked(sorted(set(olds))):
        marks = ",".join("?" * len(chunk))
        for old, event in conn.execute(
            f"SELECT old, event FROM supersessions WHERE new = ? AND old IN ({marks})"
            " AND reverted_us IS NULL ORDER BY event",
            [new, *chunk],
        ):
            found.setdefault(int(old), int(event))
    return found


def of_event(conn: sqlite3.Connection, event: int) -> Supersession | None:
    """Return the supersession ``event`` applied, in force or not; None when it applied none."""
    row = conn.execute(
        "SELECT event, agent, new, json_group_array(old), method, valid_from_us, recorded_us,"
        " reason FROM supersessions WHERE event = ? GROUP BY event",
        (event,),
    ).fetchone()
    return None if row is None else _supersession(row)
