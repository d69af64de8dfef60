"""Python parameters that used "kind" for something else took their own names (ADR 0069).

The old keyword still works for one release, with a DeprecationWarning; giving both is an
error that writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import engram
from engram.projections.errors import QueryError
from engram.projections.renamed import renamed_keyword


def test_the_old_keyword_stands_for_the_new_one_and_warns() -> None:
    @renamed_keyword("kinds", "items")
    def pick(k: int, items: tuple[str, ...] = ()) -> tuple[int, tuple[str, ...]]:
        return k, items

    assert pick(1, items=("neuron",)) == (1, ("neuron",))
    with pytest.warns(DeprecationWarning, match="kinds= is deprecated, use items="):
        assert pick(2, kinds=("memory",)) == (2, ("memory",))
    with pytest.raises(QueryError, match="give items= only"):
        pick(3, kinds=("memory",), items=("neuron",))


def test_scars_take_outcome_and_network_top_takes_items(tmp_path: Path) -> None:
    with engram.open_memory(str(tmp_path / "ledger.db")) as memory:
        scars = memory.scars("alice")
        first = scars.record(outcome="failure", what="deploy failed", lesson="warm the cache")
        with pytest.warns(DeprecationWarning, match="kind= is deprecated, use outcome="):
            second = scars.record(kind="victory", what="deploy went fine", lesson="warm first")
        assert second > first
        head = memory.ledger.head()
        with pytest.raises(QueryError, match="give outcome= only"):
            scars.record(kind="failure", outcome="failure", what="w", lesson="l")
        assert memory.ledger.head() == head  # refused: nothing written

        memory.agent("alice").observe("The deploy failed at 3am")
        ranked = memory.network.top(5, items=("memory",))
        with pytest.warns(DeprecationWarning, match="kinds= is deprecated, use items="):
            assert memory.network.top(5, kinds=("memory",)) == ranked
        assert ranked
        assert {item.kind for item in ranked} == {"memory"}
