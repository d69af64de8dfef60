"""The neuron graph's anomaly rules and uint16 weights, on real SQLite files."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from strategies import (
    HISTORY_START,
    connection_created,
    connection_reweighted,
    neuron_activated,
    neuron_archived,
    neuron_created,
)

from engram.ledger import Ledger, NewEvent, PayloadError
from engram.ledger.catalog import ConnectionCreated, ConnectionReweighted
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph

T = HISTORY_START


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


def test_events_that_do_not_fit_are_recorded_and_change_nothing(
    ledger: Ledger, tmp_path: Path
) -> None:
    hour = timedelta(hours=1)
    history = [
        neuron_created("a", T, concept="first"),  # 1
        neuron_activated("ghost", T + hour),  # 2 before creation
        neuron_created("ghost", T + hour),  # 3
        neuron_created("a", T + hour, concept="second"),  # 4 duplicate creation
        connection_created("a", "nobody", 100, T + hour),  # 5 unknown target
        connection_created("nobody", "a", 100, T + hour),  # 6 unknown source
        connection_reweighted("a", "ghost", 7, T + hour),  # 7 reweight of a missing one
        neuron_archived("ghost", T + 2 * hour),  # 8
        neuron_activated("ghost", T + 3 * hour),  # 9 archived
        neuron_archived("ghost", T + 3 * hour),  # 10 archived twice
        connection_created("a", "ghost", 100, T + 3 * hour),  # 11 to an archived neuron
        connection_created("a", "a", 500, T + 3 * hour),  # 12 a self-loop: fine
        connection_created("a", "a", 900, T + 4 * hour),  # 13 duplicate connection
        neuron_activated("a", T + 4 * hour),  # 14
    ]
    ledger.append(history)
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()], batch_size=3) as engine:
        engine.catch_up()
        with engine.read() as conn:
            anomalies = conn.execute(
                "SELECT position, kind, reason FROM graph_anomalies ORDER BY position"
            ).fetchall()
            neurons = conn.execute(
                "SELECT id, concept, created_position, activation_count, last_activated,"
                " archived_at FROM neurons ORDER BY id"
            ).fetchall()
            connections = conn.execute("SELECT source, target, type, weight FROM connections")
            connections = connections.fetchall()
    assert anomalies == [
        (2, "neuron.activated", "neuron 'ghost' does not exist"),
        (4, "neuron.created", "neuron 'a' already exists"),
        (5, "connection.created", "neuron 'nobody' does not exist"),
        (6, "connection.created", "neuron 'nobody' does not exist"),
        (7, "connection.reweighted", "connection 'a' -[feeds_into]-> 'ghost' does not exist"),
        (9, "neuron.activated", "neuron 'ghost' is archived"),
        (10, "neuron.archived", "neuron 'ghost' is archived"),
        (11, "connection.created", "neuron 'ghost' is archived"),
        (13, "connection.created", "connection 'a' -[feeds_into]-> 'a' already exists"),
    ]
    at = lambda delta: (T + delta).isoformat(timespec="microseconds")  # noqa: E731
    assert neurons == [
        ("a", "first", 1, 1, at(4 * hour), None),
        ("ghost", "concept", 3, 0, None, at(2 * hour)),
    ]
    assert connections == [("a", "a", "feeds_into", 500)]


@pytest.mark.parametrize("weight", [70000, -1, 65536])
@pytest.mark.parametrize("struct", [ConnectionCreated, ConnectionReweighted])
def test_an_out_of_range_weight_is_refused_at_append(
    ledger: Ledger, weight: int, struct: type[ConnectionCreated] | type[ConnectionReweighted]
) -> None:
    ledger.append([neuron_created("a", T), neuron_created("b", T)])
    kind = "connection.created" if struct is ConnectionCreated else "connection.reweighted"
    good = connection_created("a", "b", 1, T)
    for payload in (
        struct(source="a", target="b", type="triggers", weight=weight),
        {"source": "a", "target": "b", "type": "triggers", "weight": weight},
    ):
        bad = NewEvent(stream="neuron:a", kind=kind, payload=payload)
        with pytest.raises(PayloadError, match=r"\$\.weight"):
            ledger.append([good, bad])  # the whole batch is refused
        assert ledger.head() == 2


def test_weights_at_the_uint16_bounds_are_stored_exactly(ledger: Ledger, tmp_path: Path) -> None:
    ledger.append(
        [
            neuron_created("a", T),
            neuron_created("b", T),
            connection_created("a", "b", 0, T),
            connection_created("a", "b", 65535, T, type="inhibits"),
            connection_reweighted("a", "b", 65535, T),
            connection_reweighted("a", "b", 0, T, type="inhibits"),
        ]
    )
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph()]) as engine:
        engine.catch_up()
        with engine.read() as conn:
            rows = conn.execute("SELECT type, weight FROM connections ORDER BY type").fetchall()
    assert rows == [("feeds_into", 65535), ("inhibits", 0)]
