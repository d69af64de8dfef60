"""Projection figures: rebuild, spreading activation and catch-up lag, against references.

- **rebuild**: the neuron graph and the salience index rebuilt from a SQLite ledger of mixed
  events, beside a hand-written loop building the same state
  (:mod:`engram.bench.rebuild_reference`). Peak memory of the rebuild is measured in a child
  process at two lengths of the same ledger (same neurons), to show it follows the
  projections' state, not the history.
- **spreading activation**: :meth:`GraphSnapshot.propagate`, depth 3 from one seed, beside
  three scipy.sparse CSR matrix-vector products over the same graph.
- **catch-up lag**: a paced appender into a durable ledger while ``ProjectionEngine.follow``
  runs in another process; lag is when the projections' checkpoint covers an event minus when
  its append returned.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import numpy as np

from engram.bench.common import Config, Figure, interleave, log
from engram.bench.ledger_bench import build_ledger
from engram.bench.rebuild_reference import kind_and_payload, same_state
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    ConnectionType,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
    RecalledItem,
)
from engram.projections.activation import GraphSnapshot
from engram.projections.engine import REBUILD_BATCH, ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import MAX, SalienceIndex
from engram.projections.store import ProjectionStore, physical

_BASE = datetime(2025, 1, 1, tzinfo=UTC)
_TYPES: tuple[ConnectionType, ...] = (
    "feeds_into",
    "influences",
    "inhibits",
    "recalls",
    "triggers",
)
# kind -> share (per mille) of the history after the neurons are created
_MIX: dict[str, float] = {
    "neuron.activated": 900,
    "connection.created": 30,
    "connection.reweighted": 20,
    "memory.observed": 30,
    "memory.recalled": 19.8,
    "neuron.archived": 0.2,
}


@dataclass(frozen=True)
class _Sizes:
    rebuild_events: int
    neurons: int
    graph_neurons: int
    graph_connections: int
    queries: int
    lag_seconds: float
    lag_rate: int = 1000


_FULL = _Sizes(1_000_000, 10_000, 100_000, 1_000_000, 300, 20.0)
_QUICK = _Sizes(100_000, 10_000, 10_000, 100_000, 200, 5.0)


class DetailedFigure(Figure):
    """A figure that also carries the raw measurements behind it into the JSON report."""

    def __init__(self, *args: Any, details: dict[str, Any] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.details: dict[str, Any] = details if details is not None else {}

    def as_json(self) -> dict[str, Any]:
        out = super().as_json()
        out["details"] = self.details
        return out


def sizes_of(config: Config) -> _Sizes:
    """Return the projection sizes of this run (smaller with --quick)."""
    return _QUICK if config.quick else _FULL


# -- the history -----------------------------------------------------------------------------


class History:
    """A seeded history: ``neurons`` neuron.created, then mostly activations of them."""

    def __init__(self, seed: int, neurons: int) -> None:
        self._rnd = random.Random(seed)
        self.neurons = [f"n_{i:06d}" for i in range(neurons)]
        self.made = 0
        self._kinds = list(_MIX)
        self._weights = list(_MIX.values())
        self._connections: list[tuple[str, str, ConnectionType]] = []
        self._seen: set[tuple[str, str, ConnectionType]] = set()
        self._observed: list[int] = []
        self._archived: set[str] = set()

    def events(self, n: int) -> list[NewEvent]:
        """Return the next ``n`` events (positions follow on from the previous call)."""
        out: list[NewEvent] = []
        rnd = self._rnd
        kinds = rnd.choices(self._kinds, self._weights, k=n)
        for kind in kinds:
            self.made += 1
            position = self.made
            at = _BASE + timedelta(milliseconds=50 * position)
            payload: msgspec.Struct
            if position <= len(self.neurons):
                neuron = self.neurons[position - 1]
                kind = "neuron.created"
                payload = NeuronCreated(id=neuron, concept=f"concept {neuron}", type="semantic")
            elif kind == "neuron.activated":
                neuron = rnd.choice(self.neurons)
                if neuron in self._archived:  # a few activations still hit archived neurons
                    neuron = rnd.choice(self.neurons)
                payload = NeuronActivated(id=neuron, strength=round(rnd.random(), 3))
            elif kind == "connection.created" or not self._connections:
                kind = "connection.created"
                source, target = rnd.choice(self.neurons), rnd.choice(self.neurons)
                key = (source, target, rnd.choice(_TYPES))
                if key not in self._seen:
                    self._seen.add(key)
                    self._connections.append(key)
                neuron = source
                payload = ConnectionCreated(
                    source=source, target=target, type=key[2], weight=rnd.randrange(65536)
                )
            elif kind == "connection.reweighted":
                source, target, type_ = rnd.choice(self._connections)
                neuron = source
                payload = ConnectionReweighted(
                    source=source, target=target, type=type_, weight=rnd.randrange(65536)
                )
            elif kind == "memory.observed":
                self._observed.append(position)
                neuron = ""
                payload = MemoryObserved(
                    agent="inner", text="a memory", importance=rnd.choice((None, 3, 7))
                )
            elif kind == "memory.recalled" and self._observed:
                neuron = ""
                items = [RecalledItem(rnd.choice(self._observed), 0.5) for _ in range(3)]
                payload = MemoryRecalled(agent="inner", query="why", items=items, as_of=at)
            else:
                kind = "neuron.archived"
                neuron = rnd.choice(self.neurons)
                self._archived.add(neuron)
                payload = NeuronArchived(id=neuron, reason="decayed")
            stream = f"neuron:{neuron}" if neuron else "agent:inner"
            out.append(NewEvent.of(payload, stream=stream, actor="agent", at=at))
        return out


# -- 1. rebuild ------------------------------------------------------------------------------


def _engram_rebuild(ledger_path: str, store: str) -> float:
    shutil.rmtree(store, ignore_errors=True)
    ledger = Ledger.open(ledger_path)
    try:
        with ProjectionEngine(ledger, store, [NeuronGraph(), SalienceIndex()]) as engine:
            start = time.perf_counter()
            engine.rebuild()
            return time.perf_counter() - start
    finally:
        ledger.close()
        shutil.rmtree(store, ignore_errors=True)


_PROBE = """
import json, resource, sys
from engram.ledger import Ledger
from engram.projections.engine import REBUILD_BATCH, ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))

ledger = Ledger.open(sys.argv[1])
engine = ProjectionEngine(ledger, sys.argv[2], [NeuronGraph(), SalienceIndex()])
try:  # reset the high-water mark to the current RSS (Linux), so the peak is the rebuild's
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before, how = status("VmRSS"), "VmHWM after a reset"
except OSError:
    before, how = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss"
engine.rebuild()
after = status("VmHWM") if how.startswith("VmHWM") else resource.getrusage(
    resource.RUSAGE_SELF).ru_maxrss
with engine.read() as conn:
    rows = sum(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
               for t in ("neurons", "connections", "graph_anomalies", "graph_actors", "salience"))
engine.close()
ledger.close()
print(json.dumps({"before_kib": before, "after_kib": after, "state_rows": rows, "how": how}))
"""


def _memory_probe(ledger_path: str, store: str) -> dict[str, Any]:
    """Rebuild in a fresh child process; return its peak RSS growth and the state it built."""
    shutil.rmtree(store, ignore_errors=True)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, ledger_path, store],
            capture_output=True,
            text=True,
            check=True,
            timeout=3600,
        )
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        found["store_bytes"] = sum(
            os.path.getsize(os.path.join(store, f)) for f in os.listdir(store)
        )
        found["growth_mib"] = (found["after_kib"] - found["before_kib"]) / 1024
        found["peak_mib"] = found["after_kib"] / 1024
        return found
    finally:
        shutil.rmtree(store, ignore_errors=True)


def rebuild(config: Config) -> list[Figure]:
    """Rebuild throughput against the hand-written loop; peak memory at two ledger lengths."""
    sizes = sizes_of(config)
    n, half = sizes.rebuild_events, sizes.rebuild_events // 2
    path = os.path.join(config.scratch, "projections-ledger.db")
    store = os.path.join(config.scratch, "projections-store")
    history = History(config.seed + 10, sizes.neurons)
    seconds = build_ledger(path, history.events, half, f"projections: generating {half:,} events")
    probe_half = _memory_probe(path, store)
    seconds += build_ledger(
        path, history.events, n - half, f"projections: generating {n - half:,} more events"
    )
    log(f"  generated {n:,} events over {sizes.neurons:,} neurons in {seconds:.1f} s")
    probe_full = _memory_probe(path, store)

    def engram() -> float:
        return n / _engram_rebuild(path, store)

    def by_hand() -> float:
        spent, count = same_state(path, os.path.join(config.scratch, "by-hand.db"))
        if count != n:
            raise RuntimeError(f"the reference read {count:,} events, expected {n:,}")
        return n / spent

    def kind_payload() -> float:
        spent, count = kind_and_payload(path)
        if count != n:
            raise RuntimeError(f"the old reference read {count:,} events, expected {n:,}")
        return n / spent

    samples = interleave(
        config.repeat,
        [("engram", engram), ("raw", by_hand), ("old", kind_payload)],
        "rebuild",
    )
    what = (
        f"ProjectionEngine.rebuild() of NeuronGraph and SalienceIndex over {n:,} mixed events "
        f"({sizes.neurons:,} neurons, 90% neuron.activated)"
    )
    speed = DetailedFigure(
        f"rebuild graph+salience, {n // 1000:,}k events",
        "events/s",
        "same state by hand",
        0.5,
        note=f"{what}; reference: raw sqlite3 reads position, id, kind, actor, at, payload, "
        "msgspec decodes, dicts apply the same rules (times, decay, anomalies, actors), and "
        "the state is written to SQLite in one transaction (ADR 0021)",
    )
    speed.engram_samples, speed.reference_samples = samples["engram"], samples["raw"]
    old = DetailedFigure(
        f"rebuild graph+salience, {n // 1000:,}k events, earlier reference",
        "events/s",
        "raw sqlite3 + msgspec + dicts",
        None,
        note=f"{what}; the reference used before ADR 0021: SELECT kind, payload, payloads "
        "decoded, counters in dicts without times or decay, state never written",
    )
    old.engram_samples, old.reference_samples = samples["engram"], samples["old"]
    growth = probe_full["growth_mib"] - probe_half["growth_mib"]
    state = (probe_full["store_bytes"] - probe_half["store_bytes"]) / 2**20
    memory = DetailedFigure(
        f"rebuild peak RSS growth, {n // 1000:,}k vs {half // 1000:,}k events",
        "MiB",
        f"same, {half // 1000:,}k events",
        None,
        note=f"peak RSS growth of a child process during rebuild() ({probe_full['how']}): "
        f"{probe_half['growth_mib']:.1f} "
        f"MiB at {half:,} events, {probe_full['growth_mib']:.1f} MiB at {n:,} (+{growth:.1f} "
        f"MiB) while the projections' state grew from {probe_half['state_rows']:,} to "
        f"{probe_full['state_rows']:,} rows (store file +{state:.1f} MiB); a rebuild holds one "
        f"batch of at most {REBUILD_BATCH:,} events, so the peak is flat once the ledger is "
        f"longer than that; ratio: growth at {n:,} / growth at {half:,}",
        details={"half": probe_half, "full": probe_full},
    )
    memory.engram_samples = [max(probe_full["growth_mib"], 0.1)]
    memory.reference_samples = [max(probe_half["growth_mib"], 0.1)]
    return [speed, old, memory]


# -- 2. spreading activation -----------------------------------------------------------------


def _build_graph(directory: str, neurons: int, connections: int, seed: int) -> list[str]:
    """Write a live graph and its saliences straight into a fresh projection store."""
    rnd = np.random.default_rng(seed)
    ids = [f"n_{i:07d}" for i in range(neurons)]
    store = ProjectionStore(directory)
    graph, salience = NeuronGraph(), SalienceIndex()
    as_of_us = int((_BASE - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 1_000_000
    try:
        with store.transaction() as conn:
            g = store.create_generation(conn, graph, "live").generation
            s = store.create_generation(conn, salience, "live").generation
            at = _BASE.isoformat(timespec="microseconds")
            conn.executemany(
                f"INSERT INTO {physical(g, 'neurons')} (id, concept, type, created_at,"
                " created_position, activation_count) VALUES (?, ?, 'semantic', ?, ?, 0)",
                [(id_, id_, at, i + 1) for i, id_ in enumerate(ids)],
            )
            # Unique (source, target, type) triples: draw extra, keep the first `connections`.
            draw = int(connections * 1.05) + 16
            src = rnd.integers(0, neurons, draw)
            dst = rnd.integers(0, neurons, draw)
            typ = rnd.integers(0, len(_TYPES), draw)
            key = (src * neurons + dst) * len(_TYPES) + typ
            _, first = np.unique(key, return_index=True)
            keep = np.sort(first)[:connections]
            weights = rnd.integers(0, 65536, draw)
            conn.executemany(
                f"INSERT INTO {physical(g, 'connections')} (source, target, type, weight,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    (ids[a], ids[b], _TYPES[c], w, at, at)
                    for a, b, c, w in zip(
                        src[keep].tolist(),
                        dst[keep].tolist(),
                        typ[keep].tolist(),
                        weights[keep].tolist(),
                        strict=True,
                    )
                ),
            )
            stored = rnd.integers(1000, 65536, neurons).tolist()
            ago = rnd.integers(0, 48 * 3_600_000_000, neurons).tolist()
            conn.executemany(
                f"INSERT INTO {physical(s, 'salience')} (item_kind, item_id, position, salience,"
                " updated_us, rank) VALUES ('neuron', ?, ?, ?, ?, 0.0)",
                ((id_, i + 1, stored[i], as_of_us - ago[i]) for i, id_ in enumerate(ids)),
            )
    finally:
        store.close()
    return ids


def _reference_matrix(path: str, ids: list[str]) -> Any:
    """Load the same graph into a scipy CSR matrix (transposed: row = target)."""
    import scipy.sparse  # type: ignore[import-untyped]

    index = {id_: i for i, id_ in enumerate(ids)}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT source, target, type, weight FROM connections").fetchall()
    finally:
        conn.close()
    src = np.fromiter((index[r[0]] for r in rows), dtype=np.int64, count=len(rows))
    dst = np.fromiter((index[r[1]] for r in rows), dtype=np.int64, count=len(rows))
    w = np.fromiter(
        ((-r[3] if r[2] == "inhibits" else r[3]) / MAX for r in rows),
        dtype=np.float64,
        count=len(rows),
    )
    n = len(ids)
    return scipy.sparse.csr_matrix((w, (dst, src)), shape=(n, n))


@contextmanager
def _one_thread() -> Iterator[None]:
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:  # numpy's indexing and scipy's sparse products are single-threaded
        with nullcontext():
            yield
        return
    with threadpool_limits(limits=1):
        yield


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def activation(config: Config) -> list[Figure]:
    """Per-query latency of a depth-3 wave against three CSR matrix-vector products."""
    sizes = sizes_of(config)
    try:
        import scipy.sparse  # noqa: F401
    except ImportError:
        skipped = Figure("spreading activation, depth 3", "queries/s", "scipy.sparse", 1.0)
        skipped.skipped = "scipy is not installed (pip install 'engram[bench]')"
        return [skipped]
    n, m = sizes.graph_neurons, sizes.graph_connections
    directory = os.path.join(config.scratch, "activation-store")
    log(f"spreading activation: writing a graph of {n:,} neurons and {m:,} connections")
    ids = _build_graph(directory, n, m, config.seed + 20)
    path = os.path.join(directory, "projections.db")
    as_of = _BASE
    store = ProjectionStore(directory)
    loads: list[float] = []
    ref_loads: list[float] = []
    snapshot: GraphSnapshot | None = None
    matrix: Any = None
    for _ in range(max(1, min(config.repeat, 3))):
        start = time.perf_counter()
        with store.snapshot() as conn:
            snapshot = GraphSnapshot(conn)
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        matrix = _reference_matrix(path, ids)
        ref_loads.append(time.perf_counter() - start)
    store.close()
    assert snapshot is not None
    rnd = random.Random(config.seed + 21)
    p50s: list[float] = []
    p99s: list[float] = []
    ref50: list[float] = []
    ref99: list[float] = []
    reached: list[int] = []
    with _one_thread():
        for rep in range(config.repeat):
            engram_times: list[float] = []
            ref_times: list[float] = []
            vector = np.zeros(n, dtype=np.float64)
            for q in range(sizes.queries):
                i = rnd.randrange(n)
                seeds = {ids[i]: 1.0}
                for side in (0, 1) if q % 2 == 0 else (1, 0):
                    if side == 0:
                        start = time.perf_counter()
                        result = snapshot.propagate(seeds, as_of, max_depth=3)
                        engram_times.append(time.perf_counter() - start)
                        reached.append(len(result.levels))
                    else:
                        start = time.perf_counter()
                        vector[:] = 0.0
                        vector[i] = 1.0
                        x = vector
                        for _ in range(3):
                            x = matrix @ x
                        ref_times.append(time.perf_counter() - start)
            p50s.append(_percentile(engram_times, 50))
            p99s.append(_percentile(engram_times, 99))
            ref50.append(_percentile(ref_times, 50))
            ref99.append(_percentile(ref_times, 99))
            log(f"  spreading activation: repetition {rep + 1}/{config.repeat} done")
    shutil.rmtree(directory, ignore_errors=True)
    details = {
        "queries_per_repetition": sizes.queries,
        "engram_p50_s": p50s,
        "engram_p99_s": p99s,
        "reference_p50_s": ref50,
        "reference_p99_s": ref99,
        "snapshot_load_s": loads,
        "reference_load_s": ref_loads,
        "median_neurons_reached": statistics.median(reached) if reached else 0,
    }
    label = f"{n // 1000:,}k neurons, {m // 1000:,}k connections"
    p50 = DetailedFigure(
        f"spreading activation p50, depth 3, {label}",
        "queries/s",
        "scipy CSR, 3 matvecs",
        1.0,
        note=f"1/p50 latency of GraphSnapshot.propagate from one random seed: engram p50 "
        f"{statistics.median(p50s) * 1e3:.3f} ms, p99 {statistics.median(p99s) * 1e3:.3f} ms; "
        f"reference p50 {statistics.median(ref50) * 1e3:.3f} ms, p99 "
        f"{statistics.median(ref99) * 1e3:.3f} ms; {sizes.queries} seeds per repetition, "
        f"median {details['median_neurons_reached']:,} neurons reached; one thread",
        details=details,
    )
    p50.engram_samples = [1 / v for v in p50s]
    p50.reference_samples = [1 / v for v in ref50]
    p99 = DetailedFigure(
        f"spreading activation p99, depth 3, {label}",
        "queries/s",
        "scipy CSR, 3 matvecs",
        None,
        note="1/p99 latency, same queries as the row above",
        details=details,
    )
    p99.engram_samples = [1 / v for v in p99s]
    p99.reference_samples = [1 / v for v in ref99]
    load = DetailedFigure(
        f"activation snapshot load, {label}",
        "s",
        "sqlite3 rows -> scipy CSR",
        None,
        note="one-off GraphSnapshot(conn) from the live views (excluded from the per-query "
        "times); reference: SELECT the connections and build a scipy CSR matrix",
        details={"engram_s": loads, "reference_s": ref_loads},
    )
    load.engram_samples, load.reference_samples = loads, ref_loads
    return [p50, p99, load]
