"""The neuron graph projection: neurons and typed, uint16-weighted connections.

Built from ``neuron.*`` and ``connection.*`` events. Events that do not fit the graph as it
stands are never a crash of the projector; they follow documented rules (ADR 0012) and are
recorded, with their position and the reason, in ``graph_anomalies``:

- activating or archiving a neuron that does not exist (or is archived) is ignored;
- creating a neuron that exists is ignored (the first creation wins);
- a connection whose source or target does not exist (or is archived) is ignored;
- creating a connection that exists, or reweighting one that does not, is ignored.

Weights are validated at append by the kinds' schemas (uint16), and the tables carry CHECK
constraints as a second line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engram.ledger import Event
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
)
from engram.projections.base import Projection, Tables

_CHUNK = 500

_NEURON_KINDS = frozenset(t.__kind__ for t in (NeuronCreated, NeuronActivated, NeuronArchived))

# Column order of the in-memory neuron rows used while a batch is applied; _LATEST, not a
# column, holds the latest UTC activation time of the batch until flush.
_CONCEPT, _TYPE, _CREATED, _CREATED_POS, _LAST, _COUNT, _ARCHIVED, _REASON, _LATEST = range(9)
# Column order of the in-memory connection rows (the table's order after the key).
_WEIGHT, _LINKED_AT, _UPDATED_AT = range(3)


class NeuronGraph(Projection):
    """Neurons (concept, type, activation count) and their typed weighted connections."""

    name = "neuron_graph"
    version = 1
    kinds = (
        NeuronCreated,
        NeuronActivated,
        NeuronArchived,
        ConnectionCreated,
        ConnectionReweighted,
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
        batch.run(events)
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
        self.actor_counts: Counter[str] = Counter()  # events per actor in this batch
        self.actor_latest: dict[str, datetime | None] = {}  # latest UTC time per actor
        self.actor_texts: dict[str, str] = {}  # latest other-offset time per actor, as text
        self._load(events)

    def _load(self, events: Sequence[Event]) -> None:
        ids = {e.payload.id for e in events if e.kind in _NEURON_KINDS}
        links = [e.payload for e in events if e.kind not in _NEURON_KINDS]
        ids.update([p.source for p in links])
        ids.update([p.target for p in links])
        keys = {(p.source, p.target, p.type) for p in links}
        table = self.db["neurons"]
        wanted = sorted(ids)
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for id_, *columns in self.conn.execute(
                f"SELECT id, concept, type, created_at, created_position, last_activated,"
                f" activation_count, archived_at, archive_reason FROM {table}"
                f" WHERE id IN ({marks})",
                chunk,
            ):
                self.neurons[id_] = [*columns, None]
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

    def run(self, events: Sequence[Event]) -> None:
        """Apply the batch's events in order.

        The ledger's own times are UTC, whose ISO text orders like the times themselves:
        for them the latest activation of each neuron and the latest event of each actor are
        kept as datetimes and formatted once, at flush. A time with any other offset is
        formatted and compared as text, event by event, as stored.
        """
        neurons = self.neurons
        latest = self.actor_latest
        actor, actor_seen = None, None  # the current run of one actor's events
        for e in events:
            at = e.at
            if at.tzinfo is not UTC:
                self._apply_text(e)
                continue
            if e.actor != actor:
                if actor is not None:
                    latest[actor] = actor_seen
                actor = e.actor
                actor_seen = latest.get(actor)
            if actor_seen is None or at > actor_seen:
                actor_seen = at
            if e.kind == "neuron.activated":
                neuron = e.payload.id
                row = neurons[neuron]
                if row is None or row[_ARCHIVED] is not None:
                    self._live(neuron, e)
                    continue
                row[_COUNT] += 1
                seen = row[_LATEST]
                if seen is None or at > seen:
                    row[_LATEST] = at
            else:
                self._apply_other(e, at.isoformat(timespec="microseconds"))
        if actor is not None:
            latest[actor] = actor_seen
        self.actor_counts.update(e.actor for e in events)

    def _apply_text(self, e: Event) -> None:
        """Apply one event whose time is not UTC, comparing times as their stored text."""
        at = e.at.isoformat(timespec="microseconds")
        texts = self.actor_texts
        texts[e.actor] = at if e.actor not in texts else max(texts[e.actor], at)
        if e.kind == "neuron.activated":
            row = self._live(e.payload.id, e)
            if row is not None:
                row[_COUNT] += 1
                row[_LAST] = at if row[_LAST] is None else max(row[_LAST], at)
                self.dirty_neurons.add(e.payload.id)
        else:
            self._apply_other(e, at)

    def _apply_other(self, e: Event, at: str) -> None:
        p = e.payload
        kind = e.kind
        if kind == "neuron.created":
            if self.neurons[p.id] is not None:
                self._anomaly(e, f"neuron {p.id!r} already exists")
            else:
                self.neurons[p.id] = [p.concept, p.type, at, e.position, None, 0, None, None, None]
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
            row[_WEIGHT], row[_UPDATED_AT] = p.weight, max(row[_UPDATED_AT], at)
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
        dirty = self.dirty_neurons
        for neuron, row in neurons.items():
            if row is not None and (when := row[_LATEST]) is not None:
                text = when.isoformat(timespec="microseconds")
                row[_LAST] = text if row[_LAST] is None else max(row[_LAST], text)
                dirty.add(neuron)
        actors = []
        for name, count in sorted(self.actor_counts.items()):
            latest = self.actor_texts.get(name)
            utc = self.actor_latest.get(name)
            if utc is not None:
                text = utc.isoformat(timespec="microseconds")
                latest = text if latest is None else max(latest, text)
            actors.append((name, count, latest))
        conn.executemany(
            f"INSERT INTO {db['neurons']} (concept, type, created_at, created_position,"
            " last_activated, activation_count, archived_at, archive_reason, id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*neurons[i][:_LATEST], i) for i in sorted(self.new_neurons)],  # type: ignore[index]
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
                (row[_WEIGHT], row[_UPDATED_AT], *k)
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
            actors,
        )


def _label(key: tuple[str, str, str]) -> str:
    return f"{key[0]!r} -[{key[2]}]-> {key[1]!r}"
