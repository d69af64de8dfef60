"""Run one window of a job: take its lease, choose the window, plan, append atomically.

The window starts where the job's last completed window ended and ends at the last timer
boundary (or, for a run by hand, by action count or by saturation, at the clock's now). A
missed stretch is one window (coalescing). The plan reads the projections as known just
before the window's end, and its events go to the ledger in one batch with the window's
``job.completed``: after a crash the window was either wholly appended or not at all, and
ids derived from (job, window, item) make a second runner's append of the same window a
no-op (ADR 0031).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from engram.jobs.asof import AsOfReader
from engram.jobs.base import Job, JobContext, Plan, Window, boundary, completed, last_completed
from engram.jobs.errors import JobConfigError
from engram.jobs.lease import Lease, lease_for
from engram.ledger import IdempotencyError, Ledger
from engram.projections.engine import ProjectionEngine
from engram.projections.salience import DEFAULT_RATE

_log = logging.getLogger(__name__)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """Return the wall clock's time, aware, in UTC."""
    return datetime.now(UTC)


@dataclass
class RunResult:
    """What one call of :meth:`JobRunner.run` did.

    ``outcome``: ``ok`` (appended), ``dry-run`` (planned only), ``done`` (another runner
    completed this window first), ``idle`` (no complete window yet), ``leased`` (another
    runner holds the lease).
    """

    job: str
    outcome: str
    window: Window | None = None
    plan: Plan = field(default_factory=Plan)
    positions: list[int] = field(default_factory=list)
    duration_ms: float = 0.0


class JobRunner:
    """Runs windows of named jobs over a ledger and its projection engine."""

    def __init__(
        self,
        ledger: Ledger,
        engine: ProjectionEngine,
        jobs: Sequence[Job],
        *,
        lease: Lease | None = None,
        clock: Clock = utc_now,
        rate: float = DEFAULT_RATE,
    ) -> None:
        self.ledger = ledger
        self.engine = engine
        self.jobs = {job.name: job for job in jobs}
        if len(self.jobs) != len(jobs):
            raise JobConfigError(f"two jobs share a name: {[job.name for job in jobs]}")
        self.lease = lease if lease is not None else lease_for(ledger)
        self.clock = clock
        self.rate = rate
        #: Reads as of window ends, kept between windows (ADR 0038).
        self.as_of = AsOfReader(ledger, rate)

    def job(self, name: str) -> Job:
        """Return the job named ``name``."""
        try:
            return self.jobs[name]
        except KeyError:
            raise JobConfigError(f"no job named {name!r} (known: {sorted(self.jobs)})") from None

    def next_window(
        self, name: str, *, trigger: str = "timer", now: datetime | None = None
    ) -> Window | None:
        """Return the window a run now would cover, None when no complete window is due."""
        job = self.job(name)
        now = self._now(now)
        end = boundary(now, job.every) if trigger == "timer" else now
        last = last_completed(self.ledger, name)
        start = last.window_end if last is not None else boundary(now, job.every) - job.every
        if end <= start:
            return None
        return Window(name, start, end, trigger)

    def run(
        self,
        name: str,
        *,
        trigger: str = "timer",
        now: datetime | None = None,
        dry_run: bool = False,
    ) -> RunResult:
        """Run the due window of job ``name`` (see :class:`RunResult` for the outcomes)."""
        job = self.job(name)
        with self.lease.hold(name) as held:
            if not held:
                return RunResult(name, "leased")
            window = self.next_window(name, trigger=trigger, now=now)
            if window is None:
                return RunResult(name, "idle")
            started = time.perf_counter()
            plan = self.plan(job, window)
            if dry_run:
                return RunResult(name, "dry-run", window, plan, [], _ms(started))
            done = completed(
                name,
                window,
                plan.counts | {"events": len(plan.events)},
                _ms(started),
                host=socket.gethostname() or None,
                pid=os.getpid(),
            )
            try:
                positions = self.ledger.append([*plan.events, done])
            except IdempotencyError:
                # Only another runner's record of this very window has our ids.
                last = last_completed(self.ledger, name)
                if last is not None and last.window_end >= window.end:
                    return RunResult(name, "done", window, plan)
                raise
            ms = _ms(started)
            _log.debug(
                "%s: window %s..%s appended %d events in %.0f ms",
                name,
                window.start.isoformat(),
                window.end.isoformat(),
                len(plan.events),
                ms,
            )
            return RunResult(name, "ok", window, plan, positions, ms)

    def plan(self, job: Job, window: Window) -> Plan:
        """Return ``job``'s plan for ``window``, reading the projections known at its end.

        The salience and graph tables as known at the window's end come from
        :class:`AsOfReader`, which keeps its replay between windows; a job whose
        ``reads_as_of`` is False (it reads no salience or graph table) gets the live snapshot.
        """
        self.engine.catch_up()
        with self.engine.read() as conn:
            if not getattr(job, "reads_as_of", True):
                return job.plan(JobContext(window, self.ledger, conn, self.rate, conn))
            with self.as_of.known(conn, window.as_of) as known:
                return job.plan(JobContext(window, self.ledger, known, self.rate, conn))

    def _now(self, now: datetime | None) -> datetime:
        value = self.clock() if now is None else now
        if not isinstance(value, datetime) or value.utcoffset() is None:
            raise JobConfigError(f"the clock must give timezone-aware datetimes, got {value!r}")
        return value.astimezone(UTC)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
