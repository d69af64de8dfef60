"""Concepts: the HDoD knowledge tree, one row per path-like id, and the links between them.

A ``concept.upserted`` event creates a concept or replaces it whole (type, label, payload,
links, visibility): the newest upsert of an id wins, in position order. Ids are paths
(``skill.cpp.templates.sfinae``), so a subtree is one range scan, and
:func:`tree` materialises rows as the nested dictionary agents read (an HDoD). Links are
typed, weighted edges between concepts (to ids that may not exist yet).

Visibility works as for memories: a private concept is read by its agent only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import msgspec

from engram.ledger import Event
from engram.ledger.catalog import ConceptUpserted
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import QueryError
from engram.projections.salience import micros

#: The key under which :func:`tree` puts a concept's own fields beside its children.
SELF = "_"


class Concept(NamedTuple):
    """A concept as it stands: the newest upsert of its id, and how many there were."""

    id: str
    type: str
    label: str
    agent: str
    visibility: str
    payload: dict[str, Any]
    position: int
    created_us: int
    updated_us: int
    versions: int


class Link(NamedTuple):
    """A link between two concepts."""

    source: str
    target: str
    rel: str
    weight: float


class Concepts(Projection):
    """The concept tree and its links."""

    name = "concepts"
    version = 1
    kinds = (ConceptUpserted,)
    tables = ("concepts", "concept_links")

    def create(self, db: Tables) -> None:
        """Create the concept and link tables."""
        db.conn.execute(
            f"CREATE TABLE {db['concepts']} (id TEXT PRIMARY KEY, type TEXT NOT NULL,"
            " label TEXT NOT NULL, agent TEXT NOT NULL, visibility TEXT NOT NULL,"
            " payload TEXT NOT NULL, position INTEGER NOT NULL, created_us INTEGER NOT NULL,"
            " updated_us INTEGER NOT NULL, versions INTEGER NOT NULL) WITHOUT ROWID"
        )
        db.conn.execute(
            f"CREATE TABLE {db['concept_links']} (source TEXT NOT NULL, target TEXT NOT NULL,"
            " rel TEXT NOT NULL, weight REAL NOT NULL, PRIMARY KEY (source, target, rel))"
            " WITHOUT ROWID"
        )
        db.conn.execute(
            f'CREATE INDEX {db["concept_links"][:-1]}_target" ON {db["concept_links"]} (target)'
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Create or replace each concept, and its links, in position order."""
        for event in events:
            self._on_upserted(db, event)

    @staticmethod
    def _on_upserted(db: Tables, event: Event) -> None:
        p = event.payload
        at = micros(event.at)
        db.conn.execute(
            f"INSERT INTO {db['concepts']} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)"
            " ON CONFLICT (id) DO UPDATE SET type = excluded.type, label = excluded.label,"
            " agent = excluded.agent, visibility = excluded.visibility,"
            " payload = excluded.payload, position = excluded.position,"
            " updated_us = excluded.updated_us, versions = versions + 1",
            (
                p.id,
                p.type,
                p.label,
                p.agent,
                p.visibility,
                msgspec.json.encode(p.payload).decode(),
                event.position,
                at,
                at,
            ),
        )
        links = db["concept_links"]
        db.conn.execute(f"DELETE FROM {links} WHERE source = ?", (p.id,))
        # The newest link wins when one upsert names (target, rel) twice.
        db.conn.executemany(
            f"INSERT OR REPLACE INTO {links} VALUES (?, ?, ?, ?)",
            [(p.id, link.to, link.rel, link.weight) for link in p.links],
        )


_COLUMNS = "id, type, label, agent, visibility, payload, position, created_us, updated_us, versions"
_VISIBLE = "(visibility = 'public' OR agent = ?)"


def get(conn: sqlite3.Connection, concept_id: str, *, agent: str) -> Concept | None:
    """Return the concept ``agent`` may read under ``concept_id``, or None."""
    _check_agent(agent)
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM concepts WHERE id = ? AND {_VISIBLE}", (concept_id, agent)
    ).fetchone()
    return None if row is None else _concept(row)


def under(
    conn: sqlite3.Connection, prefix: str, *, agent: str, limit: int = 10_000
) -> list[Concept]:
    """Return the concepts at ``prefix`` and below it that ``agent`` may read, by id.

    An empty prefix is the whole tree.
    """
    _check_agent(agent)
    if not isinstance(prefix, str):
        raise QueryError(f"prefix must be a string, got {prefix!r}")
    check_count(limit, "limit")
    prefix = prefix.strip(".")
    if prefix:
        # '/' follows '.' in code-point order: [prefix., prefix/) is exactly the subtree.
        where, params = "(id = ? OR (id >= ? AND id < ?))", [prefix, prefix + ".", prefix + "/"]
    else:
        where, params = "1", []
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM concepts WHERE {where} AND {_VISIBLE} ORDER BY id LIMIT ?",
        (*params, agent, limit),
    ).fetchall()
    return [_concept(row) for row in rows]


def links_of(conn: sqlite3.Connection, ids: Iterable[str], *, incoming: bool = False) -> list[Link]:
    """Return the links out of (or, with ``incoming``, into) the given concepts.

    The caller filters the far ends by visibility (:func:`get`); a link names an id only.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return []
    column = "target" if incoming else "source"
    out: list[Link] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        out.extend(
            Link(*row)
            for row in conn.execute(
                f"SELECT source, target, rel, weight FROM concept_links"
                f" WHERE {column} IN ({','.join('?' * len(chunk))})"
                " ORDER BY source, target, rel",
                chunk,
            )
        )
    return out


def tree(concepts: Iterable[Concept], *, root: str = "") -> dict[str, Any]:
    """Materialise concepts as a nested dictionary keyed by path segment (an HDoD).

    Each concept's own fields sit under :data:`SELF` (``type``, ``label``, ``payload``)
    beside its children; paths are taken relative to ``root``.
    """
    root = root.strip(".")
    out: dict[str, Any] = {}
    for concept in concepts:
        path = concept.id
        if root:
            if path == root:
                path = ""
            elif path.startswith(root + "."):
                path = path[len(root) + 1 :]
            else:
                continue
        node = out
        for segment in path.split(".") if path else []:
            node = node.setdefault(segment, {})
        node[SELF] = {"type": concept.type, "label": concept.label, "payload": concept.payload}
    return out


def exists(conn: sqlite3.Connection, concept_id: str) -> bool:
    """Return whether any agent holds a concept under ``concept_id`` (visible or not)."""
    return conn.execute("SELECT 1 FROM concepts WHERE id = ?", (concept_id,)).fetchone() is not None


def count(conn: sqlite3.Connection) -> int:
    """Return how many concepts the tree holds."""
    return int(conn.execute("SELECT count(*) FROM concepts").fetchone()[0])


def _concept(row: Sequence[Any]) -> Concept:
    cid, type_, label, agent, visibility, payload, position, created, updated, versions = row
    return Concept(
        cid,
        type_,
        label,
        agent,
        visibility,
        msgspec.json.decode(payload),
        position,
        created,
        updated,
        versions,
    )


def _check_agent(agent: object) -> None:
    if not isinstance(agent, str) or not agent:
        raise QueryError(f"agent must be a non-empty string, got {agent!r}")


def spread(
    conn: sqlite3.Connection, ids: Sequence[str], *, agent: str, fanout: int = 6
) -> dict[str, list[tuple[int, str, float]]]:
    """Return each concept's strongest neighbours over its links, either way (ADR 0037).

    A link pulls both ends toward each other with its weight (the strongest link of a pair
    counts); neighbours ``agent`` may not read, or that do not exist yet, are left out. Each
    concept keeps at most ``fanout`` neighbours, strongest first (then by id), each as
    ``(position of its newest upsert, id, weight)``: the edges context frames bloom over.
    """
    _check_agent(agent)
    pulls: dict[str, dict[str, float]] = {source: {} for source in ids}
    for link in links_of(conn, ids):
        near = pulls[link.source]
        near[link.target] = max(near.get(link.target, 0.0), link.weight)
    for link in links_of(conn, ids, incoming=True):
        near = pulls[link.target]
        near[link.source] = max(near.get(link.source, 0.0), link.weight)
    wanted = sorted({far for near in pulls.values() for far in near})
    positions: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        positions.update(
            conn.execute(
                f"SELECT id, position FROM concepts WHERE id IN ({','.join('?' * len(chunk))})"
                f" AND {_VISIBLE}",
                (*chunk, agent),
            ).fetchall()
        )
    out: dict[str, list[tuple[int, str, float]]] = {}
    for source, near in pulls.items():
        ranked = sorted(
            ((w, far) for far, w in near.items() if far in positions and far != source),
            key=lambda t: (-t[0], t[1]),
        )
        out[source] = [(int(positions[far]), far, w) for w, far in ranked[:fanout]]
    return out
