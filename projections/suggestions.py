"""The lessons queue: suggestions under human review, and the scars waiting for one.

Tables:

- ``suggestions``: one row per ``suggestion.proposed`` (keyed by its event id) with its
  destination, text, diff, drafter and scars, its status (``pending``, ``applied``,
  ``refused``, ``modified``), the review (reviewer, note, final text) and, once written to a
  file, where (``suggestion.written``);
- ``suggestion_scars``: which scars each suggestion came from;
- ``learning``: one row per ``scar.recorded`` with what the learning step needs (its
  lesson, importance, whether it is learnable and archived) and, from
  ``suggestion.deferred``, how often drafting failed and the last reason (``subject.forgotten``
  turns the subject's earlier what and lesson into ``[forgotten]``, ADR 0039);
- ``ignored``: the events that reached the ledger but break the lifecycle, with why.

A review may send the suggestion to another destination than drafted (``destination`` on
``suggestion.reviewed``, applied or modified only): the row's destination becomes it.
``suggestion.joined`` adds later scars of the same mistake to a suggestion, whatever its
status (ADR 0056): they are named by it from then on, and its status stays.

The lifecycle: a suggestion is ``pending`` until its **first legal review**. A review of a
suggestion that is not pending (reviewing twice, applying a refused one), of an id no
earlier ``suggestion.proposed`` holds, or ``modified`` without a text, changes nothing and
is listed in ``ignored``: the API refuses these before appending, but the ledger also
accepts raw appends, and a projection must neither crash nor let a later event undo a
decision. ``applied`` takes the suggestion's own text as final; ``modified`` the
reviewer's. A ``suggestion.written`` counts only for an applied or modified suggestion not
written yet.

The learning queue holds learnable public scars, not archived, that no suggestion names
(whatever that suggestion's status: a refused lesson is not drafted again), by importance
then age. A private scar is never queued: a suggestion and the rule it becomes are the
team's.

A post-project lesson (drafter :data:`BUNDLE_DRAFTER`) names every scar of its project as
evidence of the project, not as the source of its text: it leaves a scar in the learning
queue, takes no repeat as a member, and its review says nothing of a scar's own lesson
(ADR 0145).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from engram.ledger import FORGOTTEN, Event
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore, physical

STATUSES = ("pending", "applied", "refused", "modified")
NAME = "suggestions"


class Suggestion(NamedTuple):
    """One suggestion and where it stands."""

    id: str
    position: int
    destination: str
    text: str
    diff: dict[str, str] | None  # {"path", "before", "after"} when it edits a file
    drafter: str
    scars: list[str]
    status: str
    reviewer: str | None
    note: str | None
    final_text: str | None
    reviewed_position: int | None
    written_path: str | None
    written_position: int | None


class Waiting(NamedTuple):
    """A learnable scar no suggestion names yet, with its drafting failures if any."""

    id: str
    position: int
    agent: str
    kind: str
    what: str
    lesson: str
    importance: int
    deferrals: int
    last_reason: str | None


class SuggestionQueue(Projection):
    """The suggestions' lifecycle and the scars waiting to be learned."""

    name = NAME
    version = 2
    kinds = (
        "scar.recorded",
        "scar.archived",
        "suggestion.proposed",
        "suggestion.joined",
        "suggestion.reviewed",
        "suggestion.deferred",
        "suggestion.written",
        "subject.forgotten",
    )
    tables = ("suggestions", "suggestion_scars", "learning", "ignored")

    def create(self, db: Tables) -> None:
        """Create the tables."""
        # One statement per execute: executescript would commit the engine's transaction.
        script = f"""
            CREATE TABLE {db["suggestions"]} (
                id TEXT PRIMARY KEY, position INTEGER NOT NULL, destination TEXT NOT NULL,
                text TEXT NOT NULL, diff TEXT, drafter TEXT NOT NULL, scars TEXT NOT NULL,
                proposed_us INTEGER NOT NULL, status TEXT NOT NULL, reviewer TEXT, note TEXT,
                final_text TEXT, reviewed_position INTEGER, reviewed_us INTEGER,
                written_path TEXT, written_mode TEXT, written_sha256 TEXT,
                written_position INTEGER);
            CREATE TABLE {db["suggestion_scars"]} (
                scar TEXT NOT NULL, suggestion TEXT NOT NULL, PRIMARY KEY (scar, suggestion));
            CREATE TABLE {db["learning"]} (
                id TEXT PRIMARY KEY, position INTEGER NOT NULL, agent TEXT NOT NULL,
                kind TEXT NOT NULL, what TEXT NOT NULL, lesson TEXT NOT NULL,
                importance INTEGER NOT NULL, learnable INTEGER NOT NULL,
                visibility TEXT NOT NULL, recorded_us INTEGER NOT NULL, archived_us INTEGER,
                deferrals INTEGER NOT NULL DEFAULT 0, last_reason TEXT, last_drafter TEXT,
                last_deferred_us INTEGER);
            CREATE TABLE {db["ignored"]} (
                position INTEGER PRIMARY KEY, kind TEXT NOT NULL, suggestion TEXT,
                reason TEXT NOT NULL);
            """
        for statement in script.split(";"):
            if statement.strip():
                db.conn.execute(statement)

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Dispatch each event to its kind's handler, in position order."""
        for e in events:
            getattr(self, "_" + e.kind.replace(".", "_"))(db, e)

    def _scar_recorded(self, db: Tables, e: Event) -> None:
        p = e.payload
        db.conn.execute(
            f"INSERT INTO {db['learning']} (id, position, agent, kind, what, lesson, importance,"
            " learnable, visibility, recorded_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.id,
                e.position,
                p.agent,
                p.kind,
                p.what,
                p.lesson,
                p.importance,
                int(p.learnable),
                p.visibility,
                micros(e.at),
            ),
        )

    def _subject_forgotten(self, db: Tables, e: Event) -> None:
        # ADR 0039: the subject's scars read [forgotten], here as in a rebuild.
        db.conn.execute(
            f"UPDATE {db['learning']} SET what = ?, lesson = ? WHERE agent = ? AND position < ?",
            (FORGOTTEN, FORGOTTEN, e.payload.subject, e.position),
        )

    def _scar_archived(self, db: Tables, e: Event) -> None:
        db.conn.executemany(
            f"UPDATE {db['learning']} SET archived_us = ?"
            " WHERE position = ? AND archived_us IS NULL",
            [(micros(e.at), position) for position in e.payload.positions],
        )

    def _suggestion_proposed(self, db: Tables, e: Event) -> None:
        p = e.payload
        diff = None
        if p.diff is not None:
            diff = json.dumps({"path": p.diff.path, "before": p.diff.before, "after": p.diff.after})
        db.conn.execute(
            f"INSERT INTO {db['suggestions']} (id, position, destination, text, diff, drafter,"
            " scars, proposed_us, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
            (
                e.id,
                e.position,
                p.destination,
                p.text,
                diff,
                p.drafter,
                json.dumps(p.scars),
                micros(e.at),
            ),
        )
        db.conn.executemany(
            f"INSERT OR IGNORE INTO {db['suggestion_scars']} (scar, suggestion) VALUES (?, ?)",
            [(scar, e.id) for scar in p.scars],
        )

    def _suggestion_joined(self, db: Tables, e: Event) -> None:
        p = e.payload
        row = db.conn.execute(
            f"SELECT scars FROM {db['suggestions']} WHERE id = ?", (p.suggestion,)
        ).fetchone()
        if row is None:
            self._ignore(db, e, p.suggestion, "no such suggestion")
            return
        scars = list(dict.fromkeys([*json.loads(row[0]), *p.scars]))
        db.conn.execute(
            f"UPDATE {db['suggestions']} SET scars = ? WHERE id = ?",
            (json.dumps(scars), p.suggestion),
        )
        db.conn.executemany(
            f"INSERT OR IGNORE INTO {db['suggestion_scars']} (scar, suggestion) VALUES (?, ?)",
            [(scar, p.suggestion) for scar in p.scars],
        )

    def _suggestion_reviewed(self, db: Tables, e: Event) -> None:
        p = e.payload
        row = db.conn.execute(
            f"SELECT status, text FROM {db['suggestions']} WHERE id = ?", (p.suggestion,)
        ).fetchone()
        problem = review_problem(None if row is None else row[0], p.decision, p.text)
        if problem is not None:
            self._ignore(db, e, p.suggestion, problem)
            return
        final = {"applied": row[1], "modified": p.text, "refused": None}[p.decision]
        db.conn.execute(
            f"UPDATE {db['suggestions']} SET status = ?, reviewer = ?, note = ?, final_text = ?,"
            " reviewed_position = ?, reviewed_us = ?, destination = coalesce(?, destination)"
            " WHERE id = ?",
            (
                p.decision,
                p.reviewer,
                p.note,
                final,
                e.position,
                micros(e.at),
                p.destination if p.decision != "refused" else None,
                p.suggestion,
            ),
        )

    def _suggestion_deferred(self, db: Tables, e: Event) -> None:
        p = e.payload
        db.conn.executemany(
            f"UPDATE {db['learning']} SET deferrals = deferrals + 1, last_reason = ?,"
            " last_drafter = ?, last_deferred_us = ? WHERE id = ?",
            [(p.reason, p.drafter, micros(e.at), scar) for scar in dict.fromkeys(p.scars)],
        )

    def _suggestion_written(self, db: Tables, e: Event) -> None:
        p = e.payload
        row = db.conn.execute(
            f"SELECT status, written_position FROM {db['suggestions']} WHERE id = ?",
            (p.suggestion,),
        ).fetchone()
        if row is None:
            problem = "no such suggestion"
        elif row[0] not in ("applied", "modified"):
            problem = f"written while {row[0]}"
        elif row[1] is not None:
            problem = f"written already at position {row[1]}"
        else:
            db.conn.execute(
                f"UPDATE {db['suggestions']} SET written_path = ?, written_mode = ?,"
                " written_sha256 = ?, written_position = ? WHERE id = ?",
                (p.path, p.mode, p.sha256, e.position, p.suggestion),
            )
            return
        self._ignore(db, e, p.suggestion, problem)

    @staticmethod
    def _ignore(db: Tables, e: Event, suggestion: str, reason: str) -> None:
        db.conn.execute(
            f"INSERT INTO {db['ignored']} (position, kind, suggestion, reason) VALUES (?, ?, ?, ?)",
            (e.position, e.kind, suggestion, reason),
        )


def review_problem(status: str | None, decision: str, text: str | None) -> str | None:
    """Say why a review of a suggestion in ``status`` (None: unknown) is illegal, or None.

    The one rule the projections and the API share: only a pending suggestion is reviewed,
    and ``modified`` needs a non-blank text.
    """
    if status is None:
        return "no such suggestion"
    if status != "pending":
        return f"reviewed already ({status})"
    if decision == "modified" and (text is None or not text.strip()):
        return "modified without a text"
    return None


# -- reads ------------------------------------------------------------------------------------

_COLUMNS = (
    "id, position, destination, text, diff, drafter, scars, status, reviewer, note,"
    " final_text, reviewed_position, written_path, written_position"
)


def _suggestion(row: Sequence[object]) -> Suggestion:
    values = list(row)
    values[4] = json.loads(str(values[4])) if values[4] is not None else None
    values[6] = json.loads(str(values[6]))
    return Suggestion(*values)  # type: ignore[arg-type]


def get(conn: sqlite3.Connection, suggestion: str) -> Suggestion | None:
    """Return the suggestion whose ``suggestion.proposed`` event has id ``suggestion``."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM {_table(conn, 'suggestions')} WHERE id = ?", (suggestion,)
    ).fetchone()
    return None if row is None else _suggestion(row)


def find(conn: sqlite3.Connection, prefix: str) -> list[str]:
    """Return the ids of the suggestions whose id starts with ``prefix`` (at most 10)."""
    if not isinstance(prefix, str) or not prefix:
        raise QueryError(f"a suggestion id or prefix must be a non-empty str, got {prefix!r}")
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        f"SELECT id FROM {_table(conn, 'suggestions')} WHERE id LIKE ? ESCAPE '\\'"
        " ORDER BY position LIMIT 10",
        (escaped + "%",),
    )
    return [str(r[0]) for r in rows]


def listing(
    conn: sqlite3.Connection, status: Sequence[str] | None = None, limit: int | None = None
) -> list[Suggestion]:
    """Return suggestions in proposal order, only of ``status`` when given."""
    statuses = list(status or ())
    unknown = sorted(set(statuses) - set(STATUSES))
    if unknown:
        raise QueryError(f"unknown status {unknown}; statuses are {list(STATUSES)}")
    if limit is not None:
        check_count(limit, "limit", "a positive int or None")
    sql = f"SELECT {_COLUMNS} FROM {_table(conn, 'suggestions')}"
    if statuses:
        sql += f" WHERE status IN ({','.join('?' * len(statuses))})"
    sql += " ORDER BY position"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [_suggestion(r) for r in conn.execute(sql, statuses)]


#: The drafter of post-project lessons: a bundle of a project's scars, not one lesson's draft.
BUNDLE_DRAFTER = "postproject"
#: The SQL test of a suggestion row ``s`` drawn from its scars' lessons (not a bundle).
_DRAWN = f"s.drafter NOT IN ('{BUNDLE_DRAFTER}', '{BUNDLE_DRAFTER}:model')"


def waiting(conn: sqlite3.Connection, limit: int | None = None) -> list[Waiting]:
    """Return the learning queue: learnable, live, public scars no suggestion names, by
    importance. A private scar stays its agent's own: a suggestion is the team's (its text is
    not sealed, and an applied rule is served to every agent), so no private scar is drafted
    into one or joins one."""
    learning, links = _table(conn, "learning"), _table(conn, "suggestion_scars")
    table = _table(conn, "suggestions")
    sql = (
        f"SELECT id, position, agent, kind, what, lesson, importance, deferrals, last_reason"
        f" FROM {learning} AS l WHERE learnable = 1 AND archived_us IS NULL"
        " AND visibility = 'public'"
        f" AND NOT EXISTS (SELECT 1 FROM {links} AS k JOIN {table} AS s"
        f" ON s.id = k.suggestion WHERE k.scar = l.id AND {_DRAWN})"
        " ORDER BY importance DESC, position"
    )
    if limit is not None:
        check_count(limit, "limit", "a positive int or None")
        sql += f" LIMIT {int(limit)}"
    return [Waiting(*row) for row in conn.execute(sql)]


class Member(NamedTuple):
    """A scar a suggestion names, with the suggestion's status: what a repeat may join."""

    suggestion: str
    status: str
    scar: str
    position: int
    what: str
    lesson: str
    #: The scar's outcome (``failure``, ``victory``, ...): a repeat is of one outcome.
    kind: str


def members(conn: sqlite3.Connection) -> list[Member]:
    """Return every live scar named by a suggestion drawn from lessons (a post-project lesson
    takes no repeat), by the suggestion's position."""
    table, links = _table(conn, "suggestions"), _table(conn, "suggestion_scars")
    learning = _table(conn, "learning")
    rows = conn.execute(
        f"SELECT s.id, s.status, l.id, l.position, l.what, l.lesson, l.kind FROM {links} AS k"
        f" JOIN {table} AS s ON s.id = k.suggestion JOIN {learning} AS l ON l.id = k.scar"
        f" WHERE l.archived_us IS NULL AND {_DRAWN} ORDER BY s.position, l.position"
    )
    return [Member(*row) for row in rows]


def refused_scars(conn: sqlite3.Connection, ids: Sequence[str]) -> set[str]:
    """Return those of ``ids`` whose lesson was refused: every suggestion drawn from lessons
    naming them was (a post-project lesson's review is of the project's lesson, ADR 0145)."""
    table, links = _table(conn, "suggestions"), _table(conn, "suggestion_scars")
    out: set[str] = set()
    for scar in dict.fromkeys(ids):
        statuses = {
            str(r[0])
            for r in conn.execute(
                f"SELECT s.status FROM {links} AS k JOIN {table} AS s ON s.id = k.suggestion"
                f" WHERE k.scar = ? AND {_DRAWN}",
                (scar,),
            )
        }
        if statuses == {"refused"}:
            out.add(scar)
    return out


def scar_texts(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Return (what happened, lesson) of each of ``ids`` that is a recorded scar."""
    table = _table(conn, "learning")
    out: dict[str, tuple[str, str]] = {}
    for scar in dict.fromkeys(ids):
        row = conn.execute(f"SELECT what, lesson FROM {table} WHERE id = ?", (scar,)).fetchone()
        if row is not None:
            out[scar] = (str(row[0]), str(row[1]))
    return out


def known_scars(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, bool]:
    """Return, for each of ``ids`` that is a recorded scar, whether it is archived."""
    table = _table(conn, "learning")
    found: dict[str, bool] = {}
    for scar in dict.fromkeys(ids):
        row = conn.execute(f"SELECT archived_us FROM {table} WHERE id = ?", (scar,)).fetchone()
        if row is not None:
            found[scar] = row[0] is not None
    return found


def ignored(conn: sqlite3.Connection, suggestion: str | None = None) -> list[tuple[int, str, str]]:
    """Return (position, kind, reason) of the ignored lifecycle events, of one suggestion or all."""
    table = _table(conn, "ignored")
    sql = f"SELECT position, kind, reason FROM {table}"
    params: list[object] = []
    if suggestion is not None:
        sql += " WHERE suggestion = ?"
        params.append(suggestion)
    return [
        (int(p), str(k), str(r)) for p, k, r in conn.execute(sql + " ORDER BY position", params)
    ]


def _table(conn: sqlite3.Connection, table: str) -> str:
    generation = ProjectionStore.live_generation(conn, NAME)
    if generation is None:
        raise UnknownProjectionError(f"projection {NAME!r} is not in this store")
    return physical(generation, table)
