"""Scheduled and on-demand work run by the daemon: consolidation (sleep), archival, the
nightly dream, hygiene and reflection.

Jobs are pure planners over the projections as known at their window's end; the
:class:`JobRunner` appends each window's events with its ``job.completed`` in one batch whose
ids derive from (job, window), so a re-run after a crash appends nothing new, and a
:class:`Lease` keeps two runners of a cluster from doing the same window twice (ADR 0031).
"""

import typing

if typing.TYPE_CHECKING:
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

#: Each public name and its module, imported on first use (PEP 562): importing
#: :mod:`engram.jobs.errors` (as :mod:`engram.errors` does) loads no job.
_EXPORTS: dict[str, str] = {
    "AdvisoryLease": "engram.jobs.lease",
    "ArchiveJob": "engram.jobs.archival",
    "ArchiveSettings": "engram.jobs.archival",
    "AsOfReader": "engram.jobs.asof",
    "DaemonError": "engram.jobs.errors",
    "DreamJob": "engram.jobs.dream",
    "DreamSettings": "engram.jobs.dream",
    "FileLease": "engram.jobs.lease",
    "HygieneJob": "engram.jobs.hygiene",
    "HygieneSettings": "engram.jobs.hygiene",
    "Job": "engram.jobs.base",
    "JobConfigError": "engram.jobs.errors",
    "JobContext": "engram.jobs.base",
    "JobError": "engram.jobs.errors",
    "JobHistory": "engram.jobs.cluster",
    "JobRunner": "engram.jobs.runner",
    "Lease": "engram.jobs.lease",
    "LeaseError": "engram.jobs.errors",
    "Plan": "engram.jobs.base",
    "ReflectJob": "engram.jobs.reflection",
    "ReflectSettings": "engram.jobs.reflection",
    "RunResult": "engram.jobs.runner",
    "SleepJob": "engram.jobs.consolidation",
    "SleepSettings": "engram.jobs.consolidation",
    "Window": "engram.jobs.base",
    "boundary": "engram.jobs.base",
    "cluster_view": "engram.jobs.cluster",
    "consolidate": "engram.jobs.consolidation",
    "job_history": "engram.jobs.cluster",
    "last_completed": "engram.jobs.base",
    "lease_for": "engram.jobs.lease",
    "next_boundary": "engram.jobs.base",
    "node_name": "engram.jobs.cluster",
    "utc_now": "engram.jobs.runner",
}

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


def __getattr__(name: str) -> typing.Any:
    """Import a public name's module on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
