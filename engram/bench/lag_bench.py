"""engram bench, projections part 3: catch-up lag under a steady append load."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from engram.bench.common import Config, Figure, log
from engram.bench.ledger_bench import build_ledger
from engram.bench.projection_bench import (
    DetailedFigure,
    History,
    _percentile,
    sizes_of,
)
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    NeuronActivated,
)

# -- 3. catch-up lag -------------------------------------------------------------------------


_FOLLOWER = """
import sys, threading
from engram.ledger import Ledger
from engram.projections.engine import REBUILD_BATCH, ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex
ledger = Ledger.open(sys.argv[1])
engine = ProjectionEngine(ledger, sys.argv[2], [NeuronGraph(), SalienceIndex()])
stop = threading.Event()
def wait_for_eof():
    sys.stdin.read()
    stop.set()
threading.Thread(target=wait_for_eof, daemon=True).start()
print("ready", flush=True)
engine.follow(stop=stop)
engine.close()
ledger.close()
"""


@dataclass
class _LagRun:
    appended: dict[int, float] = field(default_factory=dict)  # position -> append returned
    seen: list[tuple[float, int]] = field(default_factory=list)  # (time, min checkpoint)
    errors: list[BaseException] = field(default_factory=list)


def _poll(path: str, stop: threading.Event, run: _LagRun) -> None:
    conn: sqlite3.Connection | None = None
    last = -1
    try:
        while not stop.is_set():
            if conn is None:
                if not os.path.exists(path):
                    time.sleep(0.01)
                    continue
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
            row = conn.execute(
                "SELECT min(checkpoint), count(*) FROM engram_generations WHERE state = 'live'"
            ).fetchone()
            now = time.perf_counter()
            if row[1] == 2 and row[0] != last:
                last = row[0]
                run.seen.append((now, last))
            time.sleep(0.002)
    except BaseException as exc:
        run.errors.append(exc)
    finally:
        if conn is not None:
            conn.close()


def _append_paced(
    ledger: Ledger, history: History, rate: int, seconds: float, run: _LagRun
) -> None:
    try:
        start = time.perf_counter()
        sent = 0
        total = int(rate * seconds)
        while sent < total:
            due = min(total, int((time.perf_counter() - start) * rate))
            if due <= sent:
                time.sleep(0.001)
                continue
            positions = ledger.append(_activations(history, due - sent))
            now = time.perf_counter()
            for p in positions:
                run.appended[p] = now
            sent = due
    except BaseException as exc:
        run.errors.append(exc)


def _activations(history: History, k: int) -> list[NewEvent]:
    rnd = random.Random(history.made)
    history.made += k
    return [
        NewEvent.of(
            NeuronActivated(id=neuron, strength=0.5, cause="bench"),
            stream=f"neuron:{neuron}",
            actor="agent",
        )
        for neuron in rnd.choices(history.neurons, k=k)
    ]


def lag(config: Config) -> list[Figure]:
    """Catch-up lag of a following engine under a paced, durable append load."""
    sizes = sizes_of(config)
    path = os.path.join(config.scratch, "lag-ledger.db")
    store = os.path.join(config.scratch, "lag-store")
    history = History(config.seed + 30, 1000)
    build_ledger(path, history.events, 1000, "catch-up lag: creating 1,000 neurons")
    ledger = Ledger.open(path, durability="full")
    follower = subprocess.Popen(
        [sys.executable, "-c", _FOLLOWER, path, store],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    run = _LagRun()
    stop = threading.Event()
    poller = threading.Thread(
        target=_poll, args=(os.path.join(store, "projections.db"), stop, run), daemon=True
    )
    try:
        assert follower.stdout is not None
        if follower.stdout.readline().strip() != "ready":
            raise RuntimeError("the follower process did not start")
        poller.start()
        deadline = time.monotonic() + 60
        while not run.seen or run.seen[-1][1] < ledger.head():
            if time.monotonic() > deadline or run.errors:
                raise RuntimeError("the follower did not catch up with the setup events")
            time.sleep(0.01)
        log(
            f"catch-up lag: appending {sizes.lag_rate:,} neuron.activated/s for "
            f"{sizes.lag_seconds:g} s (durable) while follow() runs in another process"
        )
        _append_paced(ledger, history, sizes.lag_rate, sizes.lag_seconds, run)
        last = max(run.appended)
        deadline = time.monotonic() + 30
        while run.seen[-1][1] < last and time.monotonic() < deadline and not run.errors:
            time.sleep(0.01)
    finally:
        stop.set()
        if poller.is_alive():
            poller.join()
        if follower.stdin is not None:
            follower.stdin.close()
        try:
            follower.wait(timeout=30)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait()
        ledger.close()
    if run.errors:
        raise run.errors[0]
    lags = _lags(run)
    if len(lags) < len(run.appended):
        raise RuntimeError(f"only {len(lags)} of {len(run.appended)} events were seen applied")
    p50, p99 = _percentile(lags, 50), _percentile(lags, 99)
    elapsed = max(run.appended.values()) - min(run.appended.values())
    details = {
        "events": len(lags),
        "seconds": elapsed,
        "rate": len(lags) / elapsed if elapsed > 0 else None,
        "p50_s": p50,
        "p90_s": _percentile(lags, 90),
        "p99_s": p99,
        "max_s": max(lags),
        "checkpoint_moves": len(run.seen),
    }
    note = (
        f"{len(lags):,} neuron.activated appended at {len(lags) / max(elapsed, 1e-9):,.0f}/s "
        f"(durable, batches every ~1 ms due) while ProjectionEngine.follow() ran in another "
        f"process; lag = first poll (every 2 ms) of the store's checkpoints covering the event "
        f"- the return of its append; p90 {_percentile(lags, 90) * 1e3:.1f} ms, max "
        f"{max(lags) * 1e3:.1f} ms; ratio: budget / lag"
    )
    median = DetailedFigure(
        f"catch-up lag p50, {sizes.lag_rate:,} events/s", "s", "budget 1 s", None, note=note
    )
    median.engram_samples, median.reference_samples = [p50], [1.0]
    tail = DetailedFigure(
        f"catch-up lag p99, {sizes.lag_rate:,} events/s",
        "s",
        "budget 1 s",
        1.0,
        note="p99 must stay under the 1 s budget (ratio > 1)",
        details=details,
    )
    tail.engram_samples, tail.reference_samples = [p99], [1.0]
    shutil.rmtree(store, ignore_errors=True)
    return [median, tail]


def _lags(run: _LagRun) -> list[float]:
    seen = run.seen
    lags: list[float] = []
    k = 0
    for position in sorted(run.appended):
        while k < len(seen) and seen[k][1] < position:
            k += 1
        if k == len(seen):
            break
        lags.append(max(0.0, seen[k][0] - run.appended[position]))
    return lags
