"""The reflections projection: beliefs with their provenance, and when each agent is due.

One row per ``memory.reflected`` event, keyed by its ledger position, with its agent, text,
depth, focal question and time, and its evidence in order. Each evidence id is resolved, when
the event is applied, against the observations and reflections before it in the ledger (the
kinds this projection consumes): its position and depth (0 for an observation, the stated
depth for a reflection), or NULL for an id that names no earlier event of those kinds. So
"does every belief rest on real events, and is its depth 1 + the deepest of them" is a
question of this projection's rows (:func:`unsupported`). ``subject.forgotten`` turns the
text and the focal question of the subject's earlier reflections into ``[forgotten]``, as a
rebuild reads them (ADR 0039); ``reflection.retracted`` does the same to the reflections it
names, drawn from a forgotten subject's memories (ADR 0110). :func:`drawn_from` finds them.

The trigger state, per agent, is what happened since the agent's last reflection (the latest
``memory.reflected`` whose ``agent`` it is, by position; the start of the ledger when there
is none):

- ``visible``: the ``memory.observed`` events after it that the agent can see — its own,
  whatever their visibility, and every public one, whoever observed it. Other agents'
  private observations, recalls, archivals and other agents' reflections do not count.
- ``importance``: the sum of those observations' ``importance``; an observation stored
  without one counts :data:`MISSING_IMPORTANCE` (the neutral value recall also uses), since
  a projection cannot run the scorer that ``observe`` would have run.

Archiving a memory later does not take it back out of the counts: they count arrivals. The
projection stores counters only; the agents layer decides "due" from them and the settings
(``reflect_every``, ``reflect_importance``). Counters are cumulative per audience (public,
and each agent's private ones) with a snapshot at each agent's last reflection, so a public
observation is one row update however many agents there are, and an agent that never
observed anything still has an answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from engram.ledger import FORGOTTEN, Event
from engram.ledger.catalog import (
    MemoryObserved,
    MemoryReflected,
    ReflectionRetracted,
    SubjectForgotten,
)
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore

#: What an observation stored without an importance adds to the importance sum.
MISSING_IMPORTANCE = 5
#: The audience key of public observations (an agent's name is never empty).
PUBLIC = ""


class Reflection(NamedTuple):
    """One reflection: the ``memory.reflected`` event's position, id and payload fields."""

    position: int
    id: str
    agent: str
    text: str
    depth: int
    question: str
    importance: int | None
    visibility: str
    at_us: int


class Evidence(NamedTuple):
    """One evidence id of a reflection, resolved when it is a known earlier event.

    ``position`` and ``depth`` are None when the id names no earlier observation or
    reflection; ``depth`` is 0 for an observation.
    """

    ordinal: int
    id: str
    position: int | None
    depth: int | None


class TriggerState(NamedTuple):
    """What happened, visible to an agent, since its last reflection."""

    agent: str
    last_position: int  # 0: the agent has never reflected
    last_at_us: int | None
    visible: int
    importance: int


class Reflections(Projection):
    """Reflections with their evidence; per-agent counters since the last reflection."""

    name = "reflections"
    version = 2  # 2: a forgotten subject's focal questions go with its texts
    kinds = (MemoryObserved, MemoryReflected, SubjectForgotten, ReflectionRetracted)
    tables = (
        "reflections",
        "reflection_evidence",
        "reflection_items",
        "reflection_seen",
        "reflection_marks",
    )

    def create(self, db: Tables) -> None:
        """Create the reflections, evidence, known-items and counter tables."""
        db.conn.execute(
            f"""CREATE TABLE {db["reflections"]} (
                position   INTEGER PRIMARY KEY,
                id         TEXT NOT NULL UNIQUE,
                agent      TEXT NOT NULL,
                text       TEXT NOT NULL,
                depth      INTEGER NOT NULL,
                question   TEXT NOT NULL,
                importance INTEGER,
                visibility TEXT NOT NULL,
                at_us      INTEGER NOT NULL
            )"""
        )
        name = db["reflections"].strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_agent" ON {db["reflections"]} (agent, position)')
        db.conn.execute(
            f"""CREATE TABLE {db["reflection_evidence"]} (
                reflection INTEGER NOT NULL,
                ordinal    INTEGER NOT NULL,
                evidence   TEXT NOT NULL,
                position   INTEGER,
                depth      INTEGER,
                PRIMARY KEY (reflection, ordinal)
            ) WITHOUT ROWID"""
        )
        name = db["reflection_evidence"].strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_evidence" ON {db["reflection_evidence"]} (evidence)')
        # Every event evidence may cite: its id, position and depth (0: an observation).
        db.conn.execute(
            f"""CREATE TABLE {db["reflection_items"]} (
                id       TEXT PRIMARY KEY,
                position INTEGER NOT NULL,
                depth    INTEGER NOT NULL
            ) WITHOUT ROWID"""
        )
        # Cumulative observations per audience: PUBLIC, or the agent whose private ones.
        db.conn.execute(
            f"""CREATE TABLE {db["reflection_seen"]} (
                audience   TEXT PRIMARY KEY,
                count      INTEGER NOT NULL,
                importance INTEGER NOT NULL
            ) WITHOUT ROWID"""
        )
        # Each agent's last reflection, and the counters as they stood right after it.
        db.conn.execute(
            f"""CREATE TABLE {db["reflection_marks"]} (
                agent             TEXT PRIMARY KEY,
                position          INTEGER NOT NULL,
                at_us             INTEGER NOT NULL,
                public_count      INTEGER NOT NULL,
                public_importance INTEGER NOT NULL,
                own_count         INTEGER NOT NULL,
                own_importance    INTEGER NOT NULL
            ) WITHOUT ROWID"""
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply a batch: counters kept in memory for the batch, written back once."""
        seen: dict[str, list[int]] = {}  # audience -> [count, importance], touched ones

        def counters(audience: str) -> list[int]:
            if audience not in seen:
                row = db.conn.execute(
                    f"SELECT count, importance FROM {db['reflection_seen']} WHERE audience = ?",
                    (audience,),
                ).fetchone()
                seen[audience] = [0, 0] if row is None else [int(row[0]), int(row[1])]
            return seen[audience]

        for e in events:
            p = e.payload
            if e.kind == "memory.observed":
                audience = PUBLIC if p.visibility == "public" else p.agent
                c = counters(audience)
                c[0] += 1
                c[1] += MISSING_IMPORTANCE if p.importance is None else p.importance
                self._item(db, e.id, e.position, 0)
            elif e.kind == "subject.forgotten":  # ADR 0039: text goes, provenance stays
                db.conn.execute(
                    f"UPDATE {db['reflections']} SET text = ?, question = ?"
                    " WHERE agent = ? AND position < ?",
                    (FORGOTTEN, FORGOTTEN, p.subject, e.position),
                )
            elif e.kind == "reflection.retracted":  # ADR 0110: drawn from forgotten content
                db.conn.executemany(
                    f"UPDATE {db['reflections']} SET text = ?, question = ?"
                    " WHERE position = ? AND position < ?",
                    [(FORGOTTEN, FORGOTTEN, position, e.position) for position in p.positions],
                )
            else:
                self._reflection(db, e, counters(PUBLIC), counters(p.agent))
        db.conn.executemany(
            f"INSERT INTO {db['reflection_seen']} (audience, count, importance) VALUES (?, ?, ?)"
            " ON CONFLICT (audience) DO UPDATE SET count = excluded.count,"
            " importance = excluded.importance",
            [(audience, c[0], c[1]) for audience, c in seen.items()],
        )

    @staticmethod
    def _item(db: Tables, id: str, position: int, depth: int) -> None:
        db.conn.execute(
            f"INSERT INTO {db['reflection_items']} (id, position, depth) VALUES (?, ?, ?)",
            (id, position, depth),
        )

    def _reflection(self, db: Tables, e: Event, public: list[int], own: list[int]) -> None:
        p = e.payload
        at = micros(e.at)
        db.conn.execute(
            f"INSERT INTO {db['reflections']} (position, id, agent, text, depth, question,"
            " importance, visibility, at_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.position,
                e.id,
                p.agent,
                p.text,
                p.depth,
                p.question,
                p.importance,
                p.visibility,
                at,
            ),
        )
        rows = []
        for ordinal, evidence in enumerate(p.evidence):
            found = db.conn.execute(
                f"SELECT position, depth FROM {db['reflection_items']} WHERE id = ?", (evidence,)
            ).fetchone()
            position, depth = (None, None) if found is None else found
            rows.append((e.position, ordinal, evidence, position, depth))
        db.conn.executemany(
            f"INSERT INTO {db['reflection_evidence']} (reflection, ordinal, evidence, position,"
            " depth) VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        self._item(db, e.id, e.position, p.depth)
        db.conn.execute(
            f"INSERT INTO {db['reflection_marks']} (agent, position, at_us, public_count,"
            " public_importance, own_count, own_importance) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (agent) DO UPDATE SET position = excluded.position,"
            " at_us = excluded.at_us, public_count = excluded.public_count,"
            " public_importance = excluded.public_importance,"
            " own_count = excluded.own_count, own_importance = excluded.own_importance",
            (p.agent, e.position, at, public[0], public[1], own[0], own[1]),
        )


# -- reads ------------------------------------------------------------------------------------

_COLUMNS = "position, id, agent, text, depth, question, importance, visibility, at_us"


def by_agent(
    conn: sqlite3.Connection, agent: str | None = None, *, limit: int | None = None
) -> list[Reflection]:
    """Return the reflections of ``agent`` (every agent's when None), newest first."""
    _check(conn)
    sql = f"SELECT {_COLUMNS} FROM reflections"
    params: list[object] = []
    if agent is not None:
        _name(agent, "agent")
        sql += " WHERE agent = ?"
        params.append(agent)
    sql += " ORDER BY position DESC"
    if limit is not None:
        check_count(limit, "limit")
        sql += " LIMIT ?"
        params.append(limit)
    return [Reflection(*row) for row in conn.execute(sql, params)]


def by_id(conn: sqlite3.Connection, id: str) -> Reflection | None:
    """Return the reflection whose event id is ``id``, or None."""
    _check(conn)
    _name(id, "id")
    row = conn.execute(f"SELECT {_COLUMNS} FROM reflections WHERE id = ?", (id,)).fetchone()
    return None if row is None else Reflection(*row)


def by_position(conn: sqlite3.Connection, position: int) -> Reflection | None:
    """Return the reflection appended at ledger ``position``, or None."""
    _check(conn)
    check_count(position, "position", "a ledger position (an int >= 1)")
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM reflections WHERE position = ?", (position,)
    ).fetchone()
    return None if row is None else Reflection(*row)


def evidence(conn: sqlite3.Connection, reflection: int) -> list[Evidence]:
    """Return the evidence of the reflection at position ``reflection``, in its order."""
    _check(conn)
    return [
        Evidence(*row)
        for row in conn.execute(
            "SELECT ordinal, evidence, position, depth FROM reflection_evidence"
            " WHERE reflection = ? ORDER BY ordinal",
            (reflection,),
        )
    ]


def cited(conn: sqlite3.Connection) -> list[int]:
    """Return the ledger positions some reflection cites as evidence, in order."""
    _check(conn)
    rows = conn.execute(
        "SELECT DISTINCT position FROM reflection_evidence WHERE position IS NOT NULL"
        " ORDER BY position"
    )
    return [int(r[0]) for r in rows]


def drawn_from(conn: sqlite3.Connection, positions: Sequence[int]) -> list[int]:
    """Return the reflections drawn from the items at ``positions``: those citing one, and
    the reflections drawn from those, at any depth (ADR 0110), by position; ``positions``
    themselves left out."""
    _check(conn)
    citing: dict[int, set[int]] = {}
    for reflection, position in conn.execute(
        "SELECT reflection, position FROM reflection_evidence WHERE position IS NOT NULL"
    ):
        citing.setdefault(int(position), set()).add(int(reflection))
    seen, frontier = set(positions), list(positions)
    while frontier:
        found = citing.get(frontier.pop(), set()) - seen
        seen |= found
        frontier.extend(found)
    return sorted(seen - set(positions))


def unsupported(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Return ``(position, why)`` for each reflection whose provenance does not hold.

    Either an evidence id names no earlier observation or reflection, or the stated depth is
    not 1 + the deepest of its evidence.
    """
    _check(conn)
    out = []
    for position, depth, missing, deepest in conn.execute(
        "SELECT r.position, r.depth, sum(e.position IS NULL), max(e.depth)"
        " FROM reflections r JOIN reflection_evidence e ON e.reflection = r.position"
        " GROUP BY r.position ORDER BY r.position"
    ):
        if missing:
            out.append((int(position), f"{missing} evidence id(s) name no earlier memory"))
        elif depth != deepest + 1:
            out.append((int(position), f"depth {depth}, but its deepest evidence is {deepest}"))
    return out


def trigger_state(conn: sqlite3.Connection, agent: str) -> TriggerState:
    """Return what ``agent`` can see that arrived since its last reflection."""
    _check(conn)
    _name(agent, "agent")
    totals = {
        audience: (int(count), int(importance))
        for audience, count, importance in conn.execute(
            "SELECT audience, count, importance FROM reflection_seen WHERE audience IN (?, ?)",
            (PUBLIC, agent),
        )
    }
    public = totals.get(PUBLIC, (0, 0))
    own = totals.get(agent, (0, 0))
    mark = conn.execute(
        "SELECT position, at_us, public_count, public_importance, own_count, own_importance"
        " FROM reflection_marks WHERE agent = ?",
        (agent,),
    ).fetchone()
    if mark is None:
        return TriggerState(agent, 0, None, public[0] + own[0], public[1] + own[1])
    position, at_us, public_count, public_importance, own_count, own_importance = mark
    return TriggerState(
        agent,
        int(position),
        int(at_us),
        public[0] - public_count + own[0] - own_count,
        public[1] - public_importance + own[1] - own_importance,
    )


def _name(value: object, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise QueryError(f"{what} must be a non-empty string, got {value!r}")


def _check(conn: sqlite3.Connection) -> None:
    if ProjectionStore.live_generation(conn, "reflections") is None:
        raise UnknownProjectionError("projection 'reflections' is not in this store")


def agents(conn: sqlite3.Connection) -> list[str]:
    """Return every agent that holds a reflection, sorted."""
    return [
        str(a) for (a,) in conn.execute("SELECT DISTINCT agent FROM reflections ORDER BY agent")
    ]


def marked_agents(conn: sqlite3.Connection) -> list[str]:
    """Return every agent that has reflected (a reflection mark), sorted ([] without the table)."""
    if ProjectionStore.live_generation(conn, "reflections") is None:
        return []
    return sorted(str(a) for (a,) in conn.execute("SELECT agent FROM reflection_marks"))
