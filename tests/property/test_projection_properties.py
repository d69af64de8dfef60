"""Properties of the projection engine, the neuron graph, the salience index and activation.

Every example runs on real SQLite files in a fresh directory: a ledger, one store caught up
incrementally (random append chunks, random engine batch sizes) and one built in a single
pass. The graph and the salience index are also checked against small reference models
written from their modules' docstrings (the documented rules), not from their code.
"""

from __future__ import annotations

import math
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import (
    HISTORY_START,
    connection_created,
    cyclic_graphs,
    graph_histories,
    memory_recalled,
    neuron_activated,
    neuron_archived,
    neuron_created,
    partitions,
    split,
)

from engram.ledger import Ledger, NewEvent
from engram.projections import salience
from engram.projections.activation import REFRACTORY, TRIGGER_RATIO, GraphSnapshot
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import (
    ACTIVATION_GAIN,
    INITIAL,
    MAX,
    RECALL_GAIN,
    SalienceIndex,
    decayed,
    micros,
    reinforced,
)

NAMES = ("neuron_graph", "salience")
batch_sizes = st.integers(min_value=1, max_value=7)


def _engine(ledger: Ledger, store: Path, batch_size: int = 5000) -> ProjectionEngine:
    return ProjectionEngine(ledger, store, [NeuronGraph(), SalienceIndex()], batch_size=batch_size)


@contextmanager
def _ledger() -> Iterator[tuple[Ledger, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(str(Path(tmp) / "ledger.db"))
        try:
            yield ledger, Path(tmp)
        finally:
            ledger.close()


def _digests(engine: ProjectionEngine) -> dict[str, str]:
    return {name: engine.digest(name) for name in NAMES}


def _fresh_digests(ledger: Ledger, store: Path) -> dict[str, str]:
    with _engine(ledger, store) as fresh:
        fresh.catch_up()
        return _digests(fresh)


# -- reference models (from the docstrings of projections/graph.py and salience.py) ---------


def graph_model(history: Sequence[NewEvent]) -> dict[str, Any]:
    """Apply the graph's documented rules to a history appended at positions 1..n."""
    neurons: dict[str, dict[str, Any]] = {}
    connections: dict[tuple[str, str, str], int] = {}
    anomalies: dict[int, str] = {}
    actors: dict[str, int] = defaultdict(int)

    def live(neuron: str) -> bool:
        return neuron in neurons and not neurons[neuron]["archived"]

    for position, e in enumerate(history, start=1):
        p, kind = e.payload, e.kind
        if kind not in NeuronGraph.kinds:
            continue
        actors[e.actor] += 1
        if kind == "neuron.created":
            if p.id in neurons:
                anomalies[position] = kind
            else:
                neurons[p.id] = {
                    "type": p.type,
                    "created_position": position,
                    "count": 0,
                    "archived": False,
                }
        elif kind in ("neuron.activated", "neuron.archived"):
            if not live(p.id):
                anomalies[position] = kind
            elif kind == "neuron.activated":
                neurons[p.id]["count"] += 1
            else:
                neurons[p.id]["archived"] = True
        else:
            key = (p.source, p.target, p.type)
            exists = key in connections
            missing = not (live(p.source) and live(p.target))
            if missing or exists == (kind == "connection.created"):
                anomalies[position] = kind
            else:
                connections[key] = p.weight
    return {
        "neurons": neurons,
        "connections": connections,
        "anomalies": anomalies,
        "actors": dict(actors),
    }


def salience_model(history: Sequence[NewEvent]) -> dict[tuple[str, str], list[Any]]:
    """Apply the salience index's documented rules; rows are
    [stored, updated_us, importance, last_recalled_us, recall_count, archived, position]."""
    items: dict[tuple[str, str], list[Any]] = {}
    memories: dict[int, tuple[str, str]] = {}
    for position, e in enumerate(history, start=1):
        p, kind, at = e.payload, e.kind, micros(e.at)
        if kind == "neuron.created":
            items.setdefault(("neuron", p.id), [INITIAL, at, None, None, 0, False, position])
        elif kind in ("neuron.activated", "neuron.archived"):
            row = items.get(("neuron", p.id))
            if row is None or row[5]:
                continue
            if kind == "neuron.archived":
                row[5] = True
                continue
            when = max(at, row[1])
            row[0] = reinforced(decayed(row[0], row[1], when), p.strength, ACTIVATION_GAIN)
            row[1] = when
        elif kind == "memory.observed":
            start = INITIAL if p.importance is None else MAX * p.importance // 10
            key = ("memory", str(e.id))
            items[key] = [start, at, p.importance, None, 0, False, position]
            memories[position] = key
        elif kind == "memory.recalled":
            for item in p.items:
                mkey = memories.get(item.position)
                row = None if mkey is None else items[mkey]
                if row is None or row[5]:
                    continue
                when = max(at, row[1])
                row[0] = reinforced(decayed(row[0], row[1], when), 1.0, RECALL_GAIN)
                row[1] = row[3] = when
                row[4] += 1
    return items


def _check_against_models(engine: ProjectionEngine, history: Sequence[NewEvent]) -> None:
    graph = graph_model(history)
    with engine.read() as conn:
        neurons = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT id, type, created_position, activation_count, archived_at IS NOT NULL"
                " FROM neurons"
            )
        }
        connections = {
            (s, t, k): w
            for s, t, k, w in conn.execute("SELECT source, target, type, weight FROM connections")
        }
        anomalies = dict(conn.execute("SELECT position, kind FROM graph_anomalies").fetchall())
        actors = dict(conn.execute("SELECT actor, events FROM graph_actors").fetchall())
        salience = {
            (r[0], r[1]): list(r[2:])
            for r in conn.execute(
                "SELECT item_kind, item_id, salience, updated_us, importance, last_recalled_us,"
                " recall_count, archived, position, rank FROM salience"
            )
        }
    assert neurons == {
        n: (v["type"], v["created_position"], v["count"], int(v["archived"]))
        for n, v in graph["neurons"].items()
    }
    assert connections == graph["connections"]
    assert anomalies == graph["anomalies"]
    assert actors == graph["actors"]
    assert all(0 <= w <= MAX for w in connections.values())

    model = salience_model(history)
    assert {k: v[:-1] for k, v in salience.items()} == {
        k: [*v[:5], int(v[5]), v[6]] for k, v in model.items()
    }
    for stored, updated, *_, rank in salience.values():
        assert 0 <= stored <= MAX
        if stored > 0:  # ln(stored) - hours(updated) * ln(0.99), as documented
            assert rank == pytest.approx(
                math.log(stored) - updated / 3_600_000_000 * math.log(0.99), rel=1e-12
            )


# -- rebuild equals catch-up ----------------------------------------------------------------

# A recall that names a neuron event's position must be ignored in every batching.
_NEURON_POSITION_RECALL = [
    neuron_created("n1", HISTORY_START),
    neuron_activated("n1", HISTORY_START, 0.5),
    memory_recalled([1], HISTORY_START),
]


@st.composite
def _plans(
    draw: st.DrawFn, recall_neuron_positions: bool
) -> tuple[list[NewEvent], list[int], list[int]]:
    """A history, how to cut it into appends, and the engine's batch size for each catch-up."""
    history = draw(graph_histories(recall_neuron_positions=recall_neuron_positions))
    sizes = draw(partitions(len(history)))
    return history, sizes, draw(st.lists(batch_sizes, min_size=len(sizes), max_size=len(sizes)))


def _incremental_equals_rebuild(plan: tuple[list[NewEvent], list[int], list[int]]) -> None:
    history, sizes, batches = plan
    with _ledger() as (ledger, tmp):
        with _engine(ledger, tmp / "incremental") as engine:
            for chunk, batch_size in zip(split(history, sizes), batches, strict=True):
                ledger.append(chunk)
                engine.batch_size = batch_size
                assert engine.catch_up() == ledger.head()
            incremental = _digests(engine)
            _check_against_models(engine, history)
            # An explicit rebuild of the same store lands on the same state.
            engine.rebuild()
            assert _digests(engine) == incremental
        assert _fresh_digests(ledger, tmp / "fresh") == incremental


@given(_plans(recall_neuron_positions=False))
def test_incremental_catch_up_equals_full_rebuild(
    plan: tuple[list[NewEvent], list[int], list[int]],
) -> None:
    _incremental_equals_rebuild(plan)


@given(_plans(recall_neuron_positions=True))
@example((_NEURON_POSITION_RECALL, [1, 2], [5000, 5000]))  # the minimal repro
def test_incremental_equals_rebuild_when_recalls_name_neuron_positions(
    plan: tuple[list[NewEvent], list[int], list[int]],
) -> None:
    _incremental_equals_rebuild(plan)


# -- salience reads -------------------------------------------------------------------------

hours_after_start = st.integers(min_value=-24 * 60, max_value=60 * 24 * 60).map(
    lambda minutes: HISTORY_START + timedelta(minutes=minutes)
)


def _brute_force(
    rows: list[tuple[Any, ...]], as_of: datetime, kinds: Sequence[str]
) -> list[tuple[str, str, int]]:
    at = micros(as_of)
    items = [
        (
            kind,
            item_id,
            stored if at <= updated else math.floor(stored * 0.99 ** ((at - updated) / 3.6e9)),
        )
        for kind, item_id, stored, updated, archived in rows
        if not archived and kind in kinds
    ]
    return sorted(items, key=lambda i: (-i[2], i[0], i[1]))


@given(
    graph_histories(recall_neuron_positions=False),
    st.lists(hours_after_start, min_size=2, max_size=6),
    st.integers(min_value=1, max_value=8),
    st.sampled_from([("neuron",), ("memory",), ("neuron", "memory")]),
)
def test_salience_decays_monotonically_and_reads_never_write(
    history: list[NewEvent], times: list[datetime], k: int, kinds: tuple[str, ...]
) -> None:
    with _ledger() as (ledger, tmp):
        ledger.append(history)
        with _engine(ledger, tmp / "store") as engine:
            engine.catch_up()
            before = _digests(engine)
            with engine.read() as conn:
                rows = conn.execute(
                    "SELECT item_kind, item_id, salience, updated_us, archived FROM salience"
                ).fetchall()
                direct = salience.top(conn, times[-1], k, kinds)
                ids = [(kind, item_id) for kind, item_id, *_ in rows]
                previous: dict[tuple[str, str], int] = {}
                for as_of in sorted(times):
                    expected = _brute_force(rows, as_of, kinds)
                    got = salience.top(conn, as_of, k, kinds)
                    assert [(i.kind, i.id, i.salience) for i in got] == expected[:k]
                    above = salience.above(conn, 1000, as_of, kinds)
                    assert [(i.kind, i.id, i.salience) for i in above] == [
                        x for x in expected if x[2] > 1000
                    ]
                    for kind, item_id in ids:
                        item = salience.salience_of(conn, kind, item_id, as_of)
                        if item is None:
                            continue
                        assert 0 <= item.salience <= item.stored <= MAX
                        assert item.salience <= previous.get((kind, item_id), MAX)
                        previous[kind, item_id] = item.salience
                again = salience.top(conn, times[-1], k, kinds)
            assert again == direct  # t1 then t2 equals t2 directly
            assert _digests(engine) == before


# -- spreading activation -------------------------------------------------------------------


def reference_wave(
    out: dict[str, list[tuple[str, float, str]]],
    salience: dict[str, int],
    seeds: dict[str, float],
    *,
    max_depth: int,
    decay: float,
    min_strength: float,
    floor: int,
    reentry: float,
    locked: frozenset[str] = frozenset(),
) -> tuple[dict[str, float], dict[str, int], dict[str, float]]:
    """The wave as projections/activation.py's docstring describes it, in plain Python.

    ``out`` holds each source's edges as (target, signed weight, type) with ``recalls``
    already turned around; ``locked`` neurons fired within the refractory period.
    """
    level: dict[str, float] = defaultdict(float)
    influence: dict[str, float] = defaultdict(float)
    hops: dict[str, int] = {}
    for neuron, strength in seeds.items():
        level[neuron] += strength
        hops[neuron] = 0
    expanded = set(seeds)
    frontier = dict(seeds)
    for hop in range(1, max_depth + 1):
        if hop > 1:  # a seed always passes on; a relay that just fired does not
            frontier = {n: v for n, v in frontier.items() if n not in locked}
        received: dict[str, float] = defaultdict(float)
        edges = spreading = 0
        for source, carried in frontier.items():
            sharp = carried >= TRIGGER_RATIO * salience[source] / MAX
            for target, weight, kind in out.get(source, []):
                edges += 1
                gain = carried * weight / MAX * max(salience[target], floor) / MAX * decay
                if kind == "influences":
                    influence[target] += gain
                    continue
                if kind == "triggers" and not sharp:
                    continue
                spreading += 1
                received[target] += gain * (reentry if target in expanded else 1.0)
        if not edges or not spreading:
            break
        for target, value in received.items():
            level[target] += value
            hops.setdefault(target, hop)
        frontier = {t: v for t, v in received.items() if v >= min_strength and t not in expanded}
        expanded |= set(frontier)
        if not frontier:
            break
    return dict(level), hops, dict(influence)


@given(
    cyclic_graphs(),
    st.data(),
    st.integers(min_value=0, max_value=12),
    st.floats(min_value=0.05, max_value=1.0),
    st.sampled_from([1e-4, 0.013, 0.1]),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.sampled_from([0, 6554, 65535]),
)
def test_propagation_terminates_and_matches_the_documented_wave(
    graph: tuple[list[str], list[tuple[str, str, str, int]]],
    data: st.DataObject,
    max_depth: int,
    decay: float,
    min_strength: float,
    reentry: float,
    floor: int,
) -> None:
    ids, edges = graph
    at = HISTORY_START
    events = [neuron_created(n, at) for n in ids]
    events += [connection_created(s, t, w, at, type=kind) for s, t, kind, w in edges]
    fired = data.draw(st.lists(st.sampled_from(ids), max_size=6), label="activated")
    for n in fired:
        events.append(neuron_activated(n, at, data.draw(st.floats(0.0, 1.0))))
    archived = data.draw(st.sets(st.sampled_from(ids), max_size=len(ids) - 1), label="archived")
    events += [neuron_archived(n, at) for n in sorted(archived)]
    live = [n for n in ids if n not in archived]
    seeds = data.draw(
        st.dictionaries(st.sampled_from(live), st.floats(0.01, 10.0), min_size=1),
        label="seeds",
    )
    as_of = at + timedelta(hours=data.draw(st.integers(0, 400), label="hours later"))
    with _ledger() as (ledger, tmp):
        ledger.append(events)
        with _engine(ledger, tmp / "store") as engine:
            engine.catch_up()
            with engine.read() as conn:
                snapshot = GraphSnapshot(conn)
                salience = {
                    item_id: decayed(stored, updated, micros(as_of))
                    for item_id, stored, updated in conn.execute(
                        "SELECT item_id, salience, updated_us FROM salience"
                        " WHERE item_kind = 'neuron' AND archived = 0"
                    )
                }
            before = _digests(engine)
            wave = snapshot.propagate(
                seeds,
                as_of,
                max_depth=max_depth,
                decay=decay,
                min_strength=min_strength,
                salience_floor=floor,
                reentry=reentry,
            )
            assert _digests(engine) == before
    out: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
    for s, t, kind, w in edges:
        if s in archived or t in archived:
            continue
        source, target = (t, s) if kind == "recalls" else (s, t)
        out[source].append((target, -w if kind == "inhibits" else w, kind))
    # The activations happened at `at`: as of `at` itself they are within the lock.
    locked = frozenset(fired) if as_of - at < timedelta(seconds=REFRACTORY) else frozenset()
    levels, hops, influence = reference_wave(
        out,
        salience,
        seeds,
        max_depth=max_depth,
        decay=decay,
        min_strength=min_strength,
        floor=floor,
        reentry=reentry,
        locked=locked,
    )
    assert set(wave.influence) == set(influence)
    for neuron, value in influence.items():
        assert wave.influence[neuron] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert set(wave.levels) == set(levels)
    assert not set(wave.levels) & archived
    assert wave.hops == hops
    for neuron, value in levels.items():
        assert math.isfinite(wave.levels[neuron])
        assert wave.levels[neuron] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert all(0 <= h <= max_depth for h in wave.hops.values())
