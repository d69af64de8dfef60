"""The neuron graph projection: neurons and typed, uint16-weighted connections.

Built from ``neuron.*`` and ``connection.*`` events. Events that do not fit the graph as it
stands are never a crash of the projector; they follow documented rules (ADR 0011) and are
recorded, with their position and the reason, in ``graph_anomalies``:

- activating or archiving a neuron that does not exist (or is archived) is ignored;
- creating a neuron that exists is ignored (the first creation wins);
- a connection whose source or target does not exist (or is archived) is ignored;
- creating a connection that exists, or reweighting one that does not, is ignored.

Weights are validated at append by the kinds' schemas (uint16), and the tables carry CHECK
constraints as a second line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger import Event
from projections.base import Projection, Tables

_CHUNK = 500

# Column order of the in-memory neuron rows used while a batch is applied.
_CONCEPT, _TYPE, _CREATED, _CREATED_POS, _LAST, _COUNT, _ARCHIVED, _REASON = range(8)


class NeuronGraph(Projection):
    """Neurons (concept, type, activation count) and their typed weighted connections."""

    name = "neuron_graph"
    version = 1
    kinds = (
        "neuron.created",
        "neuron.activated",
        "neuron.archived",
        "connection.created",
        "connection.reweighted",
    )
    tables = ("neurons", "connections", "graph_anomalies", "graph_actors")

    def create(self, db: Tables) -> None:
        """Create the graph's tables."""
        conn = db.conn
        conn.execute(
            f"""CREATE TABLE {db["neurons"]} (
                id               TEXT PRIMARY KEY,
                concept          TEXT NOT NULL,
                type             TEXT NOT NULL,
                created_at       TEXT NOT NULL,
                created_position INTEGER NOT NULL,
                last_activated   TEXT,
                activation_count INTEGER NOT NULL DEFAULT 0,
                archived_at      TEXT,
                archive_reason   TEXT
            ) WITHOUT ROWID"""
        )
        conn.execute(
            f"""CREATE TABLE {db["connections"]} (
                source     TEXT NOT NULL,
                target     TEXT NOT NULL,
                type       TEXT NOT NULL,
                weight     INTEGER NOT NULL CHECK (weight BETWEEN 0 AND 65535),
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                PRIMARY KEY (source, target, type)
            ) WITHOUT ROWID"""
        )
        conn.execute(
            f"""CREATE TABLE {db["graph_anomalies"]} (
                position INTEGER PRIMARY KEY,
                kind     TEXT NOT NULL,
                reason   TEXT NOT NULL
            )"""
        )
        conn.execute(
            f"""CREATE TABLE {db["graph_actors"]} (
                actor   TEXT PRIMARY KEY,
                events  INTEGER NOT NULL,
                last_at TEXT NOT NULL
            ) WITHOUT ROWID"""
        )

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply a batch: load the rows it touches, update them in memory, write them back."""
        batch = _Batch(db, events)
        for event in events:
            batch.apply(event)
        batch.flush()


class _Batch:
    """The rows one batch touches, loaded once and written back once."""

    def __init__(self, db: Tables, events: Sequence[Event]) -> None:
        self.db = db
        self.conn = db.conn
        self.neurons: dict[str, list[Any] | None] = {}
        self.new_neurons: set[str] = set()
        self.dirty_neurons: set[str] = set()
        self.connections: dict[tuple[str, str, str], list[Any] | None] = {}
        self.new_connections: set[tuple[str, str, str]] = set()
        self.dirty_connections: set[tuple[str, str, str]] = set()
        self.anomalies: list[tuple[int, str, str]] = []
        self.actors: dict[str, list[Any]] = {}
        self._load(events)

    def _load(self, events: Sequence[Event]) -> None:
        ids: set[str] = set()
        keys: set[tuple[str, str, str]] = set()
        for e in events:
            p = e.payload
            if e.kind.startswith("neuron."):
                ids.add(p.id)
            else:
                ids.add(p.source)
                ids.add(p.target)
                keys.add((p.source, p.target, p.type))
        table = self.db["neurons"]
        wanted = sorted(ids)
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT id, concept, type, created_at, created_position, last_activated,"
                f" activation_count, archived_at, archive_reason FROM {table}"
                f" WHERE id IN ({marks})",
                chunk,
            ):
                self.neurons[row[0]] = list(row[1:])
        for id_ in wanted:
            self.neurons.setdefault(id_, None)
        conn_table = self.db["connections"]
        for key in keys:
            row = self.conn.execute(
                f"SELECT weight, created_at, updated_at FROM {conn_table}"
                " WHERE source = ? AND target = ? AND type = ?",
                key,
            ).fetchone()
            self.connections[key] = None if row is None else list(row)

    def apply(self, e: Event) -> None:
        p = e.payload
        at = e.at.isoformat(timespec="microseconds")
        kind = e.kind
        actor = self.actors.get(e.actor)
        if actor is None:
            self.actors[e.actor] = [1, at]
        else:
            actor[0] += 1
            actor[1] = max(actor[1], at)
        if kind == "neuron.activated":
            row = self._live(p.id, e)
            if row is not None:
                row[_COUNT] += 1
                row[_LAST] = at if row[_LAST] is None else max(row[_LAST], at)
                self.dirty_neurons.add(p.id)
        elif kind == "neuron.created":
            if self.neurons[p.id] is not None:
                self._anomaly(e, f"neuron {p.id!r} already exists")
            else:
                self.neurons[p.id] = [p.concept, p.type, at, e.position, None, 0, None, None]
                self.new_neurons.add(p.id)
        elif kind == "neuron.archived":
            row = self._live(p.id, e)
            if row is not None:
                row[_ARCHIVED], row[_REASON] = at, p.reason
                self.dirty_neurons.add(p.id)
        else:
            self._connection(e, at)

    def _connection(self, e: Event, at: str) -> None:
        p = e.payload
        key = (p.source, p.target, p.type)
        if self._live(p.source, e) is None or self._live(p.target, e) is None:
            return
        row = self.connections[key]
        if e.kind == "connection.created":
            if row is not None:
                self._anomaly(e, f"connection {_label(key)} already exists")
                return
            self.connections[key] = [p.weight, at, at]
            self.new_connections.add(key)
        else:
            if row is None:
                self._anomaly(e, f"connection {_label(key)} does not exist")
                return
            row[0], row[2] = p.weight, max(row[2], at)
            self.dirty_connections.add(key)

    def _live(self, neuron: str, e: Event) -> list[Any] | None:
        row = self.neurons[neuron]
        if row is None:
            self._anomaly(e, f"neuron {neuron!r} does not exist")
        elif row[_ARCHIVED] is not None:
            self._anomaly(e, f"neuron {neuron!r} is archived")
            return None
        return row

    def _anomaly(self, e: Event, reason: str) -> None:
        self.anomalies.append((e.position, e.kind, reason))

    def flush(self) -> None:
        db, conn = self.db, self.conn
        neurons = self.neurons
        conn.executemany(
            f"INSERT INTO {db['neurons']} (concept, type, created_at, created_position,"
            " last_activated, activation_count, archived_at, archive_reason, id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*neurons[i], i) for i in sorted(self.new_neurons)],  # type: ignore[misc]
        )
        conn.executemany(
            f"UPDATE {db['neurons']} SET last_activated = ?, activation_count = ?,"
            " archived_at = ?, archive_reason = ? WHERE id = ?",
            [
                (row[_LAST], row[_COUNT], row[_ARCHIVED], row[_REASON], i)
                for i in sorted(self.dirty_neurons - self.new_neurons)
                if (row := neurons[i]) is not None
            ],
        )
        connections = self.connections
        conn.executemany(
            f"INSERT INTO {db['connections']} (weight, created_at, updated_at, source, target,"
            " type) VALUES (?, ?, ?, ?, ?, ?)",
            [(*connections[k], *k) for k in sorted(self.new_connections)],  # type: ignore[misc]
        )
        conn.executemany(
            f"UPDATE {db['connections']} SET weight = ?, updated_at = ?"
            " WHERE source = ? AND target = ? AND type = ?",
            [
                (row[0], row[2], *k)
                for k in sorted(self.dirty_connections - self.new_connections)
                if (row := connections[k]) is not None
            ],
        )
        conn.executemany(
            f"INSERT INTO {db['graph_anomalies']} (position, kind, reason) VALUES (?, ?, ?)",
            self.anomalies,
        )
        conn.executemany(
            f"INSERT INTO {db['graph_actors']} (actor, events, last_at) VALUES (?, ?, ?)"
            " ON CONFLICT (actor) DO UPDATE SET events = events + excluded.events,"
            " last_at = max(last_at, excluded.last_at)",
            [(a, n, last) for a, (n, last) in sorted(self.actors.items())],
        )


def _label(key: tuple[str, str, str]) -> str:
    return f"{key[0]!r} -[{key[2]}]-> {key[1]!r}"
