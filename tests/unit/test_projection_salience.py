"""Salience math, the salience index's stored values and the read-side queries.

Expected numbers are worked out by hand from the formulas in projections/salience.py's
docstring: ``floor(stored * 0.99 ** hours)`` and ``current + floor(gap * strength * gain)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from strategies import (
    HISTORY_START,
    connection_created,
    memory_observed,
    memory_recalled,
    neuron_activated,
    neuron_archived,
    neuron_created,
)

from engram.ledger import Ledger
from engram.projections import salience
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.graph import EXPORT_FORMAT, NeuronGraph, export_graph
from engram.projections.salience import (
    INITIAL,
    MAX,
    SalienceIndex,
    decayed,
    micros,
    rank,
    reinforced,
)

T = HISTORY_START
H = timedelta(hours=1)
US_H = 3_600_000_000


def test_decayed_follows_the_documented_formula() -> None:
    assert decayed(1000, 0, US_H) == 990
    assert decayed(1000, 0, 2 * US_H) == 980  # 1000 * 0.9801
    assert decayed(1000, 0, 24 * US_H) == 785  # 1000 * 0.99**24 = 785.7
    assert decayed(1000, 0, US_H // 2) == 994  # 1000 * 0.99**0.5 = 994.99
    assert decayed(1000, 5 * US_H, US_H) == 1000  # before the update: no negative decay
    assert decayed(1000, 5, 5) == 1000
    assert decayed(0, 0, 10**12) == 0
    assert decayed(MAX, 0, 10**6 * US_H) == 0
    assert decayed(1000, 0, US_H, rate=0.5) == 500
    assert decayed(1000, 0, 10 * US_H, rate=1.0) == 1000


def test_reinforced_closes_part_of_the_gap_and_saturates() -> None:
    assert reinforced(INITIAL, 1.0, 0.25) == 32768 + 8191  # floor(32767 * 0.25)
    assert reinforced(INITIAL, 0.5, 0.25) == 32768 + 4095  # floor(32767 * 0.125)
    assert reinforced(0, 5.0, 0.25) == 16383  # strength is capped at 1
    assert reinforced(100, -1.0, 0.25) == 100
    assert reinforced(MAX, 1.0, 0.25) == MAX
    assert reinforced(MAX - 1, 1.0, 1.0) == MAX
    value = 0
    for _ in range(200):
        value = reinforced(value, 1e6, 0.25)
        assert 0 <= value <= MAX
    assert value == MAX - 3  # floor(gap / 4) is 0 once the gap is below 4


def test_rank_orders_like_salience_at_any_time() -> None:
    a = (1000, 0)  # 1000 stored at hour 0
    b = (900, 10 * US_H)  # 900 stored at hour 10: worth 900 / 0.99**10 = 995 at hour 0
    assert rank(*a) > rank(*b)
    for hour in (10, 50, 500):
        assert decayed(*a, hour * US_H) >= decayed(*b, hour * US_H)
    assert rank(0, 0) < rank(1, 0)
    assert rank(1, 10**9 * US_H) > rank(0, 10**9 * US_H)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger.open(str(tmp_path / "ledger.db")) as led:
        yield led


@pytest.fixture
def engine(ledger: Ledger, tmp_path: Path) -> Iterator[ProjectionEngine]:
    with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as eng:
        yield eng


def _stored(engine: ProjectionEngine) -> dict[str, tuple[int, int, int | None, int | None, int]]:
    engine.catch_up()
    with engine.read() as conn:
        return {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT item_id, salience, updated_us, importance, last_recalled_us,"
                " recall_count FROM salience"
            )
        }


def test_stored_salience_changes_only_with_events(ledger: Ledger, engine: ProjectionEngine) -> None:
    ledger.append(
        [
            neuron_created("a", T),  # 1
            neuron_activated("a", T + H),  # 2: floor(32768*.99) = 32440, + floor(33095/4)
            neuron_activated("a", T - 5 * H, 0.5),  # 3: older than the update: at T+1h
            neuron_activated("ghost", T),  # 4: unknown: ignored
            memory_observed("seven", T, importance=7),  # 5: 65535 * 7 // 10
            memory_observed("plain", T),  # 6: INITIAL
            memory_recalled([5, 5, 999], T + 2 * H),  # 7: twice, and an unknown position
        ]
    )
    stored = _stored(engine)
    a = 32440 + 8273
    assert stored["a"] == (a + (MAX - a) // 8, micros(T + H), None, None, 0)
    assert a + (MAX - a) // 8 == 43815
    first = 44961 + (MAX - 44961) // 8  # floor(45874 * 0.9801) = 44961
    second = first + (MAX - first) // 8  # the second recall: same time, no decay
    memories = {v[2]: v for k, v in stored.items() if k not in ("a",)}
    assert memories[7] == (second, micros(T + 2 * H), 7, micros(T + 2 * H), 2)
    assert memories[None] == (INITIAL, micros(T), None, None, 0)
    assert "ghost" not in stored


def test_queries_evaluate_as_of_and_leave_archived_items_out(
    ledger: Ledger, engine: ProjectionEngine
) -> None:
    ledger.append(
        [
            neuron_created("a", T),
            neuron_created("b", T),
            neuron_created("c", T),
            neuron_activated("b", T, 1.0),  # 40959
            neuron_created("gone", T),
            neuron_activated("gone", T, 1.0),
            neuron_archived("gone", T),
            neuron_created("late", T + 10 * H),  # updated after some as_of values below
            memory_observed("m", T, importance=10),  # 65535
        ]
    )
    engine.catch_up()
    with engine.read() as conn:
        top = salience.top(conn, T, 3)
        assert [(i.kind, i.id, i.salience) for i in top] == [
            ("memory", top[0].id, MAX),
            ("neuron", "b", 40959),
            ("neuron", "a", INITIAL),  # ties with c and late are broken by id
        ]
        # 10 hours on: everything decayed by 0.99**10 except 'late', created then.
        later = salience.top(conn, T + 10 * H, 10, ["neuron"])
        assert [(i.id, i.salience) for i in later] == [
            ("b", 37042),  # floor(40959 * 0.904382)
            ("late", INITIAL),
            ("a", 29634),
            ("c", 29634),
        ]
        assert salience.salience_of(conn, "neuron", "late", T) is not None
        assert salience.salience_of(conn, "neuron", "late", T).salience == INITIAL  # type: ignore[union-attr]
        assert salience.salience_of(conn, "neuron", "gone", T) is None
        assert salience.salience_of(conn, "neuron", "nope", T) is None
        assert [i.id for i in salience.above(conn, INITIAL, T, ["neuron"])] == ["b"]
        assert [i.id for i in salience.above(conn, 30000, T + 10 * H, "neuron")] == [
            "b",
            "late",
        ]
        # A time in another zone is the same instant.
        east = (T + 10 * H).astimezone(timezone(timedelta(hours=5, minutes=30)))
        assert salience.top(conn, east, 10, ["neuron"]) == later


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda c: salience.top(c, datetime(2030, 1, 1)), "as_of must be a timezone-aware"),
        (lambda c: salience.top(c, "2030-01-01T00:00Z"), "as_of must be a timezone-aware"),
        (lambda c: salience.top(c, T, 0), "k must be a positive int, got 0"),
        (lambda c: salience.top(c, T, True), "k must be a positive int, got True"),
        (lambda c: salience.top(c, T, 3, ["scar"]), "items: unknown item kind"),
        (lambda c: salience.above(c, 70000, T), "threshold must be an int in 0..65535"),
        (lambda c: salience.above(c, -1, T), "threshold must be an int in 0..65535"),
        (lambda c: salience.salience_of(c, "thing", "a", T), "unknown item kind"),
    ],
)
def test_queries_refuse_bad_arguments(engine: ProjectionEngine, call: object, message: str) -> None:
    with engine.read() as conn, pytest.raises(QueryError, match=message):
        call(conn)  # type: ignore[operator]


def test_export_graph_has_the_agents_shape(ledger: Ledger, engine: ProjectionEngine) -> None:
    ledger.append(
        [
            neuron_created("a", T, concept="perception", type="core"),
            neuron_created("b", T, concept="memory"),
            neuron_created("gone", T),
            connection_created("a", "b", 52000, T),
            connection_created("a", "gone", 7, T),
            connection_created("b", "a", 100, T, type="inhibits"),
            neuron_archived("gone", T + H),
        ]
    )
    engine.catch_up()
    before = engine.digest("neuron_graph")
    with engine.read() as conn:
        graph = export_graph(conn, T + 2 * H)
    json.dumps(graph)  # plain JSON
    assert [n["id"] for n in graph["neurons"]] == ["a", "b"]
    a, b = graph["neurons"]
    assert a == {
        "id": "a",
        "concept": "perception",
        "type": "core",
        "salience": 32115,  # floor(32768 * 0.9801) = floor(32115.9)
        "last_salience_update": T.isoformat(timespec="microseconds"),
        "connections": [{"target": "b", "weight": 52000, "type": "feeds_into"}],
    }
    assert b["connections"] == [{"target": "a", "weight": 100, "type": "inhibits"}]
    meta = graph["metadata"]
    assert meta["version"] == EXPORT_FORMAT
    assert meta["active_agents"] == ["system"]
    assert meta["ledger_position"] == 7
    assert meta["last_modified"] == (T + H).isoformat(timespec="microseconds")
    assert meta["as_of"] == (T + 2 * H).isoformat()
    assert engine.digest("neuron_graph") == before
