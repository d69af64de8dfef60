"""The doctrine (tier 2): applied notes and skills, linked to what they came from and name.

What a reviewer applies to the ``notes_inbox`` destination becomes a *note*, to ``skill`` a
*skill* (ADR 0079): not only a file written to a folder, but a row served by recall and
context frames. The rule is the rules projection's: the first legal review that applies or
modifies a suggestion (:func:`engram.projections.suggestions.review_problem`) makes the
entry, with the review's destination winning over the drafted one. Its text is the final
text, whitespace kept (a note may run to several lines).

Every entry is linked (table ``links``), the edges a walk follows like bloom:

- ``drawn_from`` each scar it cites (the suggestion's scars, and those that joined it later);
- ``names`` each ledger event id its text quotes and each ``[[name]]`` it writes; a
  ``[[name]]`` resolves, when read, to the entries whose title (first line, case folded) is
  that name.

Tables: ``drafts`` (every suggestion, its destination and status, as the review needs
them), ``entries`` (one row per note or skill, keyed by the applying review's position),
``links`` and ``entries_text`` (FTS5 over the entries' text, keyed by that position).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engram.ledger import Event, chunked
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.lexical import TOKENIZER, match_expression, tokens
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore, physical
from engram.projections.suggestions import review_problem

NAME = "doctrine"
#: The destinations whose applied suggestions are doctrine, and the entry kind each makes.
KIND_OF = {"notes_inbox": "note", "skill": "skill"}
ENTRY_KINDS = ("note", "skill")
_EVENT_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_WIKI = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")


class Entry(NamedTuple):
    """A note or a skill: its text, where it came from, its links, and (from a query) its match."""

    position: int  # the applying review's position
    kind: str  # note | skill
    text: str
    suggestion: str
    scars: list[str]
    reviewer: str
    applied_us: int
    score: float = 0.0  # BM25 (higher is better), for a query
    match: float = 0.0  # the share of the query's distinct words the entry holds (0..1)


def title(text: str) -> str:
    """Return an entry's title: its first non-empty line, case folded, whitespace folded."""
    for line in text.splitlines():
        if line.strip():
            return " ".join(line.split()).casefold()
    return ""


def named(text: str) -> list[str]:
    """Return what a text names: the event ids it quotes, then its ``[[name]]`` links."""
    ids = [f"event:{m}" for m in _EVENT_ID.findall(text)]
    names = [f"name:{' '.join(m.split()).casefold()}" for m in _WIKI.findall(text)]
    return list(dict.fromkeys(ids + [n for n in names if n != "name:"]))


class Doctrine(Projection):
    """Applied notes and skills, their links, and their text for search."""

    name = NAME
    version = 1
    kinds = ("suggestion.proposed", "suggestion.joined", "suggestion.reviewed")
    tables = ("drafts", "entries", "links", "entries_text")

    def create(self, db: Tables) -> None:
        """Create the tables."""
        script = f"""
            CREATE TABLE {db["drafts"]} (
                id TEXT PRIMARY KEY, text TEXT NOT NULL, scars TEXT NOT NULL,
                status TEXT NOT NULL, destination TEXT NOT NULL);
            CREATE TABLE {db["entries"]} (
                position INTEGER PRIMARY KEY, kind TEXT NOT NULL, suggestion TEXT NOT NULL UNIQUE,
                text TEXT NOT NULL, title TEXT NOT NULL, scars TEXT NOT NULL,
                reviewer TEXT NOT NULL, applied_us INTEGER NOT NULL);
            CREATE TABLE {db["links"]} (
                entry INTEGER NOT NULL, target TEXT NOT NULL, rel TEXT NOT NULL,
                PRIMARY KEY (entry, target, rel));
            CREATE INDEX "{db["links"].strip('"')}_target" ON {db["links"]} (target);
            CREATE VIRTUAL TABLE {db["entries_text"]} USING fts5(text, tokenize = '{TOKENIZER}');
            """
        for statement in script.split(";"):
            if statement.strip():
                db.conn.execute(statement)

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Keep every proposal; turn the first legal applying review of a note or skill into
        an entry with its links."""
        for e in events:
            p = e.payload
            if e.kind == "suggestion.proposed":
                db.conn.execute(
                    f"INSERT INTO {db['drafts']} (id, text, scars, status, destination)"
                    " VALUES (?, ?, ?, 'pending', ?)",
                    (e.id, p.text, json.dumps(p.scars), p.destination),
                )
            elif e.kind == "suggestion.joined":
                self._joined(db, p.suggestion, p.scars)
            else:
                self._reviewed(db, e)

    def _reviewed(self, db: Tables, e: Event) -> None:
        p = e.payload
        row = db.conn.execute(
            f"SELECT status, text, scars, destination FROM {db['drafts']} WHERE id = ?",
            (p.suggestion,),
        ).fetchone()
        if row is None or review_problem(row[0], p.decision, p.text) is not None:
            return  # unknown, or illegal: the suggestions queue lists it
        db.conn.execute(
            f"UPDATE {db['drafts']} SET status = ?, destination = ? WHERE id = ?",
            (p.decision, p.destination or row[3], p.suggestion),
        )
        kind = KIND_OF.get(p.destination or row[3])
        if p.decision == "refused" or kind is None:
            return
        text = row[1] if p.decision == "applied" else p.text
        db.conn.execute(
            f"INSERT INTO {db['entries']} (position, kind, suggestion, text, title, scars,"
            " reviewer, applied_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (e.position, kind, p.suggestion, text, title(text), row[2], p.reviewer, micros(e.at)),
        )
        db.conn.execute(
            f"INSERT INTO {db['entries_text']} (rowid, text) VALUES (?, ?)", (e.position, text)
        )
        links = [(f"scar:{s}", "drawn_from") for s in json.loads(row[2])]
        links += [(target, "names") for target in named(text)]
        db.conn.executemany(
            f"INSERT OR IGNORE INTO {db['links']} (entry, target, rel) VALUES (?, ?, ?)",
            [(e.position, target, rel) for target, rel in links],
        )

    @staticmethod
    def _joined(db: Tables, suggestion: str, scars: Sequence[str]) -> None:
        row = db.conn.execute(
            f"SELECT scars FROM {db['drafts']} WHERE id = ?", (suggestion,)
        ).fetchone()
        if row is None:
            return
        joined = json.dumps(list(dict.fromkeys([*json.loads(row[0]), *scars])))
        db.conn.execute(f"UPDATE {db['drafts']} SET scars = ? WHERE id = ?", (joined, suggestion))
        entry = db.conn.execute(
            f"SELECT position FROM {db['entries']} WHERE suggestion = ?", (suggestion,)
        ).fetchone()
        if entry is not None:
            db.conn.execute(
                f"UPDATE {db['entries']} SET scars = ? WHERE position = ?", (joined, entry[0])
            )
            db.conn.executemany(
                f"INSERT OR IGNORE INTO {db['links']} (entry, target, rel)"
                " VALUES (?, ?, 'drawn_from')",
                [(entry[0], f"scar:{s}") for s in scars],
            )

    def digest(self, db: Tables) -> str:
        """Digest the tables' rows, the FTS5 rowids included."""
        h = hashlib.sha256()
        for table, columns, order in (
            ("drafts", "*", "1"),
            ("entries", "*", "1"),
            ("links", "*", "1, 2, 3"),
            ("entries_text", "rowid, text", "1"),
        ):
            h.update(table.encode())
            for row in db.conn.execute(f"SELECT {columns} FROM {db[table]} ORDER BY {order}"):
                h.update(msgspec.json.encode(row))
        return h.hexdigest()


_COLUMNS = "position, kind, text, suggestion, scars, reviewer, applied_us"


def _entry(row: Sequence[object], score: float = 0.0, match: float = 0.0) -> Entry:
    pos, kind, text, sug, scars, rev, applied = row
    return Entry(
        int(pos),  # type: ignore[call-overload]
        str(kind),
        str(text),
        str(sug),
        json.loads(str(scars)),
        str(rev),
        int(applied),  # type: ignore[call-overload]
        score,
        match,
    )


def _kinds(kind: str | None) -> tuple[str, ...]:
    if kind is None:
        return ENTRY_KINDS
    if kind not in ENTRY_KINDS:
        raise QueryError(f"kind must be one of {list(ENTRY_KINDS)} or None, got {kind!r}")
    return (kind,)


def entries(
    conn: sqlite3.Connection, kind: str | None = None, positions: Sequence[int] | None = None
) -> list[Entry]:
    """Return the notes and skills (of ``kind``; at ``positions``), in the order applied."""
    kinds = _kinds(kind)
    table = _table(conn, "entries")
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {table} WHERE kind IN ({','.join('?' * len(kinds))})"
        " ORDER BY position",
        kinds,
    ).fetchall()
    wanted = None if positions is None else set(positions)
    return [_entry(r) for r in rows if wanted is None or int(r[0]) in wanted]


def search(conn: sqlite3.Connection, query: str, k: int, kind: str | None = None) -> list[Entry]:
    """Return the ``k`` entries (of ``kind``) that best match ``query`` (BM25), with their
    match (0..1)."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    check_count(k, "k")
    kinds = _kinds(kind)
    expression = match_expression(query)
    if expression is None:
        return []
    fts, table = _table(conn, "entries_text"), _table(conn, "entries")
    columns = ", ".join(f"e.{c.strip()}" for c in _COLUMNS.split(","))
    rows = conn.execute(
        f"SELECT {columns}, -bm25({fts}) FROM {fts} JOIN {table} AS e"
        f" ON e.position = {fts}.rowid WHERE {fts} MATCH ?"
        f" AND e.kind IN ({','.join('?' * len(kinds))})"
        f" ORDER BY bm25({fts}), e.position LIMIT ?",
        (expression, *kinds, k),
    ).fetchall()
    wanted = set(tokens(query))
    return [
        _entry(r[:7], float(r[7]), len(wanted & set(tokens(str(r[2])))) / len(wanted)) for r in rows
    ]


def links(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
    """Return each entry's links, ``(target, rel)``, a ``[[name]]`` resolved to
    ``entry:<position>`` of the entries titled so (itself left out)."""
    table, entries_table = _table(conn, "links"), _table(conn, "entries")
    wanted = list(dict.fromkeys(positions))
    rows: dict[int, list[tuple[str, str]]] = {p: [] for p in wanted}
    for chunk in chunked(wanted):
        for entry, target, rel in conn.execute(
            f"SELECT entry, target, rel FROM {table} WHERE entry IN ({','.join('?' * len(chunk))})"
            " ORDER BY entry, rel, target",
            chunk,
        ):
            rows[int(entry)].append((str(target), str(rel)))
    titled: dict[str, list[int]] = {}
    for position, title_ in conn.execute(f"SELECT position, title FROM {entries_table}"):
        titled.setdefault(str(title_), []).append(int(position))
    out: dict[int, list[tuple[str, str]]] = {}
    for position, found in rows.items():
        resolved: list[tuple[str, str]] = []
        for target, rel in found:
            if target.startswith("name:"):
                resolved += [
                    (f"entry:{p}", rel) for p in titled.get(target[5:], []) if p != position
                ]
            resolved.append((target, rel))
        out[position] = resolved
    return out


def linking(conn: sqlite3.Connection, targets: Sequence[str]) -> dict[str, list[int]]:
    """Return, for each target (``scar:<id>``, ``event:<id>``), the entries linked to it."""
    table = _table(conn, "links")
    out: dict[str, list[int]] = {}
    for chunk in chunked(list(dict.fromkeys(targets))):
        for target, entry in conn.execute(
            f"SELECT DISTINCT target, entry FROM {table}"
            f" WHERE target IN ({','.join('?' * len(chunk))}) ORDER BY target, entry",
            chunk,
        ):
            out.setdefault(str(target), []).append(int(entry))
    return out


def _table(conn: sqlite3.Connection, table: str) -> str:
    generation = ProjectionStore.live_generation(conn, NAME)
    if generation is None:
        raise UnknownProjectionError(f"projection {NAME!r} is not in this store")
    return physical(generation, table)
