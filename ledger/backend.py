"""The storage port: what the store needs from a database. One adapter per backend.

Backends speak rows — tuples in :data:`engram.ledger.schema.COLUMNS` order, indexed by
:class:`engram.ledger.schema.Column` — never events. A row read back carries ``at`` as the
driver returned it (:attr:`Backend.parse_at` makes the event's datetime of it, and
:meth:`Backend.at_text` the text the hash covers); a row written carries it as the canonical
text produced by :func:`engram.ledger.codec.format_at`.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from engram.ledger.errors import DamagedLedgerError, StoreError, UnsupportedFormatError
from engram.ledger.schema import FORMAT_VERSION, HASH_ALGORITHM, Column

Row = tuple[Any, ...]


class InsertConflictError(StoreError):
    """A unique index refused an insert: a stored id or a stale stream version.

    Raised by :meth:`WriteTransaction.insert`; the store plans the group again carefully.
    """


class StoredContent(NamedTuple):
    """What an already-stored event is compared on when its id is appended again."""

    position: int
    stream: str
    kind: str
    schema: int
    actor: str
    payload: bytes
    causation_id: str | None
    correlation_id: str | None


@dataclass(frozen=True)
class AuditTarget:
    """Where DuckDB finds the ledger for SQL audit."""

    #: The name of a backend registered in :mod:`engram.ledger.backends`.
    backend: str
    location: str
    schema: str | None = None


class WriteTransaction(abc.ABC):
    """One exclusive write transaction: the only place positions are assigned."""

    @abc.abstractmethod
    def head(self) -> tuple[int, bytes]:
        """Return the last position and its hash ((0, genesis) when empty)."""

    @abc.abstractmethod
    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Return the current version of each given stream that exists."""

    @abc.abstractmethod
    def find(self, ids: Sequence[str]) -> dict[str, StoredContent]:
        """Return the stored content of each given id that exists."""

    @abc.abstractmethod
    def insert(self, rows: Sequence[Row]) -> None:
        """Insert rows (``at`` as canonical text) in position order.

        Raises:
            InsertConflictError: a unique index (id, or stream and version) refused a row.
        """

    def state(
        self, ids: Sequence[str], streams: Sequence[str]
    ) -> tuple[int, bytes, dict[str, int], dict[str, StoredContent]]:
        """Return head, head hash, stream versions and stored ids in one go.

        Backends with network round trips override this to batch the three lookups.
        """
        head, last = self.head()
        return head, last, self.stream_versions(streams), self.find(ids)


class Backend(abc.ABC):
    """A database holding the ``events`` table."""

    name: str
    #: Opened for reading only: ``write()`` raises ReadOnlyLedgerError.
    readonly: bool = False
    #: Turn a stored ``at`` as read (a row's cell) into an aware UTC datetime; an attribute,
    #: not a method, so the read loop calls the parser itself.
    parse_at: Callable[[Any], datetime]
    #: Rows per query of a replay (``Ledger.read``). A page's events are all built before
    #: the first is handed out, so the page is also what a replay holds in memory at once.
    page_rows: int = 5000

    @abc.abstractmethod
    def create(self) -> None:
        """Create tables, indexes and append-only triggers if missing (idempotent)."""

    @abc.abstractmethod
    def write(self) -> AbstractContextManager[WriteTransaction]:
        """Open the exclusive write transaction; commit on exit, roll back on error."""

    @abc.abstractmethod
    def read_rows(
        self,
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> list[Row]:
        """Return up to ``limit`` rows with ``after < position <= upto`` in position order."""

    def scan_rows(
        self,
        after: int,
        upto: int | None,
        kinds: Sequence[str] | None,
        streams: Sequence[str] | None,
        limit: int,
    ) -> AbstractContextManager[Iterable[Row]]:
        """Give what :meth:`read_rows` returns as an iterable to consume inside the block.

        A backend may hand out the driver's cursor itself, so each row is let go as soon as
        it is used (the store builds an event of it) and no Python frame stands between the
        cursor and the loop that builds the events; a database error while iterating is
        translated as :meth:`read_rows` translates it.
        """
        return nullcontext(self.read_rows(after, upto, kinds, streams, limit))

    @abc.abstractmethod
    def at_text(self, value: Any) -> str:
        """Return the canonical text of a stored ``at`` as read (what the hash covers)."""

    @abc.abstractmethod
    def read_positions(self, positions: Sequence[int]) -> list[Row]:
        """Return the rows at ``positions`` (at most :data:`SQL_CHUNK`), in any order."""

    def read_hashes(self, positions: Sequence[int]) -> dict[int, bytes]:
        """Return the stored hash of each of ``positions`` that holds a row (at most
        :data:`SQL_CHUNK` positions)."""
        return {row[0]: bytes(row[11]) for row in self.read_positions(positions)}

    @abc.abstractmethod
    def read_stream_rows(self, stream: str, after_version: int, limit: int) -> list[Row]:
        """Return up to ``limit`` rows of ``stream`` with version > ``after_version``."""

    @abc.abstractmethod
    def stream_heads(self, streams: Sequence[str]) -> dict[str, int]:
        """Return the committed version of each given stream that exists."""

    @abc.abstractmethod
    def head(self) -> int:
        """Return the last committed position (0 when empty)."""

    @abc.abstractmethod
    def wait(self, after: int, timeout: float) -> int:
        """Block until the head passes ``after`` or ``timeout`` elapses; return the head."""

    @abc.abstractmethod
    def audit_target(self) -> AuditTarget:
        """Say where DuckDB can attach this ledger read-only."""

    @abc.abstractmethod
    def ledger_id(self, create: bool) -> tuple[str, bool]:
        """Return the ledger's identity (its ``ledger_id`` metadata; "" when it has none)
        and whether this call gave it one: ``create`` names a ledger that has no identity
        yet (a random id, stored once; a concurrent namer's id wins)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""

    def scan(self, after: int = 0, page: int = 5000) -> Iterator[Row]:
        """Yield every row after ``after`` in position order, one page in memory at a time."""
        while True:
            rows = self.read_rows(after, None, None, None, page)
            if not rows:
                return
            yield from rows
            after = rows[-1][Column.POSITION]


def as_utc(value: datetime) -> datetime:
    """Return a datetime read from a backend as aware UTC."""
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def check_format(where: str, stored: object, algorithm: object) -> None:
    """Refuse a ledger whose stored format this program does not read
    (UnsupportedFormatError), or whose hash algorithm was changed outside engram
    (DamagedLedgerError): its chain is verified as sha256 whatever the row says, so a row
    saying otherwise was not written by engram (ADR 0160)."""
    if stored != FORMAT_VERSION:
        raise UnsupportedFormatError(
            f"{where} holds ledger format {stored}, this program reads {FORMAT_VERSION}: open"
            " it with the engram that wrote it"
        )
    if algorithm != HASH_ALGORITHM:
        said = "is missing" if algorithm is None else f"reads {str(algorithm)[:40]!r}"
        raise DamagedLedgerError(
            f"{where}: the ledger's hash algorithm (ledger_meta 'hash_algorithm') {said}, not"
            f" {HASH_ALGORITHM!r}: it was changed outside engram; restore the ledger from a"
            " backup"
        )


def checked_identity(found: tuple[str, bool]) -> tuple[str, bool]:
    """Return the ledger identity ``found`` (id, made), refusing a stored id that is not 32
    lowercase hex digits (DamagedLedgerError): no engram wrote it, and the key store named
    after it could not be found."""
    ledger_id = found[0]
    if ledger_id and (len(ledger_id) != 32 or any(c not in "0123456789abcdef" for c in ledger_id)):
        raise DamagedLedgerError(
            f"the ledger's identity (ledger_meta 'ledger_id') reads {ledger_id[:40]!r}, not 32"
            " lowercase hex digits: it was changed outside engram; restore the ledger from a"
            " backup"
        )
    return found
