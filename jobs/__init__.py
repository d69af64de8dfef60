"""Scheduled and on-demand work: consolidation (sleep) and archival, run by the daemon.

Jobs are pure planners over the projections as known at their window's end; the
:class:`JobRunner` appends each window's events with its ``job.completed`` in one batch whose
ids derive from (job, window), so a re-run after a crash appends nothing new, and a
:class:`Lease` keeps two runners of a cluster from doing the same window twice (ADR 0031).
"""

from engram.jobs.archival import ArchiveJob, ArchiveSettings
from engram.jobs.base import Job, JobContext, Plan, Window, boundary, last_completed
from engram.jobs.consolidation import SleepJob, SleepSettings, consolidate
from engram.jobs.errors import DaemonError, JobConfigError, JobError, LeaseError
from engram.jobs.lease import AdvisoryLease, FileLease, Lease, lease_for
from engram.jobs.runner import JobRunner, RunResult, utc_now

__all__ = [
    "AdvisoryLease",
    "ArchiveJob",
    "ArchiveSettings",
    "DaemonError",
    "FileLease",
    "Job",
    "JobConfigError",
    "JobContext",
    "JobError",
    "JobRunner",
    "Lease",
    "LeaseError",
    "Plan",
    "RunResult",
    "SleepJob",
    "SleepSettings",
    "Window",
    "boundary",
    "consolidate",
    "last_completed",
    "lease_for",
    "utc_now",
]
