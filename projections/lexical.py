"""The lexical index: SQLite FTS5 with BM25 over every text-bearing event.

One row per ``memory.observed``, ``scar.recorded`` and ``memory.reflected`` event, keyed by
its ledger position (the FTS5 rowid), with the author, visibility, item type (a memory's
type, a scar's kind, ``reflection``: :func:`item_text`) and time kept beside the text so
every search filters visibility and type in the same statement that ranks: an agent finds
its own items and public items, never another agent's private ones. ``memory.archived``
(memories) and ``scar.archived`` (scars) stamp the rows they name with the archive's time (a
position that holds no such row, or an archived one, is ignored); searches
leave archived rows out, except a search ``as_of`` a time before the archival, which sees
what was known then (ADR 0019). It is the other half of hybrid recall and the fallback when
vectors are unavailable.

Each hit carries its raw BM25 score and ``match``, the IDF-weighted share of the query's
words the item contains (0..1): a number that means the same for every query, where BM25's
scale depends on the query and the corpus.

To add a projection, read ``projections/scars.py``, the plain template; this module batches
its inserts for speed.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engram.ledger import Event
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore, physical

#: Texts longer than this are indexed up to it (the same cap the embedder applies).
MAX_TEXT = 16_000
#: Porter stemming over unicode61 words: "failed", "failing" and "fails" meet (ADR 0025).
TOKENIZER = "porter unicode61 remove_diacritics 2"
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Split text the way the index does (lowercased unicode words); for references too."""
    return [w.lower() for w in _WORD.findall(text)]


#: The item types each kind of event is indexed under (the ``type`` column): a memory's own
#: type, a scar's kind, ``reflection``. Searches filter on them; memory recall asks for
#: :data:`MEMORY_TYPES` only, so scars and reflections never enter it unasked.
MEMORY_TYPES = ("observation", "plan", "thought")
SCAR_TYPES = ("failure", "victory")
REFLECTION_TYPES = ("reflection",)
#: Each archiving kind and the item types it may archive: a memory archive never hides a
#: scar that happens to sit at a position it names, nor the other way round.
ARCHIVES: dict[str, tuple[str, ...]] = {
    "memory.archived": MEMORY_TYPES,
    "scar.archived": SCAR_TYPES,
}


def memory_types(types: Sequence[str] | None) -> tuple[str, ...]:
    """Return ``types`` checked to be memory types; every memory type when None or empty."""
    if not types:
        return MEMORY_TYPES
    if isinstance(types, str) or not isinstance(types, Sequence):
        raise QueryError(f"types must be a sequence drawn from {list(MEMORY_TYPES)}, got {types!r}")
    unknown = [t for t in types if t not in MEMORY_TYPES]
    if unknown:
        raise QueryError(
            f"types: {unknown} are not memory types ({list(MEMORY_TYPES)}); scars and"
            " reflections are recalled with a scope (scars, victories, reflections)"
        )
    return tuple(types)


def item_text(event: Event) -> tuple[str, str]:
    """Return the text a text-bearing event is indexed by, and its item type.

    A memory: its text and type; a scar: what happened and the lesson, and its kind; a
    reflection: its text, ``reflection``. The semantic index embeds the same text.
    """
    p = event.payload
    if event.kind == "scar.recorded":
        return f"{p.what}\n{p.lesson}", p.kind
    if event.kind == "memory.reflected":
        return p.text, "reflection"
    return p.text, p.type


class Hit(NamedTuple):
    """A lexical match: the event position, its BM25 score (higher is better) and its match.

    ``match`` is the IDF-weighted share of the query's distinct words found in the item, in
    0..1; IDF as BM25 computes it over the indexed rows.
    """

    position: int
    score: float
    agent: str
    type: str
    visibility: str
    text: str
    match: float = 0.0


class LexicalIndex(Projection):
    """Full-text index of memories, scars and reflections, ranked by BM25."""

    name = "lexical"
    version = 5
    kinds = (
        "memory.observed",
        "memory.archived",
        "scar.recorded",
        "scar.archived",
        "memory.reflected",
    )
    tables = ("lexical",)

    def create(self, db: Tables) -> None:
        """Create the FTS5 table."""
        db.conn.execute(
            f"CREATE VIRTUAL TABLE {db['lexical']} USING fts5(text, agent UNINDEXED,"
            " visibility UNINDEXED, type UNINDEXED, observed_us UNINDEXED, archived_us UNINDEXED,"
            f" tokenize = '{TOKENIZER}')"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Index each text-bearing event under its ledger position; stamp the archived ones."""
        table = db["lexical"]
        rows: list[tuple[int, str, str, str, str, int]] = []
        for e in events:
            p = e.payload
            if e.kind in ARCHIVES:
                # In position order: an archive only reaches the items before it.
                self._insert(db, rows)
                rows = []
                marks = ",".join("?" * len(ARCHIVES[e.kind]))
                db.conn.executemany(
                    f"UPDATE {table} SET archived_us = ? WHERE rowid = ? AND archived_us IS NULL"
                    f" AND type IN ({marks})",
                    [(micros(e.at), position, *ARCHIVES[e.kind]) for position in p.positions],
                )
                continue
            text, kind = item_text(e)
            rows.append((e.position, text[:MAX_TEXT], p.agent, p.visibility, kind, micros(e.at)))
        self._insert(db, rows)

    @staticmethod
    def _insert(db: Tables, rows: list[tuple[int, str, str, str, str, int]]) -> None:
        db.conn.executemany(
            f"INSERT INTO {db['lexical']} (rowid, text, agent, visibility, type, observed_us)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )

    def digest(self, db: Tables) -> str:
        """Digest the indexed rows (rowid included), not FTS5's internal segments."""
        h = hashlib.sha256()
        for row in db.conn.execute(
            f"SELECT rowid, text, agent, visibility, type, observed_us, archived_us"
            f" FROM {db['lexical']} ORDER BY rowid"
        ):
            h.update(msgspec.json.encode(row))
        return h.hexdigest()


def match_expression(query: str) -> str | None:
    """Turn free text into a safe FTS5 expression: every word quoted, OR-ed (None if empty)."""
    words = list(dict.fromkeys(tokens(query)))
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words)


def search(
    conn: sqlite3.Connection,
    query: str,
    k: int,
    *,
    agent: str,
    types: Sequence[str] | None = None,
    as_of_us: int | None = None,
    weights: dict[str, float] | None = None,
) -> list[Hit]:
    """Return the ``k`` best BM25 matches ``agent`` may see (its own and public items).

    With ``as_of_us`` (epoch microseconds), only what was known then: items observed at or
    before it and not archived at or before it. ``weights`` are the query words' IDF
    (:func:`idf`), when the caller has them already.
    """
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError(f"k must be a positive int, got {k!r}")
    expression = match_expression(query)
    if expression is None:
        return []
    table = _table(conn)
    visible, shown = _visible(agent, types, as_of_us)
    sql = (
        f"SELECT rowid, -bm25({table}), agent, type, visibility, text FROM {table}"
        f" WHERE {table} MATCH ?{visible} ORDER BY bm25({table}), rowid LIMIT ?"
    )
    params: list[object] = [expression, *shown, k]
    rows = conn.execute(sql, params).fetchall()
    if not rows:
        return []
    if weights is None:
        weights = idf(conn, tokens(query))
    return [
        Hit(position, score, author, kind, visibility, text, share(weights, text))
        for position, score, author, kind, visibility, text in rows
    ]


def share(weights: dict[str, float], text: str) -> float:
    """Return the IDF-weighted share of the query words (``weights``, from :func:`idf`) in
    ``text``: 1 when it holds them all, 0 when none, whatever the query."""
    total = sum(weights.values())
    if not total:
        return 0.0
    # Lowercasing the whole text first is tokens() without a list per word.
    present = set(_WORD.findall(text.lower()))
    return min(sum(w for word, w in weights.items() if word in present) / total, 1.0)


def idf(conn: sqlite3.Connection, words: Sequence[str]) -> dict[str, float]:
    """Return each distinct word's inverse document frequency as FTS5's BM25 computes it.

    ``ln((N - n + 0.5) / (n + 0.5))`` over the N indexed rows, n of which hold the word,
    floored at a tiny positive value as FTS5 floors words found in more than half the rows.
    """
    table = _table(conn)
    docsize = table[:-1] + '_docsize"'
    (total,) = conn.execute(f"SELECT count(*) FROM {docsize}").fetchone()
    weights = {}
    for word in dict.fromkeys(words):
        (n,) = conn.execute(
            f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (f'"{word}"',)
        ).fetchone()
        weights[word] = max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)
    return weights


def archived_after(
    conn: sqlite3.Connection,
    as_of_us: int,
    *,
    agent: str,
    types: Sequence[str] | None = None,
) -> list[tuple[int, str]]:
    """Return (position, text) of the items ``agent`` may see that were known at ``as_of_us``
    and archived after it."""
    table = _table(conn)
    sql = (
        f"SELECT rowid, text FROM {table} WHERE archived_us > ? AND observed_us <= ?"
        " AND (visibility = 'public' OR agent = ?)"
    )
    params: list[object] = [as_of_us, as_of_us, agent]
    if types:
        sql += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    return [(int(r[0]), str(r[1])) for r in conn.execute(sql + " ORDER BY rowid", params)]


def neighbours(
    conn: sqlite3.Connection,
    positions: Sequence[int],
    radius: int,
    *,
    agent: str,
    gap_us: int,
    types: Sequence[str] | None = None,
    as_of_us: int | None = None,
) -> dict[int, list[tuple[int, int]]]:
    """Return, for each of ``positions``, the memories formed next to it in its episode.

    Up to ``radius`` items before and after it (by position) that ``agent`` may see, of the
    given ``types``, known and not archived (as of ``as_of_us`` when given), each paired with
    its distance (1: adjacent); the walk stops at an item observed more than ``gap_us`` away
    from the position's own time. A position the index does not hold has no neighbours.
    """
    table = _table(conn)
    visible, params = _visible(agent, types, as_of_us)
    around: dict[int, list[tuple[int, int]]] = {}
    for position in positions:
        row = conn.execute(f"SELECT observed_us FROM {table} WHERE rowid = ?", (position,))
        found = row.fetchone()
        if found is None:
            continue
        at = int(found[0])
        near: list[tuple[int, int]] = []
        for sign, order in (("<", "DESC"), (">", "ASC")):
            rows = conn.execute(
                f"SELECT rowid, observed_us FROM {table} WHERE rowid {sign} ?{visible}"
                f" ORDER BY rowid {order} LIMIT ?",
                [position, *params, radius],
            ).fetchall()
            for distance, (other, observed) in enumerate(rows, start=1):
                if abs(int(observed) - at) > gap_us:
                    break
                near.append((int(other), distance))
        around[position] = near
    return around


def latest_archival(conn: sqlite3.Connection) -> int:
    """Return the time (epoch microseconds) of the latest archival the index holds, 0 if none."""
    (value,) = conn.execute(f"SELECT max(archived_us) FROM {_table(conn)}").fetchone()
    return int(value or 0)


def _visible(
    agent: str, types: Sequence[str] | None, as_of_us: int | None
) -> tuple[str, list[object]]:
    """Return the conditions (after an ``AND``) and parameters that keep the rows ``agent``
    may see, of ``types``, known and not archived (as of ``as_of_us`` when given)."""
    sql = " AND (visibility = 'public' OR agent = ?)"
    params: list[object] = [agent]
    if as_of_us is None:
        sql += " AND archived_us IS NULL"
    else:
        sql += " AND observed_us <= ? AND (archived_us IS NULL OR archived_us > ?)"
        params += [as_of_us, as_of_us]
    if types:
        sql += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    return sql, params


def _table(conn: sqlite3.Connection) -> str:
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        raise UnknownProjectionError("projection 'lexical' is not in this store")
    return physical(generation, "lexical")
