"""The append-only event ledger: engram's single source of truth.

Open one with :meth:`Ledger.open` (a SQLite path or a PostgreSQL URL), append
:class:`NewEvent` batches, read :class:`Event` s back in position order, verify the hash
chain, and audit it in SQL with :func:`open_audit`. Each backend (its URL schemes, how it
opens, attaches for audit and leases) is described once in :mod:`engram.ledger.backends`.

The SQL audit (:func:`open_audit`, :class:`AuditSession`, :class:`AuditResult`) is imported
on first use: it loads DuckDB, which a process that only appends or recalls never needs.
"""

import typing

from engram.ledger.backend import AuditTarget
from engram.ledger.catalog import default_registry
from engram.ledger.chunks import SQL_CHUNK, chunked
from engram.ledger.errors import (
    AppendError,
    AppendOnlyError,
    AuditError,
    AuditQueryError,
    AuditUnavailableError,
    AuditWriteError,
    CheckpointError,
    ConcurrencyError,
    ConfigError,
    DamagedColdError,
    DamagedEventError,
    DamagedLedgerError,
    EnvelopeError,
    EventError,
    IdempotencyError,
    KeyStoreError,
    KindRegistryError,
    LedgerClosedError,
    LedgerError,
    LedgerNotFoundError,
    NotALedgerError,
    PayloadError,
    ReadOnlyLedgerError,
    StoreError,
    UnknownKindError,
    UnsupportedFormatError,
)
from engram.ledger.events import ANY, NO_STREAM, Event, Expect, Expectation, NewEvent
from engram.ledger.ids import new_id
from engram.ledger.kinds import KindRegistry, KindSpec, kind_name
from engram.ledger.shred import FORGOTTEN, KeyStore, Sealer
from engram.ledger.store import DEFAULT_MAX_PAYLOAD, Ledger
from engram.ledger.verify import VerifyReport

__all__ = [
    "ANY",
    "DEFAULT_MAX_PAYLOAD",
    "FORGOTTEN",
    "NO_STREAM",
    "SQL_CHUNK",
    "AppendError",
    "AppendOnlyError",
    "AuditError",
    "AuditQueryError",
    "AuditResult",
    "AuditSession",
    "AuditTarget",
    "AuditUnavailableError",
    "AuditWriteError",
    "CheckpointError",
    "ConcurrencyError",
    "ConfigError",
    "DamagedColdError",
    "DamagedEventError",
    "DamagedLedgerError",
    "EnvelopeError",
    "Event",
    "EventError",
    "Expect",
    "Expectation",
    "IdempotencyError",
    "KeyStore",
    "KeyStoreError",
    "KindRegistry",
    "KindRegistryError",
    "KindSpec",
    "Ledger",
    "LedgerClosedError",
    "LedgerError",
    "LedgerNotFoundError",
    "NewEvent",
    "NotALedgerError",
    "PayloadError",
    "ReadOnlyLedgerError",
    "Sealer",
    "StoreError",
    "UnknownKindError",
    "UnsupportedFormatError",
    "VerifyReport",
    "chunked",
    "default_registry",
    "kind_name",
    "new_id",
    "open_audit",
]

if typing.TYPE_CHECKING:
    from engram.ledger.audit import AuditResult, AuditSession, open_audit

_LAZY = frozenset({"AuditResult", "AuditSession", "open_audit"})


def __getattr__(name: str) -> typing.Any:
    """Import the audit's names on first use (PEP 562)."""
    if name in _LAZY:
        from engram.ledger import audit

        value = getattr(audit, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
