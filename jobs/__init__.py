"""Scheduled and on-demand work run by the daemon: consolidation (sleep), archival, the
nightly dream, hygiene and reflection.

Jobs are pure planners over the projections as known at their window's end; the
:class:`JobRunner` appends each window's events with its ``job.completed`` in one batch whose
ids derive from (job, window), so a re-run after a crash appends nothing new, and a
:class:`Lease` keeps two runners of a cluster from doing the same window twice (ADR 0031).
"""

from engram.jobs.archival import ArchiveJob, ArchiveSettings
from engram.jobs.asof import AsOfReader
from engram.jobs.base import (
    Job,
    JobContext,
    Plan,
    Window,
    boundary,
    last_completed,
    next_boundary,
)
from engram.jobs.cluster import JobHistory, cluster_view, job_history, node_name
from engram.jobs.consolidation import SleepJob, SleepSettings, consolidate
from engram.jobs.dream import DreamJob, DreamSettings
from engram.jobs.errors import DaemonError, JobConfigError, JobError, LeaseError
from engram.jobs.hygiene import HygieneJob, HygieneSettings
from engram.jobs.lease import AdvisoryLease, FileLease, Lease, lease_for
from engram.jobs.reflection import ReflectJob, ReflectSettings
from engram.jobs.runner import JobRunner, RunResult, utc_now

__all__ = [
    "AdvisoryLease",
    "ArchiveJob",
    "ArchiveSettings",
    "AsOfReader",
    "DaemonError",
    "DreamJob",
    "DreamSettings",
    "FileLease",
    "HygieneJob",
    "HygieneSettings",
    "Job",
    "JobConfigError",
    "JobContext",
    "JobError",
    "JobHistory",
    "JobRunner",
    "Lease",
    "LeaseError",
    "Plan",
    "ReflectJob",
    "ReflectSettings",
    "RunResult",
    "SleepJob",
    "SleepSettings",
    "Window",
    "boundary",
    "cluster_view",
    "consolidate",
    "job_history",
    "last_completed",
    "lease_for",
    "next_boundary",
    "node_name",
    "utc_now",
]
