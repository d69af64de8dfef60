"""engram bench, jobs: a sleep cycle, an archival sweep, cold export, and the daemon's lag.

* Sleep on 100k neurons / 1M connections (10k / 100k with ``--quick``), a tenth of the
  neurons co-active in the window: the planning (a dry run, repeated) beside the same
  selection written by hand in sqlite3 over the same store, then one real cycle with its
  appends, against the 2 s goal.
* Archival of 100k memories (10k quick) never recalled: the planning beside raw sqlite3,
  then one real sweep.
* Cold export of the audit-sized ledger to zstd Parquet beside DuckDB's own COPY of the same
  rows through the same scanner.
* The catch-up lag another process sees: ``engram run`` follows the ledger while this
  process appends one event at a time and waits until the daemon's projections hold it.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from engram.bench.common import Config, Figure, interleave, log
from engram.bench.ledger_bench import build_ledger
from engram.bench.workload import Workload
from engram.jobs import ArchiveJob, ArchiveSettings, JobRunner, SleepJob, SleepSettings
from engram.jobs.lease import FileLease
from engram.ledger import Ledger, NewEvent
from engram.ledger.audit import _extension_path
from engram.ledger.catalog import ConnectionCreated, MemoryObserved, NeuronActivated, NeuronCreated
from engram.ledger.cold import export_segment
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex
from engram.projections.store import STORE_FILE

T0 = datetime(2026, 6, 1, tzinfo=UTC)
FAN = 10


def _sizes(config: Config) -> tuple[int, int]:
    return (10_000, 10_000) if config.quick else (100_000, 100_000)


def _append(ledger: Ledger, events: list[NewEvent]) -> None:
    for start in range(0, len(events), 10_000):
        ledger.append(events[start : start + 10_000])


def _graph(path: str, n: int, rng: random.Random) -> set[str]:
    names = [f"n{i:06d}" for i in range(n)]
    active = set(rng.sample(names, n // 10))
    with Ledger.open(path, durability="fast") as ledger:
        _append(
            ledger,
            [
                NewEvent.of(
                    NeuronCreated(id=x, concept=x, type="semantic"), stream=f"neuron:{x}", at=T0
                )
                for x in names
            ],
        )
        for lo in range(0, n, 10_000):
            _append(
                ledger,
                [
                    NewEvent.of(
                        ConnectionCreated(
                            source=x, target=names[rng.randrange(n)], type="feeds_into", weight=1000
                        ),
                        stream=f"neuron:{x}",
                        at=T0,
                    )
                    for x in names[lo : lo + 10_000]
                    for _ in range(FAN)
                ],
            )
        fired = T0 + timedelta(hours=1, minutes=30)
        _append(
            ledger,
            [
                NewEvent.of(NeuronActivated(id=x, strength=1.0), stream=f"neuron:{x}", at=fired)
                for x in sorted(active)
                for _ in range(3)
            ],
        )
    return active


def _raw_sleep(store: str, threshold: int, since_us: int, as_of_us: int) -> int:
    """The same selection by hand: candidates by decayed salience, connections among them."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT item_id, salience, updated_us FROM salience"
            " WHERE item_kind = 'neuron' AND archived = 0 AND updated_us >= ?",
            (since_us,),
        ).fetchall()
        chosen = {
            i for i, s, u in rows if int(s * 0.99 ** ((as_of_us - u) / 3_600_000_000)) >= threshold
        }
        conn.execute("CREATE TEMP TABLE c (id TEXT PRIMARY KEY)")
        conn.executemany("INSERT INTO c VALUES (?)", [(i,) for i in chosen])
        found = conn.execute(
            "SELECT x.source, x.target, x.type, min(65535, x.weight + 512) FROM connections x"
            " JOIN c a ON a.id = x.source JOIN c b ON b.id = x.target WHERE x.source != x.target"
        ).fetchall()
        return len(found)
    finally:
        conn.close()


def _timed(fn: object) -> object:
    def run() -> float:
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        return time.perf_counter() - start

    return run


def sleep(config: Config) -> list[Figure]:
    """Time a sleep cycle's planning beside raw sqlite3, then one cycle with its appends."""
    n, _ = _sizes(config)
    root = Path(config.scratch, "sleep")
    root.mkdir(parents=True, exist_ok=True)
    path = str(root / "ledger.db")
    start = time.perf_counter()
    active = _graph(path, n, random.Random(config.seed + 13))
    log(
        f"  sleep: {n:,} neurons, {n * FAN:,} connections appended"
        f" in {time.perf_counter() - start:.1f} s"
    )
    now = T0 + timedelta(hours=2, minutes=5)
    with (
        Ledger.open(path, durability="fast") as ledger,
        ProjectionEngine(ledger, root / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        start = time.perf_counter()
        engine.catch_up()
        log(f"  sleep: projections caught up in {time.perf_counter() - start:.1f} s")
        runner = JobRunner(
            ledger,
            engine,
            [SleepJob(SleepSettings(threshold=50_000))],
            lease=FileLease(path),
            clock=lambda: now,
        )
        window = runner.next_window("sleep")
        assert window is not None
        store = str(root / "store" / STORE_FILE)
        since, as_of = _us(window.start), _us(window.as_of)
        planned = runner.run("sleep", dry_run=True).plan.counts
        raw = _raw_sleep(store, 50_000, since, as_of)
        note = (
            f"{len(active):,} co-active neurons -> {planned['candidates']:,} candidates,"
            f" {planned['reweighted']:,} reweights (raw sqlite3 finds {raw:,})"
        )
        plan = Figure(
            f"sleep plan, {n:,} neurons / {n * FAN:,} connections",
            "s",
            "raw sqlite3 selection",
            None,
            note=note,
        )
        samples = interleave(
            config.repeat,
            [
                ("engram", _timed(lambda: runner.run("sleep", dry_run=True))),  # type: ignore[list-item]
                ("raw", _timed(lambda: _raw_sleep(store, 50_000, since, as_of))),  # type: ignore[list-item]
            ],
            "sleep plan",
        )
        plan.engram_samples, plan.reference_samples = samples["engram"], samples["raw"]
        if raw != planned["reweighted"]:
            plan.error = f"engram plans {planned['reweighted']} reweights, raw sqlite3 {raw}"
        cycle = Figure(
            f"sleep cycle with appends, {n:,} neurons",
            "s",
            "goal 2 s",
            None,
            note="one real run: plan, append the reweights and job.completed in one batch",
        )
        start = time.perf_counter()
        result = runner.run("sleep")
        cycle.engram_samples = [time.perf_counter() - start]
        cycle.reference_samples = [2.0]
        cycle.note += f"; {len(result.positions):,} events appended"
    shutil.rmtree(root, ignore_errors=True)
    return [plan, cycle]


def archival(config: Config) -> list[Figure]:
    """Time archiving old, never-recalled memories: plan beside raw sqlite3, then a sweep."""
    _, m = _sizes(config)
    root = Path(config.scratch, "archive")
    root.mkdir(parents=True, exist_ok=True)
    path = str(root / "ledger.db")
    with Ledger.open(path, durability="fast") as ledger:
        _append(
            ledger,
            [
                NewEvent.of(
                    MemoryObserved(agent=f"agent{i % 8}", text=f"memory number {i}", importance=5),
                    stream=f"agent:agent{i % 8}",
                    at=T0 + timedelta(seconds=i),
                )
                for i in range(m)
            ],
        )
    now = T0 + timedelta(days=200)
    with (
        Ledger.open(path, durability="fast") as ledger,
        ProjectionEngine(ledger, root / "store", [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        engine.catch_up()
        job = ArchiveJob(ArchiveSettings(memory_age=timedelta(days=90)))
        runner = JobRunner(ledger, engine, [job], lease=FileLease(path), clock=lambda: now)
        store = str(root / "store" / STORE_FILE)

        def raw() -> int:
            conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
            try:
                cutoff = _us(now - timedelta(days=90))
                positions = [
                    p
                    for (p,) in conn.execute(
                        "SELECT position FROM salience WHERE item_kind = 'memory'"
                        " AND archived = 0 AND recall_count = 0 AND updated_us < ?",
                        (cutoff,),
                    )
                ]
            finally:
                conn.close()
            events = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                agents = dict(
                    events.execute(
                        "SELECT position, json_extract(payload, '$.agent') FROM events"
                        " WHERE kind = 'memory.observed'"
                    ).fetchall()
                )
            finally:
                events.close()
            return len({agents[p] for p in positions})

        plan = Figure(f"archival plan, {m:,} memories", "s", "raw sqlite3 selection", None)
        samples = interleave(
            config.repeat,
            [
                ("engram", _timed(lambda: runner.run("archive", dry_run=True))),  # type: ignore[list-item]
                ("raw", _timed(raw)),  # type: ignore[list-item]
            ],
            "archival plan",
        )
        plan.engram_samples, plan.reference_samples = samples["engram"], samples["raw"]
        sweep = Figure(f"archival sweep with appends, {m:,} memories", "s", "-", None)
        start = time.perf_counter()
        result = runner.run("archive")
        sweep.engram_samples = [time.perf_counter() - start]
        archived = result.plan.counts.get("memories", 0)
        sweep.note = f"{archived:,} memories archived in {len(result.positions) - 1} events"
    shutil.rmtree(root, ignore_errors=True)
    return [plan, sweep]


def export(config: Config) -> list[Figure]:
    """Time cold export to Parquet beside DuckDB's own COPY of the same rows."""
    n = config.sizes.audit_events
    root = Path(config.scratch, "cold")
    root.mkdir(parents=True, exist_ok=True)
    path = str(root / "ledger.db")
    build_ledger(path, Workload(config.seed + 17).events, n, f"cold: generating {n:,} events")
    counter = [0]

    def engram_export() -> float:
        counter[0] += 1
        folder = root / f"segments{counter[0]}"
        with Ledger.open(path, readonly=True) as ledger:
            start = time.perf_counter()
            export_segment(ledger, folder, n + 1)
            seconds = time.perf_counter() - start
        shutil.rmtree(folder)
        return n / seconds

    def duckdb_copy() -> float:
        counter[0] += 1
        target = root / f"copy{counter[0]}.parquet"
        con = duckdb.connect(":memory:")
        try:
            start = time.perf_counter()
            con.execute(f"LOAD '{_extension_path('sqlite_scanner')}'")
            con.execute(f"ATTACH '{path}' AS src (TYPE sqlite, READ_ONLY)")
            con.execute(
                f"COPY (SELECT * FROM src.events ORDER BY position) TO '{target}'"
                " (FORMAT parquet, COMPRESSION zstd)"
            )
            seconds = time.perf_counter() - start
        finally:
            con.close()
        target.unlink()
        return n / seconds

    figure = Figure(
        f"cold export of {n:,} events to zstd Parquet",
        "events/s",
        "DuckDB COPY of the same rows",
        None,
        note="engram: export_segment (the COPY, a row count, the file's sha256, the manifest)",
    )
    samples = interleave(
        config.repeat, [("engram", engram_export), ("duckdb", duckdb_copy)], "cold export"
    )
    figure.engram_samples, figure.reference_samples = samples["engram"], samples["duckdb"]
    shutil.rmtree(root, ignore_errors=True)
    return [figure]


def lag(config: Config) -> list[Figure]:
    """Measure how long after an append another process's daemon has it in its projections."""
    root = Path(config.scratch, "daemon")
    root.mkdir(parents=True, exist_ok=True)
    path = str(root / "ledger.db")
    Ledger.open(path).close()
    (root / "engram.toml").write_text(
        f'ledger = "{path}"\nprojections = "{root / "store"}"\n', encoding="utf-8"
    )
    env = {**os.environ, "ENGRAM_CONFIG": str(root / "engram.toml")}
    env.pop("ENGRAM_LEDGER", None)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "engram", "run", "--poll", "0.05", "--beat", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    samples: list[float] = []
    try:
        store = root / "store" / STORE_FILE
        deadline = time.monotonic() + 60
        while not store.is_file():
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon never created its projection store")
            time.sleep(0.05)
        with Ledger.open(path) as ledger:
            ledger.append(
                NewEvent.of(
                    NeuronCreated(id="probe", concept="probe", type="semantic"),
                    stream="neuron:probe",
                )
            )
            for i in range(20 if config.quick else 100):
                event = NewEvent.of(
                    NeuronActivated(id="probe", strength=0.1), stream="neuron:probe"
                )
                start = time.perf_counter()
                (position,) = ledger.append(event)
                while _checkpoint(store) < position:
                    if time.perf_counter() - start > 30:
                        raise RuntimeError(f"the daemon did not apply position {position} in 30 s")
                    time.sleep(0.001)
                samples.append((time.perf_counter() - start) * 1000)
                time.sleep(0.02 + (i % 5) * 0.01)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.communicate(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
    samples.sort()
    figure = Figure("daemon catch-up lag seen by another process", "ms", "-", None)
    figure.engram_samples = samples
    figure.note = (
        f"median of {len(samples)} appends; p95 {samples[int(len(samples) * 0.95) - 1]:.1f} ms,"
        f" max {samples[-1]:.1f} ms (engram run --poll 0.05, SQLite)"
    )
    return [figure]


def _checkpoint(store: Path) -> int:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute(
            "SELECT min(checkpoint) FROM engram_generations WHERE state = 'live'"
        ).fetchone()
    except sqlite3.Error:
        return -1
    finally:
        conn.close()
    return -1 if row is None or row[0] is None else int(row[0])


def _us(at: datetime) -> int:
    return int((at - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))
