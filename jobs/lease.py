"""Leases: one runner in a cluster runs a given job at a time (ADR 0031).

On PostgreSQL the lease is a session advisory lock on the ledger's own server, keyed by the
ledger's schema and the job's name; on SQLite it is an ``flock`` on a file beside the
ledger. Both die with their holder: the server ends a dead client's session, the kernel
drops a dead process's locks, so a crashed holder's lease is simply taken by the next
runner that asks. Holding a lease is never what makes a window run once — the ledger's
idempotent append does that — it keeps two runners from doing the same work twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from typing import Protocol

from engram.jobs.errors import LeaseError
from engram.ledger import AuditTarget, Ledger, backends
from engram.ledger.errors import StoreError


class Lease(Protocol):
    """Take a job's lease for a block, without waiting: yield whether it was taken."""

    def hold(self, job: str) -> contextlib.AbstractContextManager[bool]:
        """Yield True while this runner holds ``job``'s lease, False if another does."""
        ...


class FileLease:
    """Leases as ``flock`` locks on ``<ledger>.<job>.lock`` files beside a SQLite ledger."""

    def __init__(self, ledger_path: str) -> None:
        self.prefix = ledger_path

    def path(self, job: str) -> str:
        """Return the lock file of ``job``."""
        return f"{self.prefix}.{job}.lock"

    @contextlib.contextmanager
    def hold(self, job: str) -> Iterator[bool]:
        """Yield True while the lock on ``job``'s file is held here, False if taken elsewhere."""
        try:
            fd = os.open(self.path(job), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LeaseError(
                f"cannot open the lease file {self.path(job)}: {exc.strerror}"
            ) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class AdvisoryLease:
    """Leases as PostgreSQL session advisory locks, one connection per holding."""

    def __init__(self, libpq: str, schema: str, ledger_id: str = "") -> None:
        self.libpq = libpq
        self.schema = schema
        self.ledger_id = ledger_id

    def key(self, job: str) -> int:
        """Return the signed 64-bit advisory lock key of ``job`` in this ledger: from the
        ledger's id, which only a role that reads its schema knows (another tenant's role
        cannot take the lease by name), else from the schema's name."""
        named = f"id:{self.ledger_id}" if self.ledger_id else self.schema
        digest = hashlib.sha256(f"engram-job|{named}|{job}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    @contextlib.contextmanager
    def hold(self, job: str) -> Iterator[bool]:
        """Yield True while the advisory lock of ``job`` is held here, False if held elsewhere."""
        from engram.ledger.postgres_server import advisory_lock

        with contextlib.ExitStack() as stack:
            try:
                held = stack.enter_context(advisory_lock(self.libpq, self.key(job)))
            except StoreError as exc:
                raise LeaseError(f"cannot take a lease: {exc}") from None
            yield held


#: The lease of each lease style a backend names (:attr:`BackendKind.lease`).
LEASES: dict[str, Callable[[AuditTarget, str], Lease]] = {
    "file": lambda target, _id: FileLease(target.location),
    "advisory": lambda target, ledger_id: AdvisoryLease(
        target.location, target.schema or "engram", ledger_id
    ),
}


def lease_for(ledger: Ledger) -> Lease:
    """Return the lease that fits ``ledger``'s backend (its registered lease style)."""
    target: AuditTarget = ledger.audit_target()
    style = backends.named(target.backend).lease
    try:
        return LEASES[style](target, ledger.identity()[0] if style == "advisory" else "")
    except KeyError:
        raise LeaseError(f"no lease for backend {target.backend!r} (style {style!r})") from None
