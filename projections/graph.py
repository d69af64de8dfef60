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

The read functions below (the agents' JSON export, single neurons and connections, what the
maintenance jobs ask) take a connection from :meth:`ProjectionEngine.read` or
:func:`~engram.projections.timetravel.known_at` and write nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.ledger import Event, Ledger, chunked
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
)
from engram.projections.base import Projection, Tables
from engram.projections.salience import DEFAULT_RATE, decayed, neuron_saliences
from engram.projections.timetravel import Replayable, check_as_of, known_at, micros, replayable

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


# -- reads ----------------------------------------------------------------------------------

EXPORT_FORMAT = "1.0"

#: (source, target, type, weight) of one connection.
Connection = tuple[str, str, str, int]


def export_graph(
    conn: sqlite3.Connection,
    as_of: datetime,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> dict[str, Any]:
    """Return the live graph in the agents' readable JSON shape, salience as of a time.

    ``{"neurons": [{id, concept, type, salience, last_salience_update, connections:
    [{target, weight, type}]}], "metadata": {version, last_modified, active_agents,
    ledger_position, as_of}}``; archived neurons and their connections are left out.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return export_graph(known, as_of, rate=rate)

    at = check_as_of(as_of)
    saliences = neuron_saliences(conn)
    links: dict[str, list[dict[str, Any]]] = {}
    for source, target, type_, weight in conn.execute(
        "SELECT c.source, c.target, c.type, c.weight FROM connections c"
        " JOIN neurons n ON n.id = c.target AND n.archived_at IS NULL"
        " ORDER BY c.source, c.target, c.type"
    ):
        links.setdefault(source, []).append({"target": target, "weight": weight, "type": type_})
    neurons = []
    for id_, concept, type_ in conn.execute(
        "SELECT id, concept, type FROM neurons WHERE archived_at IS NULL ORDER BY id"
    ):
        stored, updated = saliences.get(id_, (0, 0))
        neurons.append(
            {
                "id": id_,
                "concept": concept,
                "type": type_,
                "salience": decayed(stored, updated, at, rate),
                "last_salience_update": _iso(updated) if updated else None,
                "connections": links.get(id_, []),
            }
        )
    last, agents = conn.execute(
        "SELECT max(last_at), json_group_array(actor) FROM"
        " (SELECT actor, last_at FROM graph_actors ORDER BY actor)"
    ).fetchone()
    position = conn.execute(
        "SELECT checkpoint FROM engram_generations WHERE state = 'live' AND name = 'neuron_graph'"
    ).fetchone()
    return {
        "neurons": neurons,
        "metadata": {
            "version": EXPORT_FORMAT,
            "last_modified": last,
            "active_agents": [] if agents is None else [str(a) for a in json.loads(agents)],
            "ledger_position": None if position is None else position[0],
            "as_of": as_of.isoformat(),
        },
    }


def _iso(us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).isoformat(
        timespec="microseconds"
    )


def neuron_state(conn: sqlite3.Connection, neuron: str) -> str | None:
    """Return ``"live"`` or ``"archived"`` for a neuron of the graph, None when it is unknown."""
    row = conn.execute("SELECT archived_at FROM neurons WHERE id = ?", (neuron,)).fetchone()
    if row is None:
        return None
    return "live" if row[0] is None else "archived"


def connection_weight(conn: sqlite3.Connection, source: str, target: str, type: str) -> int | None:
    """Return the weight of a connection of the graph, None when there is none."""
    row = conn.execute(
        "SELECT weight FROM connections WHERE source = ? AND target = ? AND type = ?",
        (source, target, type),
    ).fetchone()
    return None if row is None else int(row[0])


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


def _latest_change(conn: sqlite3.Connection) -> int:
    texts = conn.execute(
        "SELECT max(created_at), max(archived_at) FROM neurons UNION ALL"
        " SELECT max(updated_at), NULL FROM connections"
    ).fetchall()
    return max(
        (micros(datetime.fromisoformat(t)) for row in texts for t in row if t is not None),
        default=0,
    )


replayable("neuron_graph", Replayable(lambda _rate: NeuronGraph(), _latest_change))
