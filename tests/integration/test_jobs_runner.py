"""The runner and the daemon in one process: windows, idempotency, leases, time travel.

The scheduler's clock is injected (the runner's ``clock``); the projections only ever read
event times. Leases are the real ones: flock on files, advisory locks on the real server.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from clocks import Clock

from engram.jobs import (
    AdvisoryLease,
    ArchiveJob,
    ArchiveSettings,
    FileLease,
    JobConfigError,
    JobRunner,
    RunResult,
    SleepJob,
    SleepSettings,
    Window,
    boundary,
    last_completed,
)
from engram.jobs.daemon import Daemon
from engram.jobs.settings import duration, jobs_from_config
from engram.jobs.status import liveness, read_status, status_path
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronCreated
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

T0 = datetime(2026, 5, 1, tzinfo=UTC)


def neurons(names: list[str], at: datetime) -> list[NewEvent]:
    return [
        NewEvent.of(NeuronCreated(id=n, concept=n, type="semantic"), stream=f"neuron:{n}", at=at)
        for n in names
    ]


def ring(names: list[str], at: datetime, weight: int = 1000) -> list[NewEvent]:
    pairs = zip(names, names[1:] + names[:1], strict=True)
    return [
        NewEvent.of(
            ConnectionCreated(source=a, target=b, type="feeds_into", weight=weight),
            stream=f"neuron:{a}",
            at=at,
        )
        for a, b in pairs
    ]


def activate(names: list[str], at: datetime, times: int = 4) -> list[NewEvent]:
    return [
        NewEvent.of(NeuronActivated(id=n, strength=1.0), stream=f"neuron:{n}", at=at)
        for n in names
        for _ in range(times)
    ]


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Ledger, ProjectionEngine, Path]]:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), durability="fast")
    engine = ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()])
    with ledger, engine:
        yield ledger, engine, tmp_path


def reweights(ledger: Ledger) -> list[tuple[str, str, int]]:
    return [
        (e.id, e.payload.source, e.payload.weight)
        for e in ledger.read(kinds=["connection.reweighted"])
    ]


def test_a_window_runs_once_and_a_rerun_appends_nothing(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, _ = parts
    names = [f"n{i}" for i in range(6)]
    ledger.append(
        neurons(names, T0) + ring(names, T0) + activate(names[:3], T0 + timedelta(minutes=30))
    )
    clock = Clock(T0 + timedelta(hours=1, minutes=5))
    runner = JobRunner(ledger, engine, [SleepJob()], clock=clock)
    dry = runner.run("sleep", dry_run=True)
    assert dry.outcome == "dry-run"
    assert len(dry.plan.events) == 2
    assert not list(ledger.read(kinds=["job.completed"]))
    first = runner.run("sleep")
    assert first.outcome == "ok"
    assert first.window == Window("sleep", T0, T0 + timedelta(hours=1))
    # n0-n1 and n1-n2 are the ring's connections between co-active neurons.
    assert sorted((s, w) for _, s, w in reweights(ledger)) == [("n0", 1512), ("n1", 1512)]
    head = ledger.head()
    assert runner.run("sleep").outcome == "idle"
    # Appending the same window's batch again (a second runner, a retry) changes nothing.
    again = runner.plan(runner.job("sleep"), first.window)
    assert ledger.append(again.events) == first.positions[:-1]
    assert ledger.head() == head
    done = last_completed(ledger, "sleep")
    assert done is not None
    assert done.counts["reweighted"] == 2
    assert done.trigger == "timer"


def test_time_travel_windows_are_aligned_contiguous_and_coalesced(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    names = [f"n{i}" for i in range(4)]
    ledger.append(neurons(names, T0) + ring(names, T0))
    clock = Clock(T0 + timedelta(minutes=10))
    runner = JobRunner(ledger, engine, [SleepJob(SleepSettings(threshold=40000))], clock=clock)
    daemon = Daemon(runner, root / "store")
    # The scheduler's next fire time follows the injected clock, not the wall clock.
    assert daemon.next_run("sleep") == T0 + timedelta(hours=1)
    for hour in range(1, 49):
        clock.now = T0 + timedelta(hours=hour, minutes=1)
        if hour % 6 == 0:
            ledger.append(activate(names, clock.now - timedelta(minutes=30)))
        daemon.fire("sleep")
    clock.now = T0 + timedelta(hours=60, minutes=1)  # the daemon was down for 11 boundaries
    daemon.fire("sleep")
    windows = [
        (e.payload.window_start, e.payload.window_end) for e in ledger.read(kinds=["job.completed"])
    ]
    assert windows[0] == (T0, T0 + timedelta(hours=1))
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    assert windows[-1] == (T0 + timedelta(hours=48), T0 + timedelta(hours=60))
    assert len(windows) == 49 == len(set(windows))
    # Every 6 hours all four neurons fire together: their ring grows once per such window.
    weights = {s: w for _, s, w in reweights(ledger)}
    assert weights == {n: 1000 + 8 * 512 for n in names}
    assert daemon.last["sleep"]["outcome"] == "ok"


def test_by_hand_and_timer_windows_share_one_sequence(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, _ = parts
    clock = Clock(T0 + timedelta(hours=3, minutes=20))
    runner = JobRunner(ledger, engine, [SleepJob()], clock=clock)
    assert runner.run("sleep").window == Window(
        "sleep", T0 + timedelta(hours=2), T0 + timedelta(hours=3)
    )
    hand = runner.run("sleep", trigger="hand")
    assert hand.window == Window("sleep", T0 + timedelta(hours=3), clock.now, "hand")
    assert runner.run("sleep").outcome == "idle"  # the next boundary is not reached yet
    clock.now = T0 + timedelta(hours=4, minutes=1)
    assert runner.run("sleep").window == Window("sleep", hand.window.end, T0 + timedelta(hours=4))


def test_bad_settings_and_names_are_refused_naming_them() -> None:
    with pytest.raises(JobConfigError, match="threshold"):
        SleepSettings(threshold=0)
    with pytest.raises(JobConfigError, match="boost"):
        SleepSettings(boost=70000)
    with pytest.raises(JobConfigError, match="memory_age"):
        ArchiveSettings(memory_age=timedelta(0))
    with pytest.raises(JobConfigError, match=r"\[jobs.sleep\] every"):
        jobs_from_config({"sleep": {"every": "soon"}})
    with pytest.raises(JobConfigError, match="unknown key"):
        jobs_from_config({"archive": {"age": 3}})
    with pytest.raises(JobConfigError, match="unknown job"):
        jobs_from_config({"nightmare": {}})
    assert duration("90s", "x") == timedelta(seconds=90)
    assert duration("7d", "x") == timedelta(days=7)
    assert duration(3600, "x") == timedelta(hours=1)
    with pytest.raises(JobConfigError, match="end"):
        Window("sleep", T0, T0)
    assert boundary(T0 + timedelta(minutes=59), timedelta(hours=1)) == T0


def test_two_runners_on_one_file_lease_run_the_window_once(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    lease = FileLease(str(root / "ledger.db"))
    clock = Clock(T0 + timedelta(hours=1, minutes=1))
    a = JobRunner(
        ledger,
        engine,
        [ArchiveJob(ArchiveSettings(every=timedelta(hours=1)))],
        clock=clock,
        lease=lease,
    )
    with lease.hold("archive") as held:
        assert held
        assert a.run("archive").outcome == "leased"
    assert a.run("archive").outcome == "ok"
    assert a.run("archive").outcome == "idle"
    assert len(list(ledger.read(kinds=["job.completed"]))) == 1


_HOLDER = """
import sys, time
from engram.jobs import AdvisoryLease, FileLease
lease = AdvisoryLease(sys.argv[2], sys.argv[3]) if sys.argv[1] == "pg" else FileLease(sys.argv[2])
with lease.hold("sleep") as held:
    print("held" if held else "refused", flush=True)
    time.sleep(600)
"""


def _hold_then_kill(args: list[str], take: object) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, *args], stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "held"
            with take.hold("sleep") as held:  # type: ignore[attr-defined]
                assert not held
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 10
    while True:
        with take.hold("sleep") as held:  # type: ignore[attr-defined]
            if held:
                return
        assert time.monotonic() < deadline, "the dead holder's lease was never released"
        time.sleep(0.1)


def test_a_killed_holders_file_lease_is_taken_over(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    _hold_then_kill(["file", path], FileLease(path))


def test_a_killed_holders_advisory_lease_is_taken_over(pg_dsn: str, pg_schema: str) -> None:
    _hold_then_kill(["pg", pg_dsn, pg_schema], AdvisoryLease(pg_dsn, pg_schema))
    # Another schema's lease of the same job is another lock.
    assert AdvisoryLease(pg_dsn, pg_schema).key("sleep") != AdvisoryLease(pg_dsn, "x").key("sleep")


def test_the_daemon_catches_up_runs_jobs_beats_and_stops(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    runner = JobRunner(ledger, engine, [SleepJob(SleepSettings(every=timedelta(seconds=1)))])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.start()
    try:
        with pytest.raises(Exception, match="another daemon"):
            Daemon(runner, root / "store").start()
        names = ["a", "b"]
        position = ledger.append(neurons(names, datetime.now(UTC)))[-1]
        deadline = time.monotonic() + 10
        while daemon.checkpoint < position or len(list(ledger.read(kinds=["job.completed"]))) < 2:
            assert time.monotonic() < deadline, "no catch-up or no second window in 10 s"
            time.sleep(0.05)
        record = read_status(status_path(root / "store"))
        assert record is not None
        assert liveness(record).state == "running"
        assert record["jobs"]["sleep"]["every_s"] == 1.0
    finally:
        daemon.stop()
    record = read_status(status_path(root / "store"))
    assert liveness(record).state == "stopped"
    windows = [
        (e.payload.window_start, e.payload.window_end) for e in ledger.read(kinds=["job.completed"])
    ]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    assert json.dumps(record)  # the record is plain JSON


def _wait_for_trigger(ledger: Ledger, trigger: str, seconds: float = 15) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        triggers = [e.payload.trigger for e in ledger.read(kinds=["job.completed"])]
        if trigger in triggers:
            return triggers
        assert time.monotonic() < deadline, f"no {trigger} window in {seconds} s: {triggers}"
        time.sleep(0.05)


def test_the_daemon_sleeps_early_after_n_actions(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    now = datetime.now(UTC)
    names = ["a", "b", "c"]
    ledger.append(neurons(names, now) + ring(names, now))
    settings = SleepSettings(after_actions=6, threshold=40000)
    runner = JobRunner(ledger, engine, [SleepJob(settings)])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.start()
    try:
        _wait_for_trigger(ledger, "timer")  # the first fire at start
        ledger.append(activate(names[:2], datetime.now(UTC), times=2))  # 4 actions: not yet
        time.sleep(0.5)
        assert "actions" not in [e.payload.trigger for e in ledger.read(kinds=["job.completed"])]
        ledger.append(activate(names[:2], datetime.now(UTC), times=1))  # 6 actions
        triggers = _wait_for_trigger(ledger, "actions")
    finally:
        daemon.stop()
    assert triggers == ["timer", "actions"]
    # a and b fired together after the timer window: their connection grew in the early sleep.
    assert [(s, w) for _, s, w in reweights(ledger)] == [("a", 1512)]


def test_activations_read_while_a_sleep_runs_count_toward_the_next_early_sleep(
    parts: tuple[Ledger, ProjectionEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, engine, root = parts
    now = datetime.now(UTC)
    names = ["a", "b", "c"]
    ledger.append(neurons(names, now) + ring(names, now))
    runner = JobRunner(ledger, engine, [SleepJob(SleepSettings(after_actions=6, threshold=40000))])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.actions_since_sleep = 2  # read before the sleep began: it consolidates them
    run = runner.run

    def run_while_the_follower_reads(name: str, trigger: str = "timer") -> RunResult:
        result = run(name, trigger=trigger)
        daemon.actions_since_sleep += 4  # the follower's thread reads four more meanwhile
        return result

    monkeypatch.setattr(runner, "run", run_while_the_follower_reads)
    result = daemon.fire("sleep")
    assert result is not None
    assert result.outcome in ("ok", "done")
    assert daemon.actions_since_sleep == 4


def test_an_early_sleep_that_finds_the_lease_taken_is_retried(
    parts: tuple[Ledger, ProjectionEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its count was reset when it was submitted: dropped, the early sleep never came (a
    # timer sleep still holding the lease when the actions arrived made the test above flaky).
    ledger, engine, root = parts
    runner = JobRunner(ledger, engine, [SleepJob(SleepSettings(after_actions=6, threshold=40000))])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    monkeypatch.setattr(runner, "run", lambda name, trigger="timer": RunResult(name, "leased"))
    result = daemon.fire("sleep", "actions")
    assert result is not None
    assert result.outcome == "leased"
    retry = daemon.scheduler.get_job("sleep-retry-actions")
    assert retry is not None
    assert tuple(retry.args) == ("sleep", "actions")


def test_the_daemon_sleeps_early_when_too_many_neurons_are_active(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    now = datetime.now(UTC)
    names = ["a", "b", "c", "d"]
    ledger.append(neurons(names, now) + ring(names, now) + activate(names, now, times=2))
    runner = JobRunner(ledger, engine, [SleepJob(SleepSettings(saturation=3, threshold=40000))])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.start()
    try:
        triggers = _wait_for_trigger(ledger, "saturation")
    finally:
        daemon.stop()
    assert "saturation" in triggers
