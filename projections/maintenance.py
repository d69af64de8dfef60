"""Read-side queries the maintenance jobs ask of the neuron graph and salience index.

Like :mod:`engram.projections.queries`, every function takes a connection from
:meth:`ProjectionEngine.read` or :func:`~engram.projections.queries.known_at` and writes
nothing. Times are epoch microseconds (:func:`~engram.projections.salience.micros`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from engram.ledger import chunked
from engram.projections.salience import micros

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
