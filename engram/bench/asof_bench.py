"""engram bench, jobs: a live daemon's reads as of each window's end (ADR 0038).

A graph of 20k neurons / 200k connections (5k / 50k with ``--quick``) in a SQLite ledger,
its projections caught up. Then window after window (hourly), as a live daemon sees them:
activations inside the window and a few stamped after its end are appended and projected,
and the sleep plan reads the projections as of the window's end three ways:

* ``known_at`` from scratch (what every window paid before: a replay of the whole graph),
* :class:`~engram.jobs.asof.AsOfReader` with its prefix kept from the previous window,
* the live tables (no as-of at all: the wrong answer, the floor a read can reach).

Figures: the kept prefix against the replay (the speed-up), and against the live tables.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from engram.bench.common import Config, Figure, interleave, log
from engram.bench.jobs_bench import FAN, T0, _append, _graph
from engram.jobs.asof import AsOfReader
from engram.jobs.base import JobContext, Window
from engram.jobs.consolidation import SleepJob, SleepSettings
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import NeuronActivated
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import DEFAULT_RATE, SalienceIndex
from engram.projections.timetravel import known_at


def as_of(config: Config) -> list[Figure]:
    """Time the sleep plan's as-of read per window: kept prefix vs replay vs live tables."""
    n = 5_000 if config.quick else 20_000
    root = Path(config.scratch, "asof")
    root.mkdir(parents=True, exist_ok=True)
    path = str(root / "ledger.db")
    rng = random.Random(config.seed + 38)
    _graph(path, n, rng)
    names = [f"n{i:06d}" for i in range(n)]
    job = SleepJob(SleepSettings(threshold=50_000))
    with (
        Ledger.open(path, durability="fast") as ledger,
        ProjectionEngine(ledger, root / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        engine.catch_up()
        reader = AsOfReader(ledger)
        hour = [2]

        def next_window() -> Window:
            """Append one hour's activity (and some after its end), project it."""
            hour[0] += 1
            end = T0 + timedelta(hours=hour[0])
            inside = [
                NewEvent.of(
                    NeuronActivated(id=x, strength=1.0),
                    stream=f"neuron:{x}",
                    at=end - timedelta(minutes=rng.randrange(1, 59)),
                )
                for x in rng.sample(names, n // 100)
            ]
            late = [
                NewEvent.of(
                    NeuronActivated(id=x, strength=1.0),
                    stream=f"neuron:{x}",
                    at=end + timedelta(seconds=rng.randrange(1, 30)),
                )
                for x in rng.sample(names, 20)
            ]
            _append(ledger, inside + late)
            engine.catch_up()
            return Window("sleep", end - timedelta(hours=1), end)

        def plan(window: Window, read: str) -> Callable[[], float]:
            def run() -> float:
                start = time.perf_counter()
                with engine.read() as conn:
                    if read == "live":
                        job.plan(JobContext(window, ledger, conn, DEFAULT_RATE, conn))
                    elif read == "replay":
                        with known_at(conn, ledger, window.as_of) as known:
                            job.plan(JobContext(window, ledger, known, DEFAULT_RATE, conn))
                    else:
                        with reader.known(conn, window.as_of) as known:
                            job.plan(JobContext(window, ledger, known, DEFAULT_RATE, conn))
                return time.perf_counter() - start

            return run

        cold = plan(next_window(), "kept")()
        log(f"  as-of: first read (a new prefix, {n:,} neurons) {cold:.2f} s")
        samples: dict[str, list[float]] = {"kept": [], "replay": [], "live": []}
        for _ in range(config.repeat):
            window = next_window()
            got = interleave(
                1,
                [(read, plan(window, read)) for read in ("kept", "replay", "live")],
                "as-of window",
            )
            for read, values in got.items():
                samples[read] += values
            assert reader.last_read == "incremental", reader.last_read
    shutil.rmtree(root, ignore_errors=True)
    size = f"{n:,} neurons / {n * FAN:,} connections"
    note = f"first read of a daemon (a new prefix) {cold:.2f} s; later windows keep the prefix"
    kept = Figure(f"sleep plan as of window end, {size}", "s", "known_at replay", None, note=note)
    kept.engram_samples, kept.reference_samples = samples["kept"], samples["replay"]
    floor = Figure(
        f"sleep plan as of window end vs live tables, {size}",
        "s",
        "live tables (no as-of)",
        None,
        note="the live tables hold events after the window's end: the floor, not an answer",
    )
    floor.engram_samples, floor.reference_samples = samples["kept"], samples["live"]
    return [kept, floor]
