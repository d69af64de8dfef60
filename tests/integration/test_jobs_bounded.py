"""A thousand simulated days of stimuli and nightly sleep: the network stays bounded.

Real ledger, real projections, the real runner on an injected clock, one sleep window a
day. What must hold: weights stay in uint16 and change only by sleep's bounded step; a
night's candidates are never more than the neurons stimulated that day (sleep adds no
activity); activity does not sustain itself (a neuron left alone for two days is below the
threshold); connections between neurons never co-active keep their weight.
"""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram.jobs import JobRunner, SleepJob, SleepSettings
from engram.jobs.lease import FileLease
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronCreated
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex, above

T0 = datetime(2027, 1, 1, tzinfo=UTC)
DAYS = int(os.environ.get("ENGRAM_TEST_SLEEP_DAYS", "1000"))


def test_a_thousand_days_of_sleep_stay_bounded(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    names = [f"n{i:02d}" for i in range(24)]
    edges = sorted({(a, b) for a in names for b in rng.sample(names, 3) if a != b})
    settings = SleepSettings(threshold=50_000, boost=512, every=timedelta(days=1))
    with (
        Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger,
        ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        ledger.append(
            [
                NewEvent.of(
                    NeuronCreated(id=n, concept=n, type="semantic"), stream=f"neuron:{n}", at=T0
                )
                for n in names
            ]
            + [
                NewEvent.of(
                    ConnectionCreated(source=a, target=b, type="feeds_into", weight=1000),
                    stream=f"neuron:{a}",
                    at=T0,
                )
                for a, b in edges
            ]
        )
        clock_now = [T0]
        runner = JobRunner(
            ledger,
            engine,
            [SleepJob(settings)],
            lease=FileLease(str(tmp_path / "l.db")),
            clock=lambda: clock_now[0],
        )
        co_active: set[tuple[str, str]] = set()
        last_fired = {n: T0 for n in names}
        favourites = names[:6]  # a habit: stimulated together most days
        for day in range(DAYS):
            start = T0 + timedelta(days=day)
            fired: set[str] = set()
            for _ in range(rng.randrange(0, 4)):
                group = rng.sample(favourites, 3) if rng.random() < 0.7 else rng.sample(names, 3)
                at = start + timedelta(hours=rng.randrange(1, 23))
                ledger.append(
                    [
                        NewEvent.of(
                            NeuronActivated(id=n, strength=1.0), stream=f"neuron:{n}", at=at
                        )
                        for n in group
                        for _ in range(3)
                    ]
                )
                fired.update(group)
                for n in group:
                    last_fired[n] = at
            clock_now[0] = start + timedelta(days=1, minutes=1)
            result = runner.run("sleep")
            assert result.outcome == "ok"
            assert result.plan.counts["candidates"] <= len(fired)
            co_active.update((e.payload.source, e.payload.target) for e in result.plan.events)
        end = clock_now[0]
        weights = {
            (e.payload.source, e.payload.target): e.payload.weight
            for e in ledger.read(kinds=["connection.reweighted"])
        }
        with engine.read() as conn:
            alive = above(conn, settings.threshold - 1, end, ["neuron"])
    assert set(weights) == co_active
    assert all(1000 < w <= 65535 for w in weights.values())
    idle = {n for n, at in last_fired.items() if end - at > timedelta(days=2)}
    assert not idle & {item.id for item in alive}
    saturated = sum(w == 65535 for w in weights.values())
    print(
        f"{DAYS} days: {len(weights)}/{len(edges)} connections strengthened,"
        f" {saturated} at the cap, mean weight {sum(weights.values()) / max(len(weights), 1):.0f},"
        f" {len(alive)} neurons above the threshold at the end"
    )
