"""Vital signs of the graph against a plain reference computed from the events themselves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import (
    ConnectionCreated,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
)
from engram.projections import ProjectionEngine, vitality
from engram.projections.errors import QueryError
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex, decayed, micros

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def created(nid: str, at: datetime) -> NewEvent:
    return NewEvent.of(
        NeuronCreated(id=nid, concept=nid, type="core"), stream=f"neuron:{nid}", at=at
    )


def link(a: str, b: str, kind: str, weight: int) -> NewEvent:
    payload = ConnectionCreated(source=a, target=b, type=kind, weight=weight)  # type: ignore[arg-type]
    return NewEvent.of(payload, stream=f"neuron:{a}", at=T0)


@pytest.fixture
def engine(tmp_path: Path):  # type: ignore[no-untyped-def]
    ledger = Ledger.open(str(tmp_path / "l.db"), default_registry())
    plus_five = timezone(timedelta(hours=5))
    ledger.append(
        [
            created("a", T0),
            created("b", T0 + timedelta(hours=30)),
            # Stored with its own offset: 04:00+05:00 on day 3 is 23:00 UTC on day 2.
            created("c", datetime(2030, 1, 3, 4, 0, tzinfo=plus_five)),
            created("gone", T0),
            link("a", "b", "feeds_into", 30000),
            link("b", "c", "inhibits", 10000),
            link("c", "gone", "inhibits", 65535),  # to an archived neuron: not counted
            link("a", "a", "triggers", 20000),
            NewEvent.of(NeuronActivated(id="a", strength=1.0), stream="neuron:a", at=T0),
            NewEvent.of(NeuronActivated(id="c", strength=0.2), stream="neuron:c", at=T0),
            NewEvent.of(NeuronArchived(id="gone"), stream="neuron:gone", at=T0),
        ]
    )
    with ProjectionEngine(ledger, tmp_path / "p", [NeuronGraph(), SalienceIndex()]) as engine:
        engine.catch_up()
        yield ledger, engine
    ledger.close()


def test_vital_signs_match_a_reference(engine) -> None:  # type: ignore[no-untyped-def]
    _, eng = engine
    at = datetime(2030, 1, 3, 0, 0, tzinfo=UTC)
    with eng.read() as conn:
        signs = vitality.measure(conn, at, window=timedelta(days=1))
        stored = {
            item: decayed(value, updated, micros(at))
            for item, value, updated in conn.execute(
                "SELECT item_id, salience, updated_us FROM salience WHERE item_kind = 'neuron'"
            )
        }
    assert signs.neurons == 3
    assert (signs.connections, signs.density) == (3, 3 / 6)
    assert signs.inhibition == pytest.approx(10000 / 60000)
    # Created within (2 Jan 00:00, 3 Jan 00:00]: b at 06:00 on the 2nd, c at 23:00 UTC.
    assert signs.growth == 2
    live = [stored[n] for n in ("a", "b", "c")]
    assert signs.mean_salience == pytest.approx(sum(live) / 3)
    assert signs.active_neurons == sum(1 for v in live if v >= vitality.ALIVE_AT)


def test_the_past_is_measured_as_it_was_known(engine) -> None:  # type: ignore[no-untyped-def]
    ledger, eng = engine
    with eng.read() as conn:
        before = vitality.measure(conn, T0 - timedelta(seconds=1), ledger=ledger)
        first = vitality.measure(conn, T0 + timedelta(hours=1), ledger=ledger)
    assert (before.neurons, before.connections, before.growth) == (0, 0, 0)
    # At 01:00 on day 1: a, and gone archived at T0; the links to b and c have no live end.
    assert (first.neurons, first.connections, first.growth) == (1, 1, 1)


def test_bad_arguments_are_refused(engine) -> None:  # type: ignore[no-untyped-def]
    _, eng = engine
    with eng.read() as conn:
        with pytest.raises(QueryError, match="window"):
            vitality.measure(conn, T0, window=timedelta(0))
        with pytest.raises(QueryError, match="alive_at"):
            vitality.measure(conn, T0, alive_at=70000)
