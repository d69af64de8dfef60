"""What every job shares: its window, the ids derived from it, and the plan it returns.

A job is a pure planner: given the projections as known at its window's end, it returns the
events it would append. The runner appends them together with ``job.completed`` in one
atomic batch whose ids are derived from (job, window, item), so a window is either wholly
done or not done at all, and re-running it appends nothing new (ADR 0031).
"""

from __future__ import annotations

import functools
import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from engram.jobs.errors import JobConfigError
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import JobCompleted

#: The fixed namespace of every job event id: uuid5(NAMESPACE, "job|start|end|item").
NAMESPACE = uuid.UUID("6d1f9a52-3c0e-5b7e-9a41-0e6a1b8c2f10")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The smallest step of an event time: a window [start, end) is read as known at end - TICK.
TICK = timedelta(microseconds=1)
TRIGGERS = ("timer", "actions", "hand", "saturation")


@dataclass(frozen=True)
class Window:
    """One run's span of event time: [start, end), read as known just before ``end``."""

    job: str
    start: datetime
    end: datetime
    trigger: str = "timer"

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            value = getattr(self, name)
            if not isinstance(value, datetime) or value.utcoffset() is None:
                raise JobConfigError(f"window {name} must be a timezone-aware datetime")
        if self.end <= self.start:
            raise JobConfigError(f"window end {self.end} must come after its start {self.start}")
        if self.trigger not in TRIGGERS:
            raise JobConfigError(f"trigger must be one of {TRIGGERS}, got {self.trigger!r}")

    @property
    def as_of(self) -> datetime:
        """Return the time the job reads the projections as of: just before ``end``."""
        return self.end - TICK

    @functools.cached_property
    def _key(self) -> str:
        return f"{self.job}|{_iso(self.start)}|{_iso(self.end)}|"

    def event_id(self, item: str) -> str:
        """Return the id of this window's event about ``item``: the same on every re-run."""
        return str(uuid.uuid5(NAMESPACE, self._key + item))

    @property
    def completed_id(self) -> str:
        """Return the id of this window's ``job.completed`` event."""
        return self.event_id("job.completed")


@dataclass
class Plan:
    """What one window of a job would append, its figures, and a line per item for people."""

    events: list[NewEvent] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    lines: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class JobContext:
    """What a job plans from: the window, the ledger and the projections known at its end.

    ``conn`` holds the salience and graph tables as known at the window's end (a replay when
    the live tables moved past it); ``live`` is the store's snapshot, for the projections
    that are not replayed (scars, suggestions, lexical and semantic indexes): ``conn``
    itself when no replay was needed.
    """

    window: Window
    ledger: Ledger
    conn: sqlite3.Connection
    rate: float
    live: sqlite3.Connection | None = None

    @property
    def store(self) -> sqlite3.Connection:
        """Return the store's live snapshot (``live``, else ``conn``)."""
        return self.conn if self.live is None else self.live


class Job(Protocol):
    """A scheduled job: a name, a timer period, and a planner of one window's events.

    A job may set ``reads_as_of = False`` when it reads no salience or graph table: the
    runner then skips the replay as of the window's end and hands it the live snapshot.
    """

    name: str
    every: timedelta

    def plan(self, ctx: JobContext) -> Plan:
        """Return the events this window appends (ids from ``ctx.window.event_id``)."""
        ...


def boundary(now: datetime, every: timedelta) -> datetime:
    """Return the last multiple of ``every`` since the Unix epoch at or before ``now``."""
    if every <= timedelta(0):
        raise JobConfigError(f"a job's period must be positive, got {every}")
    return EPOCH + ((now - EPOCH) // every) * every


def next_boundary(now: datetime, every: timedelta) -> datetime:
    """Return the first multiple of ``every`` since the Unix epoch strictly after ``now``."""
    return boundary(now, every) + every


def completed(
    event_job: str,
    window: Window,
    counts: dict[str, int],
    ms: float,
    *,
    host: str | None = None,
    pid: int | None = None,
) -> NewEvent:
    """Return the ``job.completed`` event that closes ``window``, run on node (host, pid).

    Its id derives from (job, window), so a re-run of the window is a no-op; its time is left
    to the ledger, which stamps it when it is appended (the window is in the payload).
    """
    return NewEvent.of(
        JobCompleted(
            job=event_job,
            window_start=window.start,
            window_end=window.end,
            trigger=window.trigger,  # type: ignore[arg-type]  # checked by Window
            counts=counts,
            duration_ms=round(ms, 3),
            host=host,
            pid=pid,
        ),
        stream=f"job:{event_job}",
        actor=f"job:{event_job}",
        id=window.completed_id,
    )


def last_completed(ledger: Ledger, job: str) -> JobCompleted | None:
    """Return the ``job.completed`` payload of ``job``'s latest window, None if it never ran."""
    last: JobCompleted | None = None
    for event in ledger.read_stream(f"job:{job}"):
        if event.kind == "job.completed":
            payload: JobCompleted = event.payload
            if last is None or payload.window_end > last.window_end:
                last = payload
    return last


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="microseconds")
