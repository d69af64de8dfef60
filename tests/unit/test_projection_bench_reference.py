"""The rebuild figure's reference builds the state the projections build, row for row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engram.bench.projection_bench import History
from engram.bench.rebuild_reference import same_state
from engram.ledger import Ledger
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

SEED = 20261123
# (projection view, reference table, the columns both hold)
TABLES = (
    (
        "neurons",
        "neurons",
        "id, concept, type, created_at, created_position, last_activated, activation_count,"
        " archived_at, archive_reason",
    ),
    ("connections", "connections", "source, target, type, weight, created_at, updated_at"),
    ("graph_anomalies", "anomalies", "position, kind"),
    ("graph_actors", "actors", "actor, events, last_at"),
    (
        "salience",
        "salience",
        "item_kind, item_id, position, salience, updated_us, rank, importance,"
        " last_recalled_us, recall_count, archived",
    ),
)


def test_the_same_state_reference_matches_a_rebuild(tmp_path: Path) -> None:
    print(f"seed {SEED}")
    history = History(SEED, neurons=60)
    path = str(tmp_path / "ledger.db")
    with Ledger.open(path, durability="fast") as ledger:
        for _ in range(6):
            ledger.append(history.events(1000))
        with ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as e:
            e.rebuild()
            with e.read() as conn:
                built = {
                    view: conn.execute(f"SELECT {cols} FROM {view} ORDER BY {cols}").fetchall()
                    for view, _, cols in TABLES
                }
    _, count = same_state(path, str(tmp_path / "by-hand.db"), keep=True)
    assert count == 6000
    by_hand = sqlite3.connect(tmp_path / "by-hand.db")
    try:
        for view, table, cols in TABLES:
            rows = by_hand.execute(f"SELECT {cols} FROM {table} ORDER BY {cols}").fetchall()
            assert rows == built[view], view
    finally:
        by_hand.close()
    assert len(built["neurons"]) == 60
    assert built["graph_anomalies"]  # the history exercises the rules, not only the hot path
    assert any(row[-1] for row in built["salience"])  # archived items
    assert any(row[-2] for row in built["salience"])  # recalled memories
