"""Errors raised by the jobs layer.

Every error derives from :class:`JobError`, under engram's one root
:class:`~engram.ledger.errors.EngramError` (the whole tree is drawn in ``engram.errors``).

    JobError
    ├── JobConfigError      a bad job setting or name (names the setting and the value)
    ├── LeaseError          a lease could not be taken or checked (the lock file, the server)
    └── DaemonError         the daemon cannot start (another one runs here, a bad store)
"""

from __future__ import annotations

from engram.ledger.errors import EngramError


class JobError(EngramError):
    """Root of every error the jobs layer raises."""


class JobConfigError(JobError):
    """A job setting, name or argument is invalid."""


class LeaseError(JobError):
    """A lease could not be taken or checked."""


class DaemonError(JobError):
    """The daemon cannot start or keep its liveness record."""
