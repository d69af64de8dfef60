"""Spreading activation on small hand-computed graphs (projections/activation.py).

Every neuron is created at ``T`` and the wave is evaluated at ``T``, so saliences are exact:
32768 (INITIAL) unless said otherwise. One hop carries
``strength * weight/65535 * max(salience, floor)/65535 * decay``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from strategies import (
    HISTORY_START,
    connection_created,
    neuron_activated,
    neuron_archived,
    neuron_created,
)

from engram.ledger import Ledger, NewEvent
from engram.projections.activation import SALIENCE_FLOOR, Activation, GraphSnapshot, SnapshotCache
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.graph import NeuronGraph
from engram.projections.salience import INITIAL, MAX, SalienceIndex

T = HISTORY_START
S = INITIAL / MAX  # the salience factor of a fresh neuron


def hop(strength: float, weight: int, salience: float = S, decay: float = 0.9) -> float:
    return strength * weight / MAX * salience * decay


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


def _snapshot(ledger: Ledger, tmp_path: Path, events: list[NewEvent]) -> GraphSnapshot:
    ledger.append(events)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine:
        engine.catch_up()
        with engine.read() as conn:
            return GraphSnapshot(conn)


def _neurons(*ids: str) -> list[NewEvent]:
    return [neuron_created(n, T) for n in ids]


def _levels(wave: Activation) -> dict[str, float]:
    return {k: pytest.approx(v, rel=1e-12) for k, v in wave.levels.items()}  # type: ignore[misc]


def test_a_chain_carries_the_documented_product_per_hop(ledger: Ledger, tmp_path: Path) -> None:
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *_neurons("a", "b", "c", "d"),
            neuron_activated("c", T, 1.0),  # c's salience: 32768 + 8191 (no lock: refractory=0)
            connection_created("a", "b", 52000, T),
            connection_created("b", "c", 45000, T),
            connection_created("c", "d", 65535, T),
        ],
    )
    b = hop(2.0, 52000)
    c = hop(b, 45000, 40959 / MAX)
    d = hop(c, 65535)
    wave = graph.propagate({"a": 2.0}, T, refractory=0.0, min_strength=1e-6)
    assert wave.levels == _levels(Activation({"a": 2.0, "b": b, "c": c, "d": d}, {}))
    assert wave.hops == {"a": 0, "b": 1, "c": 2, "d": 3}
    assert wave.strongest(2) == [("a", 2.0), ("b", pytest.approx(b))]

    # max_depth stops the wave; min_strength stops expansion (c is reached, not expanded).
    assert graph.propagate({"a": 2.0}, T, refractory=0.0, max_depth=1).hops == {"a": 0, "b": 1}
    assert graph.propagate({"a": 2.0}, T, refractory=0.0, max_depth=0).levels == {"a": 2.0}
    stopped = graph.propagate({"a": 2.0}, T, refractory=0.0, min_strength=b * 1.01)
    assert stopped.hops == {"a": 0, "b": 1}  # b received less than min_strength
    stopped = graph.propagate({"a": 2.0}, T, refractory=0.0, min_strength=c * 1.01)
    assert stopped.hops == {"a": 0, "b": 1, "c": 2}  # c got below it: not expanded
    assert stopped.levels["c"] == pytest.approx(c, rel=1e-12)


def test_inhibits_subtract_and_fan_in_adds(ledger: Ledger, tmp_path: Path) -> None:
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *_neurons("a", "b", "x", "y"),
            connection_created("a", "x", 40000, T),
            connection_created("b", "x", 30000, T, type="inhibits"),
            connection_created("a", "y", 20000, T, type="inhibits"),
            connection_created("y", "a", 65535, T),
        ],
    )
    wave = graph.propagate({"a": 1.0, "b": 0.5}, T)
    x = hop(1.0, 40000) - hop(0.5, 30000)
    y = -hop(1.0, 20000)
    assert wave.levels == _levels(Activation({"a": 1.0, "b": 0.5, "x": x, "y": y}, {}))
    assert wave.hops == {"a": 0, "b": 0, "x": 1, "y": 1}  # y is negative: never expanded


def test_each_neuron_is_expanded_once_and_reentry_counts_half(
    ledger: Ledger, tmp_path: Path
) -> None:
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *_neurons("a", "b", "c"),
            connection_created("a", "b", 65535, T),
            connection_created("b", "a", 65535, T),
            connection_created("b", "b", 65535, T),  # a self-loop
            connection_created("b", "c", 65535, T),
        ],
    )
    wave = graph.propagate({"a": 1.0}, T, max_depth=20, decay=1.0, min_strength=1e-9)
    b = hop(1.0, 65535, decay=1.0)
    # Hop 2: b sends to a (expanded: half), to itself (expanded: half), to c. Then c has no
    # way out: the wave stops, whatever max_depth says.
    back = hop(b, 65535, decay=1.0) * 0.5
    expected = {"a": 1.0 + back, "b": b + back, "c": hop(b, 65535, decay=1.0)}
    assert wave.levels == _levels(Activation(expected, {}))
    assert wave.hops == {"a": 0, "b": 1, "c": 2}
    no_reentry = graph.propagate({"a": 1.0}, T, max_depth=20, reentry=0.0)
    assert no_reentry.levels["a"] == 1.0


def test_the_salience_floor_and_archived_neurons(ledger: Ledger, tmp_path: Path) -> None:
    old = T - timedelta(hours=300)  # 32768 * 0.99**300 = 1609 < floor
    graph = _snapshot(
        ledger,
        tmp_path,
        [
            *_neurons("a", "b", "gone", "behind"),
            neuron_created("quiet", old),
            connection_created("a", "quiet", 65535, T),
            connection_created("a", "b", 65535, T),
            connection_created("a", "gone", 65535, T),
            connection_created("gone", "behind", 65535, T),
            neuron_archived("gone", T),
        ],
    )
    wave = graph.propagate({"a": 1.0}, T)
    assert wave.levels == _levels(
        Activation({"a": 1.0, "b": hop(1.0, 65535), "quiet": hop(1.0, 65535, 6554 / MAX)}, {})
    )
    assert SALIENCE_FLOOR == 6554
    lifted = graph.propagate({"a": 1.0}, T, salience_floor=MAX)
    assert lifted.levels["quiet"] == pytest.approx(0.9)
    with pytest.raises(QueryError, match="seed neuron 'gone' does not exist"):
        graph.propagate({"gone": 1.0}, T)


@pytest.mark.parametrize(
    ("seeds", "options", "message"),
    [
        ({}, {}, "seeds must be a non-empty mapping"),
        ({"nope": 1.0}, {}, "seed neuron 'nope' does not exist"),
        ({"a": 0.0}, {}, "seed strength for 'a' must be in"),
        ({"a": math.inf}, {}, "seed strength for 'a' must be in"),
        ({"a": 1.0}, {"max_depth": 65}, "max_depth must be an int in 0..64"),
        ({"a": 1.0}, {"decay": 0.0}, "decay must be in"),
        ({"a": 1.0}, {"min_strength": 0}, "min_strength must be > 0"),
        ({"a": 1.0}, {"salience_floor": 70000}, "salience_floor must be an int"),
        ({"a": 1.0}, {"reentry": 2.0}, "reentry must be in"),
    ],
)
def test_propagate_refuses_bad_arguments(
    ledger: Ledger,
    tmp_path: Path,
    seeds: dict[str, float],
    options: dict[str, float],
    message: str,
) -> None:
    graph = _snapshot(ledger, tmp_path, _neurons("a"))
    with pytest.raises(QueryError, match=message):
        graph.propagate(seeds, T, **options)  # type: ignore[arg-type]


def test_the_snapshot_cache_reloads_when_the_graph_moves(ledger: Ledger, tmp_path: Path) -> None:
    ledger.append(_neurons("a", "b"))
    cache = SnapshotCache()
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine:
        engine.catch_up()
        with engine.read() as conn:
            first = cache.get(conn)
        with engine.read() as conn:
            assert cache.get(conn) is first
        ledger.append(connection_created("a", "b", 65535, T))
        engine.catch_up()
        with engine.read() as conn:
            second = cache.get(conn)
    assert second is not first
    assert second.propagate({"a": 1.0}, T).levels["b"] == pytest.approx(hop(1.0, 65535))
