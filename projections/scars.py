"""The scars table: one row per failure or victory, with its lesson and how often it served.

A scar is recorded once (``scar.recorded``) and may be archived (``scar.archived``); recall
serves it, and every served scar is named in the ``memory.recalled`` event that recorded the
recall, which this projection replays as a bump of the scar's recall count and last recall.
Scars never recalled, and old, are what archival may prune (:func:`never_recalled`).

- ``scar.recorded``: a row keyed by the event's position, with its id, agent, kind
  (``failure`` or ``victory``), what happened, the lesson, importance, learnable, visibility,
  sources and tags (JSON), and the time it was recorded;
- ``scar.archived``: each named scar not yet archived gets the archive's time (a position
  holding no scar, or an archived one, is ignored: the agent API refuses them before they
  are appended, this handler only has to be total);
- ``memory.recalled``: each scar the recall served (once per recall, however often it is
  listed) counts one more recall, and its last recall is the latest recall's time;
- ``subject.forgotten``: the subject's earlier scars keep their counters, but what happened
  and the lesson read ``[forgotten]``, as a rebuild reads them (ADR 0039).

Handlers read only their event and the table: no clock, the time is the event's (DESIGN.md,
rule 2). This module is the template for a new projection: a name, a version, the kinds it
consumes, its tables, ``create``, ``apply`` dispatching to one ``_on_<kind>`` handler per
kind, and beside them the read functions that own the table's SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engram.ledger import FORGOTTEN, Event, chunked
from engram.ledger.catalog import MemoryRecalled, ScarArchived, ScarRecorded, SubjectForgotten
from engram.projections.base import Projection, Tables
from engram.projections.counts import SQL_INT_MAX, check_count
from engram.projections.errors import QueryError
from engram.projections.salience import micros

SCAR_KINDS = ("failure", "victory")


class Scar(NamedTuple):
    """One row of the scars table; times are epoch microseconds (None: never happened)."""

    position: int
    id: str
    agent: str
    kind: str
    what: str
    lesson: str
    importance: int
    learnable: bool
    visibility: str
    sources: dict[str, object]
    tags: list[str]
    recorded_us: int
    recall_count: int
    last_recalled_us: int | None
    archived_us: int | None


_COLUMNS = (
    "position, id, agent, kind, what, lesson, importance, learnable, visibility, sources, tags,"
    " recorded_us, recall_count, last_recalled_us, archived_us"
)


class ScarsTable(Projection):
    """Failures and victories with their lessons, recall counters and archival."""

    name = "scars"
    version = 1
    kinds = (ScarRecorded, ScarArchived, MemoryRecalled, SubjectForgotten)
    tables = ("scars",)

    def create(self, db: Tables) -> None:
        """Create the scars table and the indexes its read functions use."""
        table = db["scars"]
        db.conn.execute(
            f"""CREATE TABLE {table} (
                position         INTEGER PRIMARY KEY,
                id               TEXT NOT NULL UNIQUE,
                agent            TEXT NOT NULL,
                kind             TEXT NOT NULL,
                what             TEXT NOT NULL,
                lesson           TEXT NOT NULL,
                importance       INTEGER NOT NULL,
                learnable        INTEGER NOT NULL,
                visibility       TEXT NOT NULL,
                sources          TEXT NOT NULL,
                tags             TEXT NOT NULL,
                recorded_us      INTEGER NOT NULL,
                recall_count     INTEGER NOT NULL DEFAULT 0,
                last_recalled_us INTEGER,
                archived_us      INTEGER
            )"""
        )
        name = table.strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_kind" ON {table} (kind, recorded_us)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply each event, in position order, through its kind's handler."""
        for e in events:
            if e.kind == "scar.recorded":
                self._on_scar_recorded(db, e)
            elif e.kind == "scar.archived":
                self._on_scar_archived(db, e)
            elif e.kind == "subject.forgotten":
                self._on_subject_forgotten(db, e)
            else:
                self._on_memory_recalled(db, e)

    def _on_scar_recorded(self, db: Tables, e: Event) -> None:
        p: ScarRecorded = e.payload
        db.conn.execute(
            f"INSERT INTO {db['scars']} (position, id, agent, kind, what, lesson, importance,"
            " learnable, visibility, sources, tags, recorded_us)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.position,
                e.id,
                p.agent,
                p.kind,
                p.what,
                p.lesson,
                p.importance,
                int(p.learnable),
                p.visibility,
                msgspec.json.encode(p.sources).decode(),
                json.dumps(p.tags, ensure_ascii=False),
                micros(e.at),
            ),
        )

    def _on_scar_archived(self, db: Tables, e: Event) -> None:
        p: ScarArchived = e.payload
        db.conn.executemany(
            f"UPDATE {db['scars']} SET archived_us = ? WHERE position = ? AND archived_us IS NULL",
            [(micros(e.at), position) for position in p.positions],
        )

    def _on_subject_forgotten(self, db: Tables, e: Event) -> None:
        p: SubjectForgotten = e.payload
        db.conn.execute(
            f"UPDATE {db['scars']} SET what = ?, lesson = ? WHERE agent = ? AND position < ?",
            (FORGOTTEN, FORGOTTEN, p.subject, e.position),
        )

    def _on_memory_recalled(self, db: Tables, e: Event) -> None:
        p: MemoryRecalled = e.payload
        at = micros(e.at)
        # max(): a recall whose time is older than the last one does not move it back.
        db.conn.executemany(
            f"UPDATE {db['scars']} SET recall_count = recall_count + 1,"
            " last_recalled_us = max(coalesce(last_recalled_us, ?), ?) WHERE position = ?",
            [(at, at, position) for position in dict.fromkeys(i.position for i in p.items)],
        )


# -- read functions (over the live view, from ProjectionEngine.read) ---------------------------


def _scar(row: Sequence[object]) -> Scar:
    values = list(row)
    values[7] = bool(values[7])
    values[9] = json.loads(str(values[9]))
    values[10] = json.loads(str(values[10]))
    return Scar(*values)  # type: ignore[arg-type]


def get(conn: sqlite3.Connection, key: int | str) -> Scar | None:
    """Return the scar recorded at a position (int) or by an event id (str), None if none."""
    if isinstance(key, bool) or not isinstance(key, int | str):
        raise QueryError(f"a scar is named by a position or an event id, got {key!r}")
    if isinstance(key, int) and not 0 < key <= SQL_INT_MAX:
        return None  # no position holds it (SQLite could not even bind a larger one)
    column = "position" if isinstance(key, int) else "id"
    row = conn.execute(f"SELECT {_COLUMNS} FROM scars WHERE {column} = ?", (key,)).fetchone()
    return None if row is None else _scar(row)


def by_positions(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, Scar]:
    """Return the scars at ``positions`` (archived ones included), by position."""
    found: dict[int, Scar] = {}
    for chunk in chunked(sorted(set(positions))):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM scars WHERE position IN ({marks})", list(chunk)
        ):
            scar = _scar(row)
            found[scar.position] = scar
    return found


def list_scars(
    conn: sqlite3.Connection,
    *,
    kind: str | None = None,
    agent: str | None = None,
    learnable: bool | None = None,
    archived: bool | None = False,
    limit: int | None = None,
) -> list[Scar]:
    """Return scars, newest first, filtered by kind, agent, learnable and archival.

    ``archived``: False (default) live scars only, True archived ones only, None both.
    """
    if kind is not None and kind not in SCAR_KINDS:
        raise QueryError(f"kind must be one of {list(SCAR_KINDS)}, got {kind!r}")
    if limit is not None:
        check_count(limit, "limit")
    where: list[str] = []
    params: list[object] = []
    for column, value in (("kind", kind), ("agent", agent)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if learnable is not None:
        where.append("learnable = ?")
        params.append(int(learnable))
    if archived is not None:
        where.append("archived_us IS NOT NULL" if archived else "archived_us IS NULL")
    sql = f"SELECT {_COLUMNS} FROM scars"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY position DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [_scar(row) for row in conn.execute(sql, params)]


def never_recalled(conn: sqlite3.Connection, recorded_before_us: int) -> list[Scar]:
    """Return the live scars recorded before a time (epoch microseconds) and never recalled:
    what archival may prune."""
    return [
        _scar(row)
        for row in conn.execute(
            f"SELECT {_COLUMNS} FROM scars WHERE recall_count = 0 AND archived_us IS NULL"
            " AND recorded_us < ? ORDER BY position",
            (recorded_before_us,),
        )
    ]


def agents(conn: sqlite3.Connection) -> list[str]:
    """Return every agent that recorded a scar the table holds, sorted."""
    return [str(a) for (a,) in conn.execute("SELECT DISTINCT agent FROM scars ORDER BY agent")]
