"""The hand-written loops the rebuild figure is measured against.

- :func:`same_state` does the work a rebuild of the neuron graph and the salience index
  does, by hand: it reads the columns that state depends on (position, id, kind, actor,
  time, payload) with raw sqlite3, decodes each payload into its Struct, keeps the state in
  dicts under the projections' rules (event times, lazy decay, anomalies, actors) and
  writes it to a fresh SQLite file in one transaction, as the projections' tables hold it:
  the same rows and values (a test compares them), anomaly reasons aside.
- :func:`kind_and_payload` is the earlier reference, kept for comparison: it reads kind and
  payload only, keeps counters without times or decay, and never writes its state.
"""

from __future__ import annotations

import math
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any

import msgspec

from engram.bench.common import remove_db
from engram.ledger.catalog import KINDS
from engram.projections.base import kind_names
from engram.projections.graph import NeuronGraph
from engram.projections.salience import (
    ACTIVATION_GAIN,
    DEFAULT_RATE,
    INITIAL,
    MAX,
    RECALL_GAIN,
    rank,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US_PER_HOUR = 3_600_000_000
_TABLES = (
    "CREATE TABLE neurons (id TEXT PRIMARY KEY, concept TEXT NOT NULL, type TEXT NOT NULL,"
    " created_at TEXT NOT NULL, created_position INTEGER NOT NULL, last_activated TEXT,"
    " activation_count INTEGER NOT NULL, archived_at TEXT, archive_reason TEXT) WITHOUT ROWID",
    "CREATE TABLE connections (source TEXT NOT NULL, target TEXT NOT NULL, type TEXT NOT NULL,"
    " weight INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,"
    " PRIMARY KEY (source, target, type)) WITHOUT ROWID",
    "CREATE TABLE anomalies (position INTEGER PRIMARY KEY, kind TEXT NOT NULL,"
    " reason TEXT NOT NULL)",
    "CREATE TABLE actors (actor TEXT PRIMARY KEY, events INTEGER NOT NULL,"
    " last_at TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE salience (item_kind TEXT NOT NULL, item_id TEXT NOT NULL,"
    " position INTEGER NOT NULL, salience INTEGER NOT NULL, updated_us INTEGER NOT NULL,"
    " rank REAL NOT NULL, importance INTEGER, last_recalled_us INTEGER,"
    " recall_count INTEGER NOT NULL, archived INTEGER NOT NULL,"
    " PRIMARY KEY (item_kind, item_id)) WITHOUT ROWID",
    "CREATE INDEX salience_rank ON salience (item_kind, archived, rank)",
    "CREATE INDEX salience_position ON salience (position)",
)


def kind_and_payload(ledger_path: str) -> tuple[float, int]:
    """Scan kind and payload, decode, keep counters in dicts; return (seconds, events)."""
    decoders = {kind: msgspec.json.Decoder(t) for kind, t in KINDS.items()}
    conn = sqlite3.connect(ledger_path)
    try:
        start = time.perf_counter()
        counts: dict[str, int] = {}
        salience: dict[str, int] = {}
        archived: set[str] = set()
        weights: dict[tuple[str, str, str], int] = {}
        memories: dict[int, int] = {}
        recalls: dict[int, int] = {}
        n = 0
        for kind, data in conn.execute("SELECT kind, payload FROM events ORDER BY position"):
            n += 1
            p: Any = decoders[kind].decode(data)
            if kind == "neuron.activated":
                if p.id in archived:
                    continue
                counts[p.id] = counts.get(p.id, 0) + 1
                s = salience.get(p.id, 32768)
                salience[p.id] = s + int((MAX - s) * min(p.strength, 1.0) * 0.25)
            elif kind == "neuron.created":
                counts.setdefault(p.id, 0)
                salience.setdefault(p.id, 32768)
            elif kind in ("connection.created", "connection.reweighted"):
                weights[(p.source, p.target, p.type)] = p.weight
            elif kind == "memory.observed":
                memories[n] = 32768 if p.importance is None else MAX * p.importance // 10
            elif kind == "memory.recalled":
                for item in p.items:
                    recalls[item.position] = recalls.get(item.position, 0) + 1
            elif kind == "neuron.archived":
                archived.add(p.id)
        return time.perf_counter() - start, n
    finally:
        conn.close()


def same_state(ledger_path: str, out_path: str, *, keep: bool = False) -> tuple[float, int]:
    """Build the graph's and the salience index's state by hand; return (seconds, events).

    The state is written to ``out_path``, removed afterwards unless ``keep``.
    """
    decoders = {kind: msgspec.json.Decoder(t).decode for kind, t in KINDS.items()}
    remove_db(out_path)
    conn = sqlite3.connect(ledger_path)
    out = sqlite3.connect(out_path, isolation_level=None)
    try:
        out.execute("PRAGMA journal_mode = WAL")
        out.execute("PRAGMA synchronous = NORMAL")
        for ddl in _TABLES:
            out.execute(ddl)
        start = time.perf_counter()
        rate = DEFAULT_RATE
        parse = datetime.fromisoformat
        floor = math.floor
        graph_kinds = frozenset(kind_names(NeuronGraph()))
        neurons: dict[str, list[Any]] = {}
        links: dict[tuple[str, str, str], list[Any]] = {}
        anomalies: list[tuple[int, str, str]] = []
        actors: dict[str, list[Any]] = {}
        # [position, importance, salience, updated_us, recalled_us, count, archived]
        neuron_items: dict[str, list[Any]] = {}
        memory_items: dict[str, list[Any]] = {}
        by_position: dict[int, list[Any]] = {}
        item: list[Any] | None
        n = 0
        rows = conn.execute(
            "SELECT position, id, kind, actor, at, payload FROM events ORDER BY position"
        )
        for position, id_, kind, actor, at, data in rows:
            n += 1
            p: Any = decoders[kind](data)
            delta = parse(at) - _EPOCH
            us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
            if kind in graph_kinds:  # the graph counts the events it consumes per actor
                seen = actors.get(actor)
                if seen is None:
                    actors[actor] = [1, at]
                else:
                    seen[0] += 1
                    if at > seen[1]:
                        seen[1] = at
            if kind == "neuron.activated":
                neuron = neurons.get(p.id)
                if neuron is None or neuron[6] is not None:
                    anomalies.append((position, kind, f"neuron {p.id!r} is not live"))
                    continue
                neuron[5] += 1
                if neuron[4] is None or at > neuron[4]:
                    neuron[4] = at
                item = neuron_items[p.id]
                current = item[2]
                if us > item[3]:
                    if current:
                        current = floor(current * rate ** ((us - item[3]) / _US_PER_HOUR))
                    item[3] = us
                strength = p.strength
                strength = 1.0 if strength > 1.0 else strength if strength >= 0.0 else 0.0
                current += floor((MAX - current) * strength * ACTIVATION_GAIN)
                item[2] = current if current < MAX else MAX
            elif kind == "neuron.created":
                if p.id in neurons:
                    anomalies.append((position, kind, f"neuron {p.id!r} already exists"))
                    continue
                neurons[p.id] = [p.concept, p.type, at, position, None, 0, None, None]
                neuron_items[p.id] = [position, None, INITIAL, us, None, 0, 0]
            elif kind == "neuron.archived":
                neuron = neurons.get(p.id)
                if neuron is None or neuron[6] is not None:
                    anomalies.append((position, kind, f"neuron {p.id!r} is not live"))
                    continue
                neuron[6], neuron[7] = at, p.reason
                neuron_items[p.id][6] = 1
            elif kind in ("connection.created", "connection.reweighted"):
                source, target = neurons.get(p.source), neurons.get(p.target)
                if source is None or target is None or source[6] or target[6]:
                    anomalies.append((position, kind, "an end is not live"))
                    continue
                key = (p.source, p.target, p.type)
                link = links.get(key)
                if (link is None) != (kind == "connection.created"):
                    anomalies.append((position, kind, f"connection {key} clashes"))
                elif link is None:
                    links[key] = [p.weight, at, at]
                else:
                    link[0] = p.weight
                    if at > link[2]:
                        link[2] = at
            elif kind == "memory.observed":
                start_value = INITIAL if p.importance is None else MAX * p.importance // 10
                item = [position, p.importance, start_value, us, None, 0, 0]
                memory_items[id_] = by_position[position] = item
            elif kind == "memory.recalled":
                for recalled in p.items:
                    item = by_position.get(recalled.position)
                    if item is None or item[6]:
                        continue
                    current = item[2]
                    if us > item[3]:
                        if current:
                            current = floor(current * rate ** ((us - item[3]) / _US_PER_HOUR))
                        item[3] = us
                    current += floor((MAX - current) * RECALL_GAIN)
                    item[2] = current if current < MAX else MAX
                    item[4] = item[3]
                    item[5] += 1
            elif kind == "memory.archived":
                for archived in p.positions:
                    item = by_position.get(archived)
                    if item is not None:
                        item[6] = 1
        items = [("neuron", k, v) for k, v in neuron_items.items()]
        items += [("memory", k, v) for k, v in memory_items.items()]
        out.execute("BEGIN")
        out.executemany(
            "INSERT INTO neurons VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(k, *v) for k, v in neurons.items()],
        )
        out.executemany(
            "INSERT INTO connections VALUES (?, ?, ?, ?, ?, ?)",
            [(*k, *v) for k, v in links.items()],
        )
        out.executemany("INSERT INTO anomalies VALUES (?, ?, ?)", anomalies)
        out.executemany("INSERT INTO actors VALUES (?, ?, ?)", [(k, *v) for k, v in actors.items()])
        out.executemany(
            "INSERT INTO salience VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (kind, k, v[0], v[2], v[3], rank(v[2], v[3], rate), v[1], v[4], v[5], v[6])
                for kind, k, v in items
            ],
        )
        out.execute("COMMIT")
        return time.perf_counter() - start, n
    finally:
        conn.close()
        out.close()
        if not keep:
            remove_db(out_path)
