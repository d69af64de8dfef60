"""Reads over the lexical index's memory rows: duplicate groups, the memories' authors, and
how the rows write a word.

The hygiene job and ``engram dream`` ask for memories of one agent whose indexed texts are
byte-identical; the reflection job and the hub ask which agents authored memories;
detection asks whether the store writes a word as a name (:func:`written_inside`). Every
function takes a connection from :meth:`ProjectionEngine.read` and writes nothing.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from typing import NamedTuple

from engram.projections.errors import UnknownProjectionError
from engram.projections.lexical.index import MEMORY_TYPES
from engram.projections.store import ProjectionStore, physical


class DuplicateGroup(NamedTuple):
    """Live memories of one agent whose indexed texts are byte-identical (same sha256)."""

    agent: str
    sha256: str
    positions: list[int]
    text: str
    #: Whether one of them is private: its text is its agent's alone to be shown.
    private: bool = False


def live_table(conn: sqlite3.Connection) -> str:
    """Return the live lexical table's name (UnknownProjectionError: no lexical index)."""
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        raise UnknownProjectionError("projection 'lexical' is not in this store")
    return physical(generation, "lexical")


def content_hash(text: str) -> str:
    """Return the hex sha256 of a text's UTF-8 bytes: what makes two memories duplicates."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def duplicate_memories(conn: sqlite3.Connection, as_of_us: int) -> list[DuplicateGroup]:
    """Return the groups of two or more memories of one agent with the same content hash.

    Reads the lexical index's memory rows live at ``as_of_us`` (observed at or before it,
    not archived at it), so the groups of any past time can be asked again. Groups come by
    agent then first position; positions ascend. The index holds a text's first 16,000
    characters: callers that need longer texts told apart re-hash them from the ledger.
    """
    table = live_table(conn)
    marks = ",".join("?" * len(MEMORY_TYPES))
    groups: dict[tuple[str, str], list[int]] = {}
    texts: dict[tuple[str, str], str] = {}
    private: set[tuple[str, str]] = set()
    for position, agent, text, visibility in conn.execute(
        f"SELECT rowid, agent, text, visibility FROM {table} WHERE type IN ({marks})"
        " AND observed_us <= ? AND (archived_us IS NULL OR archived_us > ?) ORDER BY rowid",
        (*MEMORY_TYPES, as_of_us, as_of_us),
    ):
        key = (agent, content_hash(text))
        groups.setdefault(key, []).append(int(position))
        texts.setdefault(key, text)
        if visibility == "private":
            private.add(key)
    found = [
        DuplicateGroup(agent, digest, positions, texts[(agent, digest)], (agent, digest) in private)
        for (agent, digest), positions in groups.items()
        if len(positions) > 1
    ]
    found.sort(key=lambda g: (g.agent, g.positions[0]))
    return found


def memory_authors(conn: sqlite3.Connection) -> list[str]:
    """Return every agent that authored a memory the index holds, sorted ([] without one)."""
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        return []
    marks = ",".join("?" * len(MEMORY_TYPES))
    return sorted(
        agent
        for (agent,) in conn.execute(
            f"SELECT DISTINCT agent FROM {physical(generation, 'lexical')} WHERE type IN ({marks})",
            MEMORY_TYPES,
        )
    )


def written_inside(conn: sqlite3.Connection, word: str, written: str, limit: int = 50) -> bool:
    """Say whether one of the first ``limit`` rows holding ``word`` (a term as :func:`terms`
    gives it) writes it as ``written`` (capitalised) inside a sentence: after a word in
    lower case, a digit or a comma, where no sentence capitalises it ("invoice from
    Greenfields"). A store that writes a word so takes it for a name (ADR 0167)."""
    if not written or not word:
        return False
    table = live_table(conn)
    inside = re.compile(rf"[a-z0-9,;)]\s+{re.escape(written)}(?![\w-])")
    rows = conn.execute(
        f"SELECT text FROM {table} WHERE {table} MATCH ? LIMIT ?", [f'"{word}"', limit]
    )
    return any(inside.search(str(text)) for (text,) in rows)
