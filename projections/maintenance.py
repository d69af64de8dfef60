"""Read-side queries the maintenance jobs ask of the graph, salience and lexical index.

Like :mod:`engram.projections.queries`, every function takes a connection from
:meth:`ProjectionEngine.read` or :func:`~engram.projections.queries.known_at` and writes
nothing. Times are epoch microseconds (:func:`~engram.projections.salience.micros`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable
from datetime import datetime
from typing import NamedTuple

from engram.ledger import chunked
from engram.projections.errors import UnknownProjectionError
from engram.projections.lexical import MEMORY_TYPES
from engram.projections.salience import micros
from engram.projections.store import ProjectionStore, physical

#: (source, target, type, weight) of one connection.
Connection = tuple[str, str, str, int]


def connections_among(conn: sqlite3.Connection, neurons: Iterable[str]) -> list[Connection]:
    """Return every connection whose source and target are both in ``neurons``, sorted.

    One indexed query per 500 sources (the primary key starts with ``source``); targets are
    filtered here, so the cost follows the candidates' out-degree, not the graph's size.
    """
    wanted = set(neurons)
    found: list[Connection] = []
    for chunk in chunked(sorted(wanted)):
        rows = conn.execute(
            "SELECT source, target, type, weight FROM connections"
            f" WHERE source IN ({','.join('?' * len(chunk))})",
            list(chunk),
        ).fetchall()
        found += ((s, t, k, int(w)) for s, t, k, w in rows if t in wanted)
    found.sort()
    return found


def dormant_neurons(
    conn: sqlite3.Connection, min_activations: int, created_before_us: int
) -> list[str]:
    """Return live neurons activated fewer than ``min_activations`` times, created before a time."""
    rows = conn.execute(
        "SELECT id, created_at FROM neurons WHERE archived_at IS NULL AND activation_count < ?"
        " ORDER BY id",
        (min_activations,),
    ).fetchall()
    return [
        id_ for id_, created in rows if micros(datetime.fromisoformat(created)) < created_before_us
    ]


def unrecalled_memories(conn: sqlite3.Connection, observed_before_us: int) -> list[int]:
    """Return the positions of live memories never recalled and last changed before a time.

    A memory never recalled was last changed when it was observed, so this is its age.
    """
    rows = conn.execute(
        "SELECT position FROM salience WHERE item_kind = 'memory' AND archived = 0"
        " AND recall_count = 0 AND updated_us < ? ORDER BY position",
        (observed_before_us,),
    ).fetchall()
    return [int(p) for (p,) in rows]


class DuplicateGroup(NamedTuple):
    """Live memories of one agent whose indexed texts are byte-identical (same sha256)."""

    agent: str
    sha256: str
    positions: list[int]
    text: str


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
    generation = ProjectionStore.live_generation(conn, "lexical")
    if generation is None:
        raise UnknownProjectionError("projection 'lexical' is not in this store")
    table = physical(generation, "lexical")
    marks = ",".join("?" * len(MEMORY_TYPES))
    groups: dict[tuple[str, str], list[int]] = {}
    texts: dict[tuple[str, str], str] = {}
    for position, agent, text in conn.execute(
        f"SELECT rowid, agent, text FROM {table} WHERE type IN ({marks})"
        " AND observed_us <= ? AND (archived_us IS NULL OR archived_us > ?) ORDER BY rowid",
        (*MEMORY_TYPES, as_of_us, as_of_us),
    ):
        key = (agent, content_hash(text))
        groups.setdefault(key, []).append(int(position))
        texts.setdefault(key, text)
    found = [
        DuplicateGroup(agent, digest, positions, texts[(agent, digest)])
        for (agent, digest), positions in groups.items()
        if len(positions) > 1
    ]
    found.sort(key=lambda g: (g.agent, g.positions[0]))
    return found


def memory_agents(conn: sqlite3.Connection) -> list[str]:
    """Return every agent that authored a memory the lexical index holds, or reflected, sorted."""
    generation = ProjectionStore.live_generation(conn, "lexical")
    found: set[str] = set()
    if generation is not None:
        marks = ",".join("?" * len(MEMORY_TYPES))
        found.update(
            agent
            for (agent,) in conn.execute(
                f"SELECT DISTINCT agent FROM {physical(generation, 'lexical')}"
                f" WHERE type IN ({marks})",
                MEMORY_TYPES,
            )
        )
    if ProjectionStore.live_generation(conn, "reflections") is not None:
        found.update(agent for (agent,) in conn.execute("SELECT agent FROM reflection_marks"))
    return sorted(found)
