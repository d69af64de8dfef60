"""The daemon behind ``engram run``: follow the ledger, keep projections caught up, run jobs.

Two threads of work. The *follower* waits for new ledger positions, brings every projection
up to the head, counts ``neuron.activated`` events for the sleep's action trigger, checks
saturation, and rewrites the liveness record (:mod:`engram.jobs.status`) every beat. The
*scheduler* is APScheduler 3's ``BackgroundScheduler`` with one worker thread: each job
fires at the multiples of its period since the Unix epoch (so every runner in a cluster
fires at the boundaries that close windows, the moment they close), ``max_instances=1``,
``coalesce=True`` and a misfire grace of one period. One-off fires run on the same worker:
a catch-up at start when a window has closed and was not run, the early triggers (actions,
saturation), and the retries of a timer fire that found the lease taken, after 0.25 s,
0.5 s, 1 s... at most :data:`RETRY_CAP` apart, until the window is done or the next boundary
comes (ADR 0048). Each fire is :meth:`JobRunner.run` under the job's lease (ADR 0031).

The clock is injectable: the scheduler's notion of *now* for windows and next runs, never a
projection's, which only ever reads event times.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger

from engram.jobs.base import Window, boundary, next_boundary
from engram.jobs.consolidation import NAME as SLEEP
from engram.jobs.consolidation import SleepJob, active_count
from engram.jobs.errors import DaemonError
from engram.jobs.runner import JobRunner, RunResult
from engram.jobs.status import status_path, write_status
from engram.projections.errors import CatchUpError

_log = logging.getLogger(__name__)

LOCK_FILE = "daemon.lock"
#: How often saturation is checked (seconds): a query over the live salience index.
SATURATION_EVERY = 30.0
#: The first retry of a fire that found the lease taken (seconds); each next one waits twice
#: as long, at most RETRY_CAP, and none is made past the job's next boundary.
RETRY_FIRST = 0.25
RETRY_CAP = 5.0
#: The one-off fires of a job, each a scheduler job of id ``<job>-<reason>``.
ONE_OFF = ("catch-up", "retry", "actions", "saturation", "retry-actions", "retry-saturation")


class EpochTrigger(BaseTrigger):  # type: ignore[misc]  # APScheduler 3 is untyped
    """Fire at every multiple of ``every`` since the Unix epoch, in exact time arithmetic."""

    def __init__(self, every: timedelta) -> None:
        if every <= timedelta(0):
            raise DaemonError(f"a job's period must be positive, got {every}")
        self.every = every

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        """Return the boundary after the previous fire, else the first one at or after now."""
        if previous_fire_time is not None:
            return next_boundary(previous_fire_time, self.every)
        last = boundary(now, self.every)
        return last if last == now else last + self.every

    def __str__(self) -> str:
        return f"epoch[{self.every}]"


class Daemon:
    """Keep a ledger's projections caught up and run its jobs on schedule until stopped."""

    def __init__(
        self,
        runner: JobRunner,
        store: str | Path,
        *,
        beat: float = 5.0,
        poll: float = 0.5,
    ) -> None:
        if beat <= 0 or poll <= 0:
            raise DaemonError(f"beat and poll must be positive seconds, got {beat}, {poll}")
        self.runner = runner
        self.store = Path(store)
        self.beat = beat
        self.poll = poll
        self.stopping = threading.Event()
        self.last: dict[str, dict[str, Any]] = {}
        self.started = datetime.now(UTC)
        self.checkpoint = 0
        self.actions_since_sleep = 0
        # The follower adds the activations it reads; a finished sleep takes off those it
        # consolidated; an early fire starts the count again: three threads, one count.
        self._actions = threading.Lock()
        self._lock_fd: int | None = None
        self._last_saturation = 0.0
        # Held to add a one-off fire (an early trigger, a catch-up, a retry) and to set
        # ``stopping``: no fire is added, nor the scheduler asked, once stop() began.
        self._scheduling = threading.Lock()
        self._retries: dict[str, int] = {}
        self.scheduler = BackgroundScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(max_workers=1)},
            job_defaults={"max_instances": 1, "coalesce": True},
        )
        self.triggers: dict[str, EpochTrigger] = {
            name: EpochTrigger(job.every) for name, job in runner.jobs.items()
        }

    # -- running ----------------------------------------------------------------------------

    def fire(self, name: str, trigger: str = "timer") -> RunResult | None:
        """Run job ``name`` now, at the runner's clock; record the outcome (never raises).

        A timer fire that finds the lease taken is retried with a bounded backoff (ADR 0048).
        """
        at = self.runner.clock()
        counted = self.actions_since_sleep  # what a sleep starting now consolidates
        try:
            result = self.runner.run(name, trigger=trigger)
        except Exception as exc:  # a failed window is retried at the next fire
            _log.exception("job %s failed", name)
            self.last[name] = {"outcome": "failed", "at": at.isoformat(), "error": str(exc)}
            return None
        self.last[name] = {
            "outcome": result.outcome,
            "at": at.isoformat(),
            "duration_ms": round(result.duration_ms, 1),
            "window_end": None if result.window is None else result.window.end.isoformat(),
            "events": len(result.positions),
        }
        if name == SLEEP and result.outcome in ("ok", "done"):
            # Activations read while the sleep ran came after its window: they count toward
            # the next early sleep, not nowhere.
            with self._actions:
                self.actions_since_sleep = max(0, self.actions_since_sleep - counted)
        if result.outcome == "leased":
            # Retried like a timer fire: an early sleep (its count reset when it was
            # submitted) that found a running sleep's lease was lost before.
            self._retry(name, trigger)
        else:
            self._retries.pop(self._retry_key(name, trigger), None)
        return result

    def next_run(self, name: str, now: datetime | None = None) -> datetime | None:
        """Return when ``name`` fires next: the scheduler's own next fire once it runs (the
        next boundary, or a pending catch-up or retry), else the next boundary at the
        runner's clock."""
        if self.scheduler.running:
            ids = {name, *(f"{name}-{reason}" for reason in ONE_OFF)}
            times = [
                job.next_run_time
                for job in self.scheduler.get_jobs()
                if job.id in ids and job.next_run_time is not None
            ]
            if times:
                fire: datetime = min(times)
                return fire
        return self.triggers[name].get_next_fire_time(None, now or self.runner.clock())

    def start(self) -> None:
        """Take the store's daemon lock, start the scheduler and the follower thread.

        Each job's timer fires at its next boundary; a job whose last closed window was not
        run (the daemon was down, or this is a new ledger) first gets a catch-up fire now.
        """
        self._take_lock()
        for name, job in self.runner.jobs.items():
            self.scheduler.add_job(
                self.fire,
                self.triggers[name],
                args=[name],
                id=name,
                misfire_grace_time=max(int(job.every.total_seconds()), 1),
            )
            if self._due(name):
                self._submit(name, "timer", reason="catch-up")
        # The follower counts from the head as the daemon starts, not as its thread gets to
        # run: activations appended meanwhile (after a catch-up fire) count toward an early
        # sleep (they were missed, and the early sleep never came).
        seen = self.runner.ledger.head()
        self.scheduler.start()
        self._follower = threading.Thread(
            target=self._follow, args=(seen,), name="engram-follow", daemon=True
        )
        self._follower.start()
        _log.info("daemon started: jobs %s", ", ".join(self.runner.jobs))

    def _due(self, name: str) -> bool:
        """Return whether a closed window of ``name`` waits to be run (True when unsure)."""
        try:
            return self.runner.next_window(name) is not None
        except Exception:  # the fire itself will say what is wrong
            _log.exception("cannot tell whether %s has a window due", name)
            return True

    @staticmethod
    def _retry_key(name: str, trigger: str) -> str:
        return name if trigger == "timer" else f"{name}-{trigger}"

    def _retry(self, name: str, trigger: str = "timer") -> None:
        """Fire ``name`` again (for ``trigger``) after a backoff, unless its next boundary
        comes first."""
        key = self._retry_key(name, trigger)
        attempt = self._retries.get(key, 0)
        delay = min(RETRY_FIRST * 2**attempt, RETRY_CAP)
        when = datetime.now(UTC) + timedelta(seconds=delay)
        # Runs on the scheduler's worker. Its shutdown holds the scheduler's locks while it
        # waits for this fire to end, so the scheduler is asked nothing once stopping (the
        # question would wait for the lock for ever): checked under the lock stop() takes.
        with self._scheduling:
            if self.stopping.is_set():
                return
            timer = self.scheduler.get_job(name)
            due = None if timer is None else timer.next_run_time
            if due is not None and when >= due:
                self._retries.pop(key, None)  # the timer's next fire covers the window
                return
            self._retries[key] = attempt + 1
            _log.debug("%s: the lease is taken; retry %d in %.2f s", key, attempt + 1, delay)
            reason = "retry" if trigger == "timer" else f"retry-{trigger}"
            self._add(name, trigger, reason, when)

    def stop(self) -> None:
        """Stop following, let a running job finish, write the final record, release the lock."""
        with self._scheduling:  # a fire asking the scheduler for a retry now finishes first
            self.stopping.set()
        if self.scheduler.running:
            self._shut_scheduler()
        follower = getattr(self, "_follower", None)
        if follower is not None:
            follower.join(timeout=30)
        if self._lock_fd is not None:
            self._write(stopped=True)
            os.close(self._lock_fd)
            self._lock_fd = None
        _log.info("daemon stopped")

    def _shut_scheduler(self) -> None:
        """Shut the scheduler down once its thread is not amid a round of due fires.

        APScheduler 3's shutdown marks the scheduler stopped before it takes its locks; a
        round of due fires under way then fails to remove a one-off fire it just started
        ("No job by the id of ...-catch-up"), and its thread dies with a traceback. Paused
        under the job stores' lock, no round is under way, none begins, and one that began
        before the pause ends before the shutdown starts.
        """
        lock = getattr(self.scheduler, "_jobstores_lock", None) or contextlib.nullcontext()
        with lock:
            self.scheduler.pause()
        with lock:
            pass
        self.scheduler.shutdown(wait=True)

    def run_forever(self) -> None:
        """Start, then block until SIGTERM or SIGINT (or :meth:`stop`), then stop gracefully."""
        with self._signals():
            self.start()
            try:
                while not self.stopping.wait(1.0):
                    pass
            finally:
                self.stop()

    @contextlib.contextmanager
    def _signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            _log.info("signal %d: stopping", signum)
            self.stopping.set()

        old = {s: signal.signal(s, handle) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    # -- following --------------------------------------------------------------------------

    def _follow(self, seen: int) -> None:
        ledger, engine = self.runner.ledger, self.runner.engine
        caught = -1
        last_beat = 0.0
        clock = _monotonic
        while not self.stopping.is_set():
            head = ledger.head()
            if head > seen:
                if SLEEP in self.runner.jobs:
                    read = sum(1 for _ in ledger.read(seen, kinds=["neuron.activated"], upto=head))
                    with self._actions:
                        self.actions_since_sleep += read
                seen = head
            if head != caught:
                try:
                    self.checkpoint = caught = engine.catch_up(upto=head)
                except CatchUpError as exc:
                    _log.error("catch-up stopped: %s", exc)
                    caught = head  # retried when the next event arrives
            self._early_triggers()
            if clock() - last_beat >= self.beat:
                self._write()
                last_beat = clock()
            if ledger.head() == seen:
                ledger.wait(seen, self.poll)

    def _early_triggers(self) -> None:
        job = self.runner.jobs.get(SLEEP)
        if not isinstance(job, SleepJob):
            return
        settings = job.settings
        with self._actions:
            early = bool(settings.after_actions) and (
                self.actions_since_sleep >= settings.after_actions
            )
            if early:
                self.actions_since_sleep = 0
        if early and self.scheduler.running:
            self._submit(SLEEP, "actions")
        if settings.saturation and _monotonic() - self._last_saturation >= SATURATION_EVERY:
            self._last_saturation = _monotonic()
            now = self.runner.clock()
            probe = Window(SLEEP, now - timedelta(seconds=1), now, "saturation")
            with self.runner.engine.read() as conn:
                active = active_count(conn, probe, settings.threshold, self.runner.rate)
            if active > settings.saturation:
                _log.info("saturation: %d neurons at or above %d", active, settings.threshold)
                if self.scheduler.running:
                    self._submit(SLEEP, "saturation")

    def _submit(
        self, name: str, trigger: str, *, reason: str | None = None, when: datetime | None = None
    ) -> None:
        """Add a one-off fire of ``name`` (at ``when``, else now) that runs however late."""
        with self._scheduling:
            if self.stopping.is_set():
                return
            self._add(name, trigger, reason, when)

    def _add(self, name: str, trigger: str, reason: str | None, when: datetime | None) -> None:
        """Add the one-off fire (the caller holds ``_scheduling`` and checked ``stopping``)."""
        self.scheduler.add_job(
            self.fire,
            "date",
            run_date=when or datetime.now(UTC),
            args=[name, trigger],
            id=f"{name}-{reason or trigger}",
            replace_existing=True,
            misfire_grace_time=None,  # queued behind a long job, it still runs
        )

    # -- liveness ---------------------------------------------------------------------------

    def _take_lock(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        path = self.store / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DaemonError(
                f"another daemon runs on the projection store {self.store} (it holds {path})"
            ) from None
        self._lock_fd = fd

    def record(self, *, stopped: bool = False) -> dict[str, Any]:
        """Return the liveness record as it would be written now."""
        now = datetime.now(UTC)
        jobs = {}
        for name, job in self.runner.jobs.items():
            fire = self.next_run(name)
            jobs[name] = {
                "every_s": job.every.total_seconds(),
                "next_run": None if fire is None or stopped else fire.isoformat(),
                "last": self.last.get(name),
            }
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": self.started.isoformat(),
            "beat": now.isoformat(),
            "beat_every": self.beat,
            "stopped": now.isoformat() if stopped else None,
            "ledger_head": self.runner.ledger.head(),
            "checkpoint": self.checkpoint,
            "jobs": jobs,
        }

    def _write(self, *, stopped: bool = False) -> None:
        try:
            write_status(status_path(self.store), self.record(stopped=stopped))
        except DaemonError as exc:
            _log.warning("%s", exc)


_monotonic = time.monotonic
