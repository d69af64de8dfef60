"""Time travel's registry: every replayable projection registers itself, nothing else may."""

from __future__ import annotations

import pytest

from engram.projections import QueryError, timetravel
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex


def test_every_replayed_projection_is_registered_by_its_own_module() -> None:
    built = {name: timetravel._REPLAYABLE[name].build(0.5) for name in timetravel.REPLAYED}
    assert isinstance(built["salience"], SalienceIndex)
    assert built["salience"].rate == 0.5
    assert isinstance(built["neuron_graph"], NeuronGraph)
    assert timetravel._REPLAYABLE["salience"].also == ("lexical",)


def test_a_projection_that_cannot_be_replayed_is_refused() -> None:
    entry = timetravel._REPLAYABLE["salience"]
    with pytest.raises(QueryError, match="cannot be replayed"):
        timetravel.replayable("scars", entry)
    assert "scars" not in timetravel._REPLAYABLE
