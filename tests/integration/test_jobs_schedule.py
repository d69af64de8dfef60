"""When the daemon fires: epoch boundaries, a catch-up at start, retries while a lease is taken.

And what a window's ``job.completed`` says: the node that ran it, dated when it was appended
(the window is in its payload), read back from events written before it said so.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import msgspec
import pytest

from engram.jobs import ArchiveJob, ArchiveSettings, JobRunner, SleepJob, SleepSettings
from engram.jobs.base import boundary, next_boundary
from engram.jobs.daemon import RETRY_CAP, Daemon, EpochTrigger
from engram.ledger import Event, Ledger, NewEvent
from engram.ledger.catalog import JobCompleted, NeuronCreated, default_registry
from engram.ledger.kinds import KindRegistry
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

HOUR = timedelta(hours=1)


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[tuple[Ledger, ProjectionEngine, Path]]:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), durability="fast")
    engine = ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()])
    with ledger, engine:
        yield ledger, engine, tmp_path


def completions(ledger: Ledger, job: str | None = None) -> list[Event]:
    return [e for e in ledger.read(kinds=["job.completed"]) if job is None or e.payload.job == job]


def wait_for(ledger: Ledger, count: int, job: str | None = None, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while len(completions(ledger, job)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} windows in {seconds} s"
        time.sleep(0.02)


def test_the_epoch_trigger_fires_on_boundaries_in_exact_time() -> None:
    trigger = EpochTrigger(timedelta(days=1))
    now = datetime(2026, 11, 26, 13, 30, 0, 123456, tzinfo=UTC)
    midnight = datetime(2026, 11, 27, tzinfo=UTC)
    assert trigger.get_next_fire_time(None, now) == midnight
    assert trigger.get_next_fire_time(None, midnight) == midnight
    assert trigger.get_next_fire_time(midnight, midnight) == midnight + timedelta(days=1)
    # A fire that ran late still schedules the next boundary, not "late + a period".
    late = midnight + timedelta(hours=3)
    assert trigger.get_next_fire_time(midnight, late) == midnight + timedelta(days=1)
    odd = EpochTrigger(timedelta(seconds=7))
    t = odd.get_next_fire_time(None, now)
    assert t is not None
    assert (t - datetime(1970, 1, 1, tzinfo=UTC)) % timedelta(seconds=7) == (timedelta(0))


def test_timers_follow_epoch_boundaries_not_the_start_time(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    every = timedelta(seconds=2)
    runner = JobRunner(
        ledger,
        engine,
        [ArchiveJob(ArchiveSettings(every=HOUR)), SleepJob(SleepSettings(every=every))],
    )
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.start()
    try:
        # A new ledger: each job's last closed window is run at start (the catch-up).
        wait_for(ledger, 1, "archive")
        wait_for(ledger, 1, "sleep")
        now = datetime.now(UTC)
        timer = daemon.scheduler.get_job("archive")
        assert timer.next_run_time == next_boundary(now, HOUR)
        assert daemon.next_run("archive") == next_boundary(now, HOUR)
        assert (
            daemon.record()["jobs"]["archive"]["next_run"] == next_boundary(now, HOUR).isoformat()
        )
        wait_for(ledger, 4, "sleep", seconds=30)
    finally:
        daemon.stop()
    windows = completions(ledger, "sleep")
    assert all(e.payload.trigger == "timer" for e in windows)
    for e in windows[1:]:  # after the catch-up, each window closes at its boundary
        late = (e.at - e.payload.window_end).total_seconds()
        assert 0 <= late < 1.5, f"window {e.payload.window_end} closed {late:.2f} s late"
        assert e.payload.window_end - e.payload.window_start == every


def test_no_catch_up_when_the_last_closed_window_was_run(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    runner = JobRunner(ledger, engine, [ArchiveJob(ArchiveSettings(every=HOUR))])
    assert runner.run("archive").outcome == "ok"
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    daemon.start()
    try:
        time.sleep(0.5)
        assert daemon.scheduler.get_job("archive-catch-up") is None
        assert daemon.next_run("archive") == next_boundary(datetime.now(UTC), HOUR)
    finally:
        daemon.stop()
    assert len(completions(ledger)) == 1
    assert "archive" not in daemon.last


_HOLDER = """
import sys, time
from engram.jobs import FileLease
with FileLease(sys.argv[1]).hold("archive") as held:
    print("held" if held else "refused", flush=True)
    time.sleep(600)
"""


def test_a_daemon_that_finds_the_lease_taken_runs_the_window_soon_after_it_frees(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, root = parts
    runner = JobRunner(ledger, engine, [ArchiveJob(ArchiveSettings(every=HOUR))])
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root / "ledger.db")], stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
        daemon.start()
        try:
            deadline = time.monotonic() + 20
            while daemon.last.get("archive", {}).get("outcome") != "leased":
                assert time.monotonic() < deadline, "the catch-up fire never met the lease"
                time.sleep(0.02)
            time.sleep(1.0)  # a few retries meet the lease too
            assert completions(ledger) == []
            os.kill(holder.pid, signal.SIGKILL)  # the holder dies mid-window
            holder.wait()
            freed = time.monotonic()
            wait_for(ledger, 1, seconds=RETRY_CAP + 10)
            took = time.monotonic() - freed
        finally:
            daemon.stop()
    print(f"window run {took:.2f} s after the lease freed")
    assert took < RETRY_CAP + 2
    (done,) = completions(ledger)
    assert done.payload.window_end == boundary(datetime.now(UTC), HOUR)
    assert daemon.last["archive"]["outcome"] == "ok"


def test_job_completed_names_its_node_and_is_dated_when_appended(
    parts: tuple[Ledger, ProjectionEngine, Path],
) -> None:
    ledger, engine, _root = parts
    runner = JobRunner(ledger, engine, [ArchiveJob(ArchiveSettings(every=HOUR))])
    now = datetime.now(UTC)
    before = ledger.append(
        [NewEvent.of(NeuronCreated(id="a", concept="a", type="semantic"), stream="neuron:a")]
    )[-1]
    result = runner.run("archive")
    assert result.outcome == "ok"
    assert result.window is not None
    assert result.window.end == boundary(now, HOUR) < now
    events = list(ledger.read())
    done = events[-1]
    assert done.kind == "job.completed"
    assert done.schema == 2
    assert (done.payload.host, done.payload.pid) == (socket.gethostname(), os.getpid())
    # Ledger time never runs backwards: the window's end is in the payload, not the event time.
    assert done.at >= events[before - 1].at > done.payload.window_end
    assert done.id == result.window.completed_id  # still derived from (job, window)
    # Another node's run of the same window is a no-op; a re-run finds nothing due.
    other = JobRunner(ledger, engine, [ArchiveJob(ArchiveSettings(every=HOUR))])
    assert other.run("archive", now=now).outcome == "idle"
    assert len(completions(ledger)) == 1


class _CompletedV1(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """``job.completed`` as schema 1 wrote it: no node."""

    __kind__: ClassVar[str] = "job.completed"

    job: str
    window_start: datetime
    window_end: datetime
    trigger: str = "timer"
    counts: dict[str, int] = {}
    duration_ms: float = 0.0


def test_job_completed_of_schema_1_is_read_with_no_node(tmp_path: Path) -> None:
    old = KindRegistry()
    for spec in default_registry():
        if spec.name != "job.completed":
            old.register(spec.name, spec.type)
    old.register("job.completed", _CompletedV1)
    path = str(tmp_path / "ledger.db")
    start = datetime(2026, 5, 1, tzinfo=UTC)
    with Ledger.open(path, registry=old) as ledger:
        ledger.append(
            [
                NewEvent(
                    stream="job:sleep",
                    kind="job.completed",
                    payload=_CompletedV1(job="sleep", window_start=start, window_end=start + HOUR),
                    at=start + HOUR,
                )
            ]
        )
    with Ledger.open(path, readonly=True) as ledger:
        (event,) = ledger.read()
    assert event.schema == 1
    assert isinstance(event.payload, JobCompleted)
    assert (event.payload.host, event.payload.pid) == (None, None)
    assert event.payload.window_end == start + HOUR


def test_stop_while_a_fire_meets_a_taken_lease_does_not_hang(
    parts: tuple[Ledger, ProjectionEngine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fire that ends ``leased`` while the daemon stops: its retry must not ask the
    scheduler, whose shutdown holds the scheduler's locks while it waits for that very fire
    (two daemons on one ledger stopped together hung here, in CI)."""
    import threading

    from engram.jobs.runner import RunResult

    ledger, engine, root = parts
    runner = JobRunner(ledger, engine, [ArchiveJob(ArchiveSettings(every=HOUR))])
    daemon = Daemon(runner, root / "store", beat=0.2, poll=0.05)
    running = threading.Event()

    def leased(name: str, *, trigger: str = "timer") -> RunResult:
        running.set()
        assert daemon.stopping.wait(20), "stop() never began"
        time.sleep(0.5)  # the scheduler's shutdown is waiting for this fire by now
        return RunResult(name, "leased")

    monkeypatch.setattr(runner, "run", leased)
    daemon.start()
    assert running.wait(20), "the catch-up fire never ran"
    stopper = threading.Thread(target=daemon.stop, daemon=True)
    stopper.start()
    stopper.join(15)
    assert not stopper.is_alive(), "stop() hung behind the fire's retry"
    assert daemon.last["archive"]["outcome"] == "leased"
    assert daemon.scheduler.get_job("archive-retry") is None
