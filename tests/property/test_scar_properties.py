"""The scars table against a reference model written from its module docstring.

For random histories of scars, archives (of scars, memories, unknown and future positions)
and recalls (serving scars, memories, unknown positions, one item twice), appended in random
chunks and caught up in random batch sizes, every row must be what the documented rules say:
one row per ``scar.recorded``; ``archived_us`` the time of the first ``scar.archived`` after
it that names it; ``recall_count`` the number of ``memory.recalled`` events after it that
serve it (once per event), ``last_recalled_us`` the latest of their times.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import partitions, projection_histories, split

from engram.ledger import Event, Ledger
from engram.projections import scars
from engram.projections.engine import ProjectionEngine
from engram.projections.salience import micros
from engram.projections.scars import ScarsTable

KINDS = ("scar.recorded", "scar.archived", "memory.recalled", "memory.observed", "signal.sent")


def model(events: list[Event]) -> dict[int, dict[str, Any]]:
    """The rows the docstring's rules give for ``events`` in position order."""
    rows: dict[int, dict[str, Any]] = {}
    for e in events:
        p = e.payload
        if e.kind == "scar.recorded":
            rows[e.position] = {
                "id": e.id,
                "importance": p.importance,
                "recorded_us": micros(e.at),
                "recall_count": 0,
                "last_recalled_us": None,
                "archived_us": None,
            }
        elif e.kind == "scar.archived":
            for position in p.positions:
                row = rows.get(position)
                if row is not None and row["archived_us"] is None:
                    row["archived_us"] = micros(e.at)
        elif e.kind == "memory.recalled":
            for position in {item.position for item in p.items}:
                row = rows.get(position)
                if row is not None:
                    row["recall_count"] += 1
                    last = row["last_recalled_us"]
                    row["last_recalled_us"] = max(micros(e.at), last or micros(e.at))
    return rows


@given(history=projection_histories(kinds=KINDS), data=st.data())
def test_the_scars_table_follows_its_documented_rules(history: Any, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Ledger.open(str(root / "ledger.db"), durability="fast") as ledger:
            batch = data.draw(st.integers(1, 7), label="engine batch size")
            with ProjectionEngine(
                ledger, root / "store", [ScarsTable()], batch_size=batch
            ) as engine:
                for chunk in split(history, data.draw(partitions(len(history)), label="appends")):
                    ledger.append(chunk)
                    engine.catch_up()
                want = model(list(ledger.read()))
                with engine.read() as conn:
                    got = {s.position: s for s in scars.list_scars(conn, archived=None)}
                    never = {s.position for s in scars.never_recalled(conn, 2**62)}
    assert set(got) == set(want)
    for position, row in want.items():
        s = got[position]
        assert (
            s.id,
            s.importance,
            s.recorded_us,
            s.recall_count,
            s.last_recalled_us,
            s.archived_us,
        ) == tuple(row.values())
    assert never == {
        p for p, r in want.items() if r["recall_count"] == 0 and r["archived_us"] is None
    }
