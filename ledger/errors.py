"""Errors raised by the ledger.

Every error derives from :class:`LedgerError`, itself under engram's one root
:class:`EngramError` (the tree of every layer is drawn in ``engram.errors``); backends
translate driver errors into these.

    LedgerError
    ├── ConfigError                 bad location, option or URL
    │   ├── LedgerNotFoundError     a read-only open of a ledger that does not exist
    │   └── NotALedgerError         a file that is not an engram ledger (not a database,
    │                               damaged, or without the ledger's tables)
    ├── EventError                  an event that cannot be appended (names event and field)
    │   ├── UnknownKindError        kind not in the registry
    │   ├── PayloadError            payload does not fit the kind's Struct, or is too large
    │   └── EnvelopeError           malformed id, naive timestamp, bad stream/actor, ...
    ├── AppendError                 a well-formed batch the ledger refuses
    │   ├── ConcurrencyError        expected stream version does not match
    │   └── IdempotencyError        an id already stored with other content, or a mixed retry
    ├── KindRegistryError           a bad registration or upcaster chain
    ├── StoreError                  the database failed or is unreachable (driver error inside)
    │   ├── AppendOnlyError         the database refused an UPDATE or DELETE
    │   ├── DamagedEventError       a stored event's row changed outside engram
    │   └── DamagedLedgerError      the ledger's metadata (its id) changed outside engram
    ├── LedgerClosedError           use after close()
    ├── ReadOnlyLedgerError         an append to a ledger opened read-only
    ├── CheckpointError             (ledger.checkpoints) a key or checkpoint file is missing,
    │                               unreadable or forged
    ├── KeyStoreError               (ledger.shred) a key store that is missing, not private,
    │                               not a key store, or does not hold a sealed value's key
    └── AuditError                  (ledger.audit) SQL audit failures
        ├── AuditWriteError         a statement that would write
        ├── AuditQueryError         DuckDB rejected the query
        └── AuditUnavailableError   missing extension or ledger file
"""

from __future__ import annotations


class EngramError(Exception):
    """Root of every error engram raises to a caller; the whole tree is in ``engram.errors``.

    It lives here, in the lowest layer, so every layer's family can derive from it while
    imports still point down only.
    """


class LedgerError(EngramError):
    """Root of every error the ledger raises."""


class ConfigError(LedgerError):
    """A location, URL or option is invalid."""


class LedgerNotFoundError(ConfigError):
    """A ledger opened read-only does not exist (nothing is ever created to read)."""


class NotALedgerError(ConfigError):
    """The file named is not an engram ledger: not a database, damaged, or another database."""


class ReadOnlyLedgerError(LedgerError):
    """The ledger was opened read-only; appending needs a writable open."""


class CheckpointError(LedgerError):
    """A signing key or a checkpoint file is missing, unreadable, or does not verify."""


class KeyStoreError(LedgerError):
    """A key store is missing, not private or not a key store, or lacks a sealed value's key."""


class EventError(LedgerError):
    """An event cannot be appended; the message names the event and the field."""

    def __init__(self, message: str, *, index: int | None = None, field: str | None = None):
        super().__init__(message)
        self.index = index
        self.field = field


class UnknownKindError(EventError):
    """The event's kind is not registered."""


class PayloadError(EventError):
    """The payload does not fit its kind's Struct, or exceeds the size limit."""


class EnvelopeError(EventError):
    """An envelope field (id, stream, actor, at, causation/correlation id) is malformed."""


class AppendError(LedgerError):
    """A well-formed batch that the ledger refuses to store."""


class ConcurrencyError(AppendError):
    """A stream's current version differs from the expected one."""

    def __init__(self, message: str, *, stream: str, expected: object, actual: int):
        super().__init__(message)
        self.stream = stream
        self.expected = expected
        self.actual = actual


class IdempotencyError(AppendError):
    """An event id is already stored with other content, or a retry is partial."""


class KindRegistryError(LedgerError):
    """A kind or upcaster registration is invalid."""


class StoreError(LedgerError):
    """The database failed or cannot be reached."""


class AppendOnlyError(StoreError):
    """The database refused to change or delete a stored event."""


class DamagedEventError(StoreError):
    """A stored event's row cannot be read as an event: it was changed outside engram."""


class DamagedLedgerError(StoreError):
    """The ledger's own metadata (its identity) was changed outside engram."""


class DamagedColdError(StoreError):
    """A cold segment is missing, unreadable or out of place: the cold folder was changed
    outside engram (the ledger itself still holds every row)."""


class UnsupportedFormatError(StoreError):
    """The ledger is in a format this program does not read (a newer engram wrote it)."""


class LedgerClosedError(LedgerError):
    """The ledger was used after it was closed."""


class AuditError(LedgerError):
    """SQL audit failed."""


class AuditWriteError(AuditError):
    """The audit statement would write; nothing was executed."""


class AuditQueryError(AuditError):
    """DuckDB rejected the audit query."""


class AuditUnavailableError(AuditError):
    """The audit cannot start: a scanner extension or the ledger file is missing."""


def driver_message(error: BaseException) -> str:
    """Return a database driver's message on one line, its own lines joined by spaces.

    DuckDB and psycopg write hints and the offending SQL on lines of their own (and a line
    of carets under it, which means nothing once the lines are joined: it is dropped).
    """
    lines = (line.strip() for line in str(error).splitlines())
    return " ".join(line for line in lines if line and line.strip("^ ") != "")
