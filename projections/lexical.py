"""The lexical index: SQLite FTS5 with BM25 over every text-bearing event.

One row per ``memory.observed`` event, keyed by its ledger position (the FTS5 rowid), with
the author, visibility and type kept beside the text so every search filters visibility in
the same statement that ranks: an agent finds its own items and public items, never another
agent's private ones. ``memory.archived`` deletes the rows it names (a position that holds no
row is ignored). It is the other half of hybrid recall and the fallback when vectors are
unavailable.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from engram.ledger import Event
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError, UnknownProjectionError
from engram.projections.store import ProjectionStore, physical

#: Texts longer than this are indexed up to it (the same cap the embedder applies).
MAX_TEXT = 16_000
TOKENIZER = "unicode61 remove_diacritics 2"
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Split text the way the index does (lowercased unicode words); for references too."""
    return [w.lower() for w in _WORD.findall(text)]


class Hit(NamedTuple):
    """A lexical match: the event position and its BM25 score (higher is better)."""

    position: int
    score: float
    agent: str
    type: str
    visibility: str
    text: str


class LexicalIndex(Projection):
    """Full-text index of observations, ranked by BM25."""

    name = "lexical"
    version = 2
    kinds = ("memory.observed", "memory.archived")
    tables = ("lexical",)

    def create(self, db: Tables) -> None:
        """Create the FTS5 table."""
        db.conn.execute(
            f"CREATE VIRTUAL TABLE {db['lexical']} USING fts5(text, agent UNINDEXED,"
            f" visibility UNINDEXED, type UNINDEXED, tokenize = '{TOKENIZER}')"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Index each observation under its ledger position; drop the archived ones."""
        table = db["lexical"]
        rows: list[tuple[int, str, str, str, str]] = []
        for e in events:
            p = e.payload
            if e.kind == "memory.observed":
                rows.append((e.position, p.text[:MAX_TEXT], p.agent, p.visibility, p.type))
                continue
            # In position order: an archive only reaches the observations before it.
            self._insert(db, rows)
            rows = []
            db.conn.executemany(
                f"DELETE FROM {table} WHERE rowid = ?", [(position,) for position in p.positions]
            )
        self._insert(db, rows)

    @staticmethod
    def _insert(db: Tables, rows: list[tuple[int, str, str, str, str]]) -> None:
        db.conn.executemany(
            f"INSERT INTO {db['lexical']} (rowid, text, agent, visibility, type)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )

    def digest(self, db: Tables) -> str:
        """Digest the indexed rows (rowid included), not FTS5's internal segments."""
        h = hashlib.sha256()
        for row in db.conn.execute(
            f"SELECT rowid, text, agent, visibility, type FROM {db['lexical']} ORDER BY rowid"
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
) -> list[Hit]:
    """Return the ``k`` best BM25 matches ``agent`` may see (its own and public items)."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError(f"k must be a positive int, got {k!r}")
    expression = match_expression(query)
    if expression is None:
        return []
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        raise UnknownProjectionError("projection 'lexical' is not in this store")
    table = physical(generation, "lexical")
    sql = (
        f"SELECT rowid, -bm25({table}), agent, type, visibility, text FROM {table}"
        f" WHERE {table} MATCH ? AND (visibility = 'public' OR agent = ?)"
    )
    params: list[object] = [expression, agent]
    if types:
        sql += f" AND type IN ({','.join('?' * len(types))})"
        params += list(types)
    sql += f" ORDER BY bm25({table}), rowid LIMIT ?"
    params.append(k)
    return [Hit(*row) for row in conn.execute(sql, params)]
