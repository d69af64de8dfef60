"""The lexical index's write side: what is indexed, under which type, and the projection.

One row per ``memory.observed``, ``scar.recorded`` and ``memory.reflected`` event, and per
concept (its newest ``concept.upserted``: an upsert replaces the row of the one before, ADR
0037), keyed by its ledger position (the FTS5 rowid), with the author, visibility, item type
(a memory's type, a scar's kind, ``reflection``, ``concept``: :func:`item_text`) and time kept
beside the text. ``memory.archived`` (memories) and ``scar.archived`` (scars) stamp the rows
they name with the archive's time (a position that holds no such row, or an archived one, is
ignored); ``subject.forgotten`` deletes the rows of that subject's items before it (ADR
0039). The read side is :mod:`engram.projections.lexical.read`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import msgspec

from engram.ledger import Event
from engram.projections.base import Projection, Tables
from engram.projections.errors import QueryError
from engram.projections.timetravel import micros

#: Texts longer than this are indexed up to it (the same cap the embedder applies).
MAX_TEXT = 16_000
#: Porter stemming over unicode61 words: "failed", "failing" and "fails" meet (ADR 0025).
TOKENIZER = "porter unicode61 remove_diacritics 2"
#: The tokenizers a lexical index can be built with, by name: the default, and the words
#: unstemmed (the ablation of ADR 0043). Searches follow whichever the index was built with.
TOKENIZERS = {"porter": TOKENIZER, "unicode61": "unicode61 remove_diacritics 2"}
_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Split text the way the index does (lowercased unicode words); for references too."""
    return [w.lower() for w in _WORD.findall(text)]


#: Each ASCII byte that is not a word character (``\w``) turned into a space; the others kept.
_ASCII_SPACED = bytes(
    c if c >= 128 or chr(c).isalnum() or c == ord("_") else ord(" ") for c in range(256)
)


def lowered_words(text: str) -> list[str]:
    r"""Return the words of ``text`` lowercased whole: ``re.findall(r"\w+", text.lower())``.

    For an ASCII text that is also :func:`tokens`, and it is split without the regex: its
    bytes lowercased, each byte that is no word character made a space, then split on the
    spaces, the same words at about half the cost (ADR 0101). A text of other characters
    goes through the regex (lowercasing may change a word's letters there)."""
    if text.isascii():
        return text.encode().lower().translate(_ASCII_SPACED).decode().split()
    return _WORD.findall(text.lower())


#: The item types each kind of event is indexed under (the ``type`` column): a memory's own
#: type, a scar's kind, ``reflection``. Searches filter on them; memory recall asks for
#: :data:`MEMORY_TYPES` only, so scars and reflections never enter it unasked.
MEMORY_TYPES = ("observation", "plan", "thought")
SCAR_TYPES = ("failure", "victory")
REFLECTION_TYPES = ("reflection",)
CONCEPT_TYPES = ("concept",)
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
    reflection: its text, ``reflection``; a concept: :func:`concept_text`, ``concept``. The
    semantic index embeds the same text.
    """
    p = event.payload
    if event.kind == "scar.recorded":
        return f"{p.what}\n{p.lesson}", p.kind
    if event.kind == "memory.reflected":
        return p.text, "reflection"
    if event.kind == "concept.upserted":
        return concept_text(p.id, p.label, p.payload), "concept"
    return p.text, p.type


def concept_text(concept_id: str, label: str, payload: object) -> str:
    """Return a concept's indexed text: its label, its id's words, its payload's strings.

    The payload is free JSON: every string in it (keys of nested objects excluded, values
    and list items included, depth first) is a line, so a snippet's code or a fact's source
    is found by its words.
    """
    lines = [label, concept_id.replace(".", " ").replace("_", " ").replace("-", " ")]
    stack: list[object] = [payload]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            lines.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            lines.append(str(value))
    return "\n".join(lines)


#: The kinds the text indexes consume: the items, their archivals, concepts and forgetting.
#: The semantic index consumes the same, so both indexes hold the same items.
TEXT_KINDS = (
    "memory.observed",
    "memory.archived",
    "scar.recorded",
    "scar.archived",
    "memory.reflected",
    "concept.upserted",
    "subject.forgotten",
    "reflection.retracted",
)


class LexicalIndex(Projection):
    """Full-text index of memories, scars and reflections, ranked by BM25."""

    name = "lexical"
    version = 6
    kinds = TEXT_KINDS
    tables = ("lexical", "lexical_concepts")

    def __init__(self, *, tokenizer: str = "porter") -> None:
        """``tokenizer``: a name of :data:`TOKENIZERS` (a change rebuilds the index)."""
        if tokenizer not in TOKENIZERS:
            raise QueryError(f"tokenizer must be one of {sorted(TOKENIZERS)}, got {tokenizer!r}")
        self.tokenizer = tokenizer

    def config(self) -> str:
        """Return the tokenizer when it is not the default (the default keeps stores as
        they were)."""
        return "" if self.tokenizer == "porter" else f"tokenizer={self.tokenizer}"

    def create(self, db: Tables) -> None:
        """Create the FTS5 table."""
        db.conn.execute(
            f"CREATE VIRTUAL TABLE {db['lexical']} USING fts5(text, agent UNINDEXED,"
            " visibility UNINDEXED, type UNINDEXED, observed_us UNINDEXED, archived_us UNINDEXED,"
            f" tokenize = '{TOKENIZERS[self.tokenizer]}')"
        )
        db.conn.execute(
            f"CREATE TABLE {db['lexical_concepts']} (id TEXT PRIMARY KEY,"
            " position INTEGER NOT NULL) WITHOUT ROWID"
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Index each text-bearing event under its ledger position; stamp the archived ones."""
        table = db["lexical"]
        rows: list[tuple[int, str, str, str, str, int]] = []
        for e in events:
            p = e.payload
            if e.kind == "subject.forgotten":  # ADR 0039: the subject's earlier items go
                self._insert(db, rows)
                rows = []
                db.conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed
                if db.conn.execute(
                    f"DELETE FROM {table} WHERE agent = ? AND rowid < ?", (p.subject, e.position)
                ).rowcount:  # merge the segments: none keeps the words
                    db.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                continue
            if e.kind == "reflection.retracted":  # ADR 0110: drawn from a forgotten subject
                self._insert(db, rows)
                rows = []
                db.conn.execute("PRAGMA secure_delete = ON")
                deleted = sum(
                    db.conn.execute(
                        f"DELETE FROM {table} WHERE rowid = ? AND type = 'reflection'"
                        " AND rowid < ?",
                        (position, e.position),
                    ).rowcount
                    for position in p.positions
                )
                if deleted:
                    db.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
                continue
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
            if e.kind == "concept.upserted":
                # The newest upsert of a concept wins: its row replaces the one before.
                self._insert(db, rows)
                rows = []
                self._supersede(db, p.id, e.position)
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

    @staticmethod
    def _supersede(db: Tables, concept_id: str, position: int) -> None:
        """Drop the row of the concept's previous upsert; remember ``position`` as its row."""
        concepts = db["lexical_concepts"]
        found = db.conn.execute(f"SELECT position FROM {concepts} WHERE id = ?", (concept_id,))
        old = found.fetchone()
        if old is not None:
            db.conn.execute(f"DELETE FROM {db['lexical']} WHERE rowid = ?", (old[0],))
        db.conn.execute(
            f"INSERT OR REPLACE INTO {concepts} (id, position) VALUES (?, ?)",
            (concept_id, position),
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
