"""What the ledger says the cluster did: for each job, its windows and the nodes that ran them.

Every daemon of a cluster appends its windows' ``job.completed`` to the one ledger, naming
its node (host and pid, schema 2): reading a job's stream tells any node which windows ran,
when each was appended and where, whichever daemon ran them (ADR 0049). A liveness record
only knows its own daemon.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from engram.ledger import Ledger
from engram.ledger.catalog import JobCompleted

#: How a window written before nodes were recorded (schema 1) is attributed.
UNRECORDED = "unrecorded"


def node_name(host: str | None, pid: int | None) -> str:
    """Return a node's name as shown: ``host pid N``, or ``unrecorded`` for old windows."""
    if host is None:
        return UNRECORDED
    return host if pid is None else f"{host} pid {pid}"


@dataclass(frozen=True)
class JobHistory:
    """One job's windows as the ledger holds them: how many, the latest, and who ran them."""

    job: str
    windows: int = 0
    last: JobCompleted | None = None
    #: When the latest window's ``job.completed`` was appended, and at which position.
    last_at: datetime | None = None
    last_position: int | None = None
    #: Windows run per node (:func:`node_name`), most first.
    nodes: dict[str, int] = field(default_factory=dict)

    @property
    def ran_by(self) -> str | None:
        """Return the node that ran the latest window, None if the job never ran."""
        return None if self.last is None else node_name(self.last.host, self.last.pid)


def job_history(ledger: Ledger, job: str) -> JobHistory:
    """Return ``job``'s windows as read from its ``job:<name>`` stream."""
    windows = 0
    nodes: Counter[str] = Counter()
    last: JobCompleted | None = None
    last_at: datetime | None = None
    last_position: int | None = None
    for event in ledger.read_stream(f"job:{job}"):
        if event.kind != "job.completed":
            continue
        payload: JobCompleted = event.payload
        windows += 1
        nodes[node_name(payload.host, payload.pid)] += 1
        if last is None or payload.window_end > last.window_end:
            last, last_at, last_position = payload, event.at, event.position
    return JobHistory(job, windows, last, last_at, last_position, dict(nodes.most_common()))


def cluster_view(ledger: Ledger, jobs: Iterable[str]) -> list[JobHistory]:
    """Return the history of each of ``jobs``, in the order given."""
    return [job_history(ledger, job) for job in jobs]
