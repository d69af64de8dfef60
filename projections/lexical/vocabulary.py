"""The lexical index's vocabulary as the read side sees it: row counts, stems, frequencies.

FTS5 keeps what BM25 needs in its shadow tables: the row count and the words' total in the
averages record (``_data``, row 1), each row's length (``_docsize``), each term's document
count (read through an ``fts5vocab`` table). Words are turned into the index's terms by the
index's own tokenizer, through a temporary FTS5 table, once per word and process. Used by
:mod:`engram.projections.lexical.read`; these are the package's internals, not part of
its face (:mod:`engram.projections.lexical`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence

from engram.projections.errors import UnknownProjectionError
from engram.projections.lexical.index import TOKENIZERS


def averages(conn: sqlite3.Connection, table: str) -> tuple[int, float, bytes]:
    """Return the rows the index holds, their mean length in words, and the record itself.

    FTS5 keeps both in its averages record (row 1 of its data table): varints of the row
    count and of each column's token total; ``text`` is the first column.
    """
    data = table[:-1] + '_data"'
    row = conn.execute(f"SELECT block FROM {data} WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0.0, b""
    rows, at = varint(row[0], 0)
    words, _ = varint(row[0], at)
    return rows, (words / rows if rows else 0.0), bytes(row[0])


def varint(blob: bytes, at: int) -> tuple[int, int]:
    """Decode one SQLite varint (big-endian 7-bit groups, a full 9th byte) at ``at``."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def frequencies(
    conn: sqlite3.Connection, table: str, words: Sequence[str], state: bytes
) -> tuple[dict[str, int], dict[str, tuple[str, ...]]]:
    """Return how many rows hold each word, read from the index's vocabulary, and its stems.

    The words go through a temporary FTS5 table with the index's tokenizer, so each is
    looked up under the stem the index stores. A word the tokenizer splits into several
    terms (``foo_bar``) is counted as the phrase it searches for, by a ``MATCH``. Stems are
    remembered per word; counts per index file, table and ``state`` (its averages record,
    which changes with every row added), so a recall repeats no lookup while nothing moved.
    """
    name = _tokenizer(conn, table)
    vocab = _vocabulary(conn, table, name)
    stems = _stem(conn, table, words, name)
    known = _counts(conn, table, state)
    # Each term looked up in what is remembered: never a pass over all it holds.
    wanted = sorted({s[0] for s in stems.values() if len(s) == 1 and s[0] not in known})
    if wanted:
        marks = ",".join("?" * len(wanted))
        found = dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", wanted))
        known.update({term: int(found.get(term, 0)) for term in wanted})
    counts = {}
    for word in words:
        if len(stems[word]) == 1:
            counts[word] = known[stems[word][0]]
        elif stems[word]:
            phrase = f'"{word}"'
            if phrase not in known:
                (n,) = conn.execute(
                    f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (phrase,)
                ).fetchone()
                known[phrase] = int(n)
            counts[word] = known[phrase]
        else:
            counts[word] = 0  # nothing the tokenizer keeps: no row can hold it
    return counts, stems


class Known:
    """What one tokenizer made of the words it was given: each word's terms, each term's
    words. It only grows; when it grows too large a fresh one replaces it, so a reader
    holding the old one still finds its words there."""

    def __init__(self) -> None:
        self.stems: dict[str, tuple[str, ...]] = {}
        self.words: dict[str, set[str]] = {}

    def add(self, fresh: dict[str, tuple[str, ...]]) -> None:
        self.stems.update(fresh)
        for word, terms in fresh.items():
            for term in terms:
                self.words.setdefault(term, set()).add(word)


def known_terms(
    conn: sqlite3.Connection, table: str, words: set[str], name: str | None = None
) -> Known:
    """Return the index tokenizer's terms of ``words`` (and of others seen before), running
    the tokenizer once for each word it has not seen. ``name``: the tokenizer's, when the
    caller read it already (:func:`_tokenizer`)."""
    if name is None:
        name = _tokenizer(conn, table)
    known = _STEMS.get(name)
    if known is None:
        with _CACHE_LOCK:
            known = _STEMS.setdefault(name, Known())
    stems = known.stems  # words not in it, one lookup each: never a pass over all it holds
    unseen = [w for w in words if w not in stems]
    if not unseen:
        return known
    _vocabulary(conn, table, name)
    query = f"temp.engram_query_{name}"
    conn.execute(f"DELETE FROM {query}")
    conn.executemany(f"INSERT INTO {query} (rowid, text) VALUES (?, ?)", list(enumerate(unseen)))
    parts: dict[int, list[str]] = {}
    for number, term in conn.execute(f"SELECT doc, term FROM {query}_terms"):
        parts.setdefault(number, []).append(term)
    fresh = {word: tuple(parts.get(number, ())) for number, word in enumerate(unseen)}
    with _CACHE_LOCK:
        known = _STEMS[name]
        if len(known.stems) + len(fresh) > _CACHED_WORDS:
            kept = {w: known.stems[w] for w in words if w in known.stems}
            known = _STEMS[name] = Known()
            known.add(kept)
        known.add(fresh)
    return known


def _stem(
    conn: sqlite3.Connection, table: str, words: Iterable[str], name: str
) -> dict[str, tuple[str, ...]]:
    """Return the index's terms of each of ``words`` (``name``: the index's tokenizer)."""
    wanted = set(words)
    stems = known_terms(conn, table, wanted, name).stems
    return {w: stems[w] for w in wanted}


def _tokenizer(conn: sqlite3.Connection, table: str) -> str:
    """Return the name (:data:`TOKENIZERS`) of the tokenizer ``table`` was created with."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = ?", (table.strip(chr(34)),)
    ).fetchone()
    declared = "" if row is None else str(row[0])
    for name, tokenizer in TOKENIZERS.items():
        if f"tokenize = '{tokenizer}'" in declared:
            return name
    raise UnknownProjectionError(f"the lexical table {table} has a tokenizer engram does not know")


#: tokenizer -> the words it has seen and their terms (a tokenizer is fixed: never stale).
_STEMS: dict[str, Known] = {}
#: (index file, table, averages record) -> term -> rows holding it; the latest few states.
_COUNTS: dict[tuple[str, str, bytes], dict[str, int]] = {}
_CACHE_LOCK = threading.Lock()
_CACHED_WORDS = 200_000
_CACHED_STATES = 4


def _counts(conn: sqlite3.Connection, table: str, state: bytes) -> dict[str, int]:
    """Return the remembered counts of the index in ``state`` (a fresh dict if none)."""
    path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not path or not state:  # an in-memory database has no identity to remember it by
        return {}
    key = (path, table, state)
    with _CACHE_LOCK:  # readers in several threads share the cache
        found = _COUNTS.get(key)
        if found is None or len(found) > _CACHED_WORDS:
            while len(_COUNTS) >= _CACHED_STATES:
                _COUNTS.pop(next(iter(_COUNTS)))
            found = _COUNTS[key] = {}
        return found


def _vocabulary(conn: sqlite3.Connection, table: str, name: str) -> str:
    """Return this connection's row-form vocabulary of ``table`` (created on first use),
    and its query table for the tokenizer ``name``.

    Temporary tables belong to the connection, so this works on read-only connections and
    leaves the store's file untouched.
    """
    vocab = f'temp."engram_vocab{table.strip(chr(34))}"'
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, {table}, row)")
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_query_{name} USING fts5(text,"
        f" tokenize = '{TOKENIZERS[name]}')"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_query_{name}_terms"
        f" USING fts5vocab(temp, engram_query_{name}, instance)"
    )
    return vocab
