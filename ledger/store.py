"""The ledger: append events, read them back in position order, follow, verify.

A :class:`Ledger` speaks domain (events, streams, positions); a backend speaks storage. One
write path per process: concurrent appends from many threads are grouped into one transaction
and one fsync by whichever caller holds the write lock (leader/follower group commit), and
every caller still gets its own positions or its own error (ADR 0006).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from engram.ledger import backends, erasure
from engram.ledger.arguments import check_position, check_timeout, check_utf8, checked_names
from engram.ledger.backend import AuditTarget, Backend, InsertConflictError, Row, checked_identity
from engram.ledger.chunks import chunked
from engram.ledger.codec import decode_payload
from engram.ledger.collector import collector_paused
from engram.ledger.errors import (
    ConfigError,
    DamagedEventError,
    DamagedLedgerError,
    LedgerClosedError,
    LedgerError,
    ReadOnlyLedgerError,
    StoreError,
)
from engram.ledger.events import ANY, Event, Expectation, NewEvent
from engram.ledger.groupcommit import GroupCommitter
from engram.ledger.ids import new_id
from engram.ledger.kinds import KindRegistry
from engram.ledger.links import Links
from engram.ledger.planning import GroupPlan, Request, VersionCache, prepare
from engram.ledger.shred import Sealer
from engram.ledger.verify import VerifyReport, head_unlinked, verify_chain

DEFAULT_MAX_PAYLOAD = 1 << 20
#: Rows per query of ``read_stream``. Larger pages cost memory and save little once a
#: query's setup is spread over a few thousand rows; ``read`` pages by the backend's
#: ``page_rows``.
_PAGE = 5000


def _backend_for(
    target: str, *, durability: str, busy_timeout: float, pg_schema: str, readonly: bool
) -> Backend:
    return backends.resolve(target).open(
        target,
        durability=durability,
        busy_timeout=busy_timeout,
        schema=pg_schema,
        readonly=readonly,
    )


class Ledger:
    """An append-only event ledger on SQLite or PostgreSQL.

    Thread-safe: share one instance among the threads of a process.
    """

    def __init__(
        self,
        backend: Backend,
        registry: KindRegistry | None = None,
        *,
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD,
        sealer: Sealer | None = None,
    ) -> None:
        """``sealer`` seals personal fields on append and opens them on read (ADR 0039);
        without one, sealed fields read as stored. The ledger closes its key store."""
        if registry is None:
            from engram.ledger.catalog import default_registry

            registry = default_registry()
        if not isinstance(max_payload_bytes, int) or max_payload_bytes < 1:
            raise ConfigError(
                f"max_payload_bytes must be a positive int, got {max_payload_bytes!r}"
            )
        self.backend = backend
        self.registry = registry
        self.max_payload_bytes = max_payload_bytes
        if sealer is not None and not isinstance(sealer, Sealer):
            raise ConfigError(f"sealer must be a Sealer, got {type(sealer).__name__}")
        self.sealer = sealer
        self._committer = GroupCommitter(self._commit)
        self._versions = VersionCache()
        self._closed = False
        self._head_linked = False
        backend.create()
        self.finish_forgets()

    @classmethod
    def open(
        cls,
        target: str,
        registry: KindRegistry | None = None,
        *,
        durability: str = "full",
        busy_timeout: float = 30.0,
        pg_schema: str = "engram",
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD,
        readonly: bool = False,
        sealer: Sealer | None = None,
    ) -> Ledger:
        """Open (creating if needed) the ledger at a file path or database URL.

        Args:
            target: a SQLite file path (or ``sqlite:///PATH``), or ``postgresql://...``.
            durability: ``"full"`` (acknowledged = on disk) or ``"fast"`` (ADR 0006).
            busy_timeout: seconds a writer waits for another process's write lock.
            pg_schema: the PostgreSQL schema holding the tables.
            readonly: open an existing ledger for reading only: no ledger is created and
                nothing is written to it, so a ledger on read-only media can be read,
                verified and audited (ADR 0022); appends raise ReadOnlyLedgerError.
            sealer: seals personal fields under per-subject keys (ADR 0039).

        Raises:
            LedgerNotFoundError: ``readonly`` and no ledger is there.
        """
        backend = _backend_for(
            target,
            durability=durability,
            busy_timeout=busy_timeout,
            pg_schema=pg_schema,
            readonly=readonly,
        )
        try:
            return cls(backend, registry, max_payload_bytes=max_payload_bytes, sealer=sealer)
        except BaseException:
            backend.close()
            raise

    # -- writing ---------------------------------------------------------------------------

    def append(
        self,
        events: Sequence[NewEvent] | NewEvent,
        expect: Expectation | Mapping[str, Expectation] = ANY,
    ) -> list[int]:
        """Append a batch atomically and return its positions.

        ``expect`` is ANY, NO_STREAM, an exact version, or a mapping stream -> expectation.
        Re-appending events whose ids are stored with the same content returns their
        original positions, whatever ``expect`` says.

        Raises:
            EventError: a malformed event (names the event and the field); nothing written.
            ConcurrencyError: a stream is not at the expected version; nothing written.
            IdempotencyError: an id is stored with other content; nothing written.
            StoreError: the database failed; nothing written.
        """
        self._check_open()
        if self.backend.readonly:
            raise ReadOnlyLedgerError("this ledger was opened read-only; open it to write")
        forgotten: list[str] = []
        if self.sealer is not None:
            self.sealer.keys.refresh()
            events, forgotten = erasure.forgotten_first(
                events, self.sealer, self.registry, self.max_payload_bytes
            )
        committer = self._committer
        committer.enter()
        try:
            request = prepare(events, expect, self.registry, self.max_payload_bytes, self.sealer)
            committer.submit(request)
        finally:
            committer.leave()
        if request.error is not None:
            raise request.error
        assert request.positions is not None
        if forgotten and self.sealer is not None:
            for subject in forgotten:
                self.sealer.keys.forgetting_done(subject)
        return request.positions

    def check(self, events: Sequence[NewEvent] | NewEvent) -> None:
        """Check ``events`` as :meth:`append` would (each payload against its kind, its size
        once its personal fields are sealed), writing nothing: a caller that appends a
        batch in several steps checks it whole first.

        Raises:
            EventError: a malformed event (names the event and the field).
        """
        self._check_open()
        if self.sealer is not None:
            self.sealer.keys.refresh()
        prepare(events, ANY, self.registry, self.max_payload_bytes, self.sealer)

    def _commit(self, group: list[Request]) -> None:
        try:
            if not self._head_linked:
                # Chained onto a row planted or changed outside engram, a writer's events
                # would carry the tamper on: checked once, before the first (ADR 0186).
                reason = head_unlinked(self.backend)
                if reason is not None:
                    raise DamagedEventError(
                        f"{reason}: the ledger was changed outside engram, so nothing was"
                        " appended; `engram verify` names the first damaged position"
                    )
                self._head_linked = True
            try:
                self._place(group, careful=False)
            except InsertConflictError:
                # A stored id (a retry) or a stale cached version: look everything up.
                self._versions.reset()
                for request in group:
                    request.error, request.positions = None, None
                self._place(group, careful=True)
        except LedgerError as exc:
            self._versions.reset()
            for request in group:
                request.error, request.positions = exc, None
        except BaseException as exc:  # an unexpected failure must not strand followers
            self._versions.reset()
            for request in group:
                request.error, request.positions = StoreError(f"append failed: {exc!r}"), None
            if not isinstance(exc, Exception):
                raise

    def _place(self, group: list[Request], *, careful: bool) -> None:
        with self.backend.write() as tx:
            plan = GroupPlan(tx, group, self._versions, careful)
            plan.run()
            if plan.rows:
                tx.insert(plan.rows)
        plan.remember()

    def forget(
        self,
        subject: str,
        *,
        reason: str = "",
        actor: str = "system",
        also: Sequence[NewEvent] = (),
    ) -> int:
        """Destroy ``subject``'s keys, then append ``subject.forgotten``; return its position.

        Every personal field sealed for ``subject`` reads as ``[forgotten]`` from then on,
        here and in every process sharing the key store; projections consuming the event
        drop the subject's rows. Forgetting again is harmless (a retry after a crash).
        ``also`` is appended in the same batch and kept with it until appended (ADR 0138).

        Raises:
            ConfigError: the ledger has no sealer, or ``subject``, ``reason`` or ``actor`` is
                malformed; nothing is destroyed.
        """
        from engram.ledger.catalog import SubjectForgotten

        self._check_open()
        if self.sealer is None:
            raise ConfigError("this ledger has no key store: nothing is sealed to forget")
        if not isinstance(subject, str) or not subject or len(subject) > 512:
            raise ConfigError(f"subject must be a name of 1..512 characters, got {subject!r}")
        if not subject.strip() and subject not in {k.subject for k in self.sealer.keys.subjects()}:
            # Blanks name a subject only when a raw append wrote one and sealed under it.
            raise ConfigError(f"subject must be a name, not blanks, got {subject!r}")
        if not isinstance(reason, str):
            raise ConfigError(f"reason must be a string, got {type(reason).__name__}")
        if not isinstance(actor, str) or not actor or actor != actor.strip() or len(actor) > 512:
            raise ConfigError(f"actor must be a name of 1..512 characters, got {actor!r}")
        for name, text in (("subject", subject), ("reason", reason), ("actor", actor)):
            check_utf8(text, name)
        if self.backend.readonly:
            raise ReadOnlyLedgerError("this ledger was opened read-only; open it to write")
        # The event is made first and kept with the keys' destruction, so a process killed
        # before it is appended leaves it to the next writer (:meth:`finish_forgets`).
        event = NewEvent.of(
            SubjectForgotten(subject=subject, reason=reason),
            stream="subjects",  # one stream: a 512-character subject fits no longer name
            actor=actor,
            id=new_id(),
            at=datetime.now(UTC),
        )
        also = erasure.stamped(also)
        self.check([event, *also])  # a malformed batch destroys nothing
        self.sealer.keys.forget(subject, unfinished=erasure.unfinished(event, also))
        position = self.append([event, *also])[0]
        self.sealer.keys.forgetting_done(subject)
        return position

    def finish_forgets(self) -> None:
        """Append the ``subject.forgotten`` of each forgetting whose process died after it
        destroyed the keys: the event it made (its id), so one it appended is not again.

        A writer opened with a sealer does this; call it after setting :attr:`sealer`.
        """
        if self.sealer is None or self.backend.readonly:
            return
        for subject, kept in self.sealer.keys.unfinished_forgets().items():
            self.append(erasure.finished(kept))
            self.sealer.keys.forgetting_done(subject)

    # -- reading ---------------------------------------------------------------------------

    @property
    def readonly(self) -> bool:
        """Whether this ledger was opened read-only (appends are refused)."""
        return self.backend.readonly

    def identity(self, *, create: bool = False) -> tuple[str, bool]:
        """Return the ledger's id (stored in it, so it follows a moved or renamed file; ""
        when it has none) and whether this call made it: ``create`` names an unnamed
        ledger. The default key store is named after it (ADR 0086)."""
        self._check_open()
        return checked_identity(self.backend.ledger_id(create and not self.backend.readonly))

    @property
    def backend_name(self) -> str:
        """Name the storage backend: ``"sqlite"`` or ``"postgresql"``."""
        return self.backend.name

    def head(self) -> int:
        """Return the last committed position (0 when the ledger is empty)."""
        self._check_open()
        return self.backend.head()

    def read(
        self,
        after: int = 0,
        *,
        kinds: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        limit: int | None = None,
        upto: int | None = None,
    ) -> Iterator[Event]:
        """Yield events with position > ``after`` in position order, a page at a time."""
        self._check_open()
        check_position(after, "after")
        if limit is not None:
            check_position(limit, "limit")
        if upto is not None:
            check_position(upto, "upto")
        kinds = checked_names(kinds, "kinds")
        streams = checked_names(streams, "streams")
        remaining = limit
        size = self.backend.page_rows
        while remaining is None or remaining > 0:
            page = size if remaining is None else min(size, remaining)
            with (
                collector_paused(),
                self.backend.scan_rows(after, upto, kinds, streams, page) as rows,
            ):
                events = self._events(rows)
            if not events:
                return
            yield from events
            after, got = events[-1].position, len(events)
            # The page is let go before the next is built, which then reuses its memory while
            # that is still in the core's cache (ADR 0104).
            del events
            if remaining is not None:
                remaining -= got
            if got < page:
                return

    def get(self, positions: Sequence[int]) -> list[Event]:
        """Return the events at ``positions``, in the order given, in one query per 500.

        Raises:
            ConfigError: a position is not a positive integer, or holds no event.
            DamagedLedgerError: one at or below the head holds nothing (deleted outside).
        """
        self._check_open()
        if isinstance(positions, str | bytes) or not isinstance(positions, Iterable):
            raise ConfigError(f"positions must be a sequence of ints, got {positions!r}")
        wanted = list(positions)
        for position in wanted:
            check_position(position, "position")
            if position < 1:
                raise ConfigError(f"position must be at least 1, got {position}")
        unique = list(dict.fromkeys(wanted))
        with collector_paused():
            rows = [row for chunk in chunked(unique) for row in self.backend.read_positions(chunk)]
            found = {event.position: event for event in self._events(rows)}
        missing = [p for p in unique if p not in found]
        if missing:
            # Positions are dense: one at or below the head that holds nothing was deleted
            # outside engram, no argument's fault (ADR 0168).
            gone = [p for p in missing if p <= self.head()]
            if gone:
                raise DamagedLedgerError(
                    f"no event at position(s) {', '.join(map(str, gone[:10]))}, below the head:"
                    " rows were deleted outside engram; `engram verify` names the first"
                    " damaged position"
                )
            raise ConfigError(f"no event at position(s) {', '.join(map(str, missing[:10]))}")
        return [found[p] for p in wanted]

    def wait(self, after: int, timeout: float) -> int:
        """Block until the head passes ``after`` or ``timeout`` seconds pass; return the head."""
        self._check_open()
        check_position(after, "after")
        check_timeout(timeout)
        return self.backend.wait(after, timeout)

    def versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Return each stream's committed version (0 for a stream with no events).

        Read a stream's version before the state an append depends on, then append with
        ``expect={stream: version}``: a writer that got in between makes it a ConcurrencyError.
        """
        self._check_open()
        if isinstance(streams, str) or not isinstance(streams, Iterable):
            raise ConfigError(f"streams must be a sequence of stream names, got {streams!r}")
        wanted = list(streams)
        for stream in wanted:
            if not isinstance(stream, str) or not stream:
                raise ConfigError(f"stream must be a non-empty string, got {stream!r}")
            check_utf8(stream, "stream")
        with collector_paused():
            found = self.backend.stream_heads(list(dict.fromkeys(wanted)))
        return {stream: found.get(stream, 0) for stream in wanted}

    def read_stream(self, stream: str, after_version: int = 0) -> Iterator[Event]:
        """Yield the events of one stream in version order."""
        self._check_open()
        check_position(after_version, "after_version")
        if not isinstance(stream, str):
            raise ConfigError(f"stream must be a string, got {stream!r}")
        check_utf8(stream, "stream")
        while True:
            with collector_paused():
                rows = self.backend.read_stream_rows(stream, after_version, _PAGE)
                events = self._events(rows)
            if not events:
                return
            yield from events
            after_version = events[-1].version

    def follow(
        self,
        after: int = 0,
        *,
        kinds: Sequence[str] | None = None,
        streams: Sequence[str] | None = None,
        timeout: float | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[Event]:
        """Yield events after ``after`` as they are committed, blocking for new ones.

        Stops when nothing new arrives for ``timeout`` seconds (None: never), or when
        ``stop`` is set (checked at least once a second).
        """
        self._check_open()
        check_position(after, "after")
        kinds = checked_names(kinds, "kinds")
        streams = checked_names(streams, "streams")
        if timeout is not None:
            check_timeout(timeout)
        idle_since = time.monotonic()
        seen = after
        while stop is None or not stop.is_set():
            head = self.backend.head()
            if head > seen:
                for event in self.read(seen, kinds=kinds, streams=streams, upto=head):
                    yield event
                    idle_since = time.monotonic()
                seen = head
                continue
            if timeout is not None and time.monotonic() - idle_since >= timeout:
                return
            budget = 1.0 if timeout is None else min(1.0, timeout - (time.monotonic() - idle_since))
            self.backend.wait(seen, max(budget, 0.0))

    def _events(self, rows: Iterable[Row]) -> list[Event]:
        """Build the events of a page of rows.

        The hot loop of every read: one pass, locals only, and each payload decoded by its
        kind's decoder directly when it was written at the current schema.
        """
        registry = self.registry
        schemas, decoders = registry.readers()
        current = schemas.get
        parse = self.backend.parse_at
        make = Event
        events: list[Event] = []
        add = events.append
        sealer = self.sealer
        personal = sealer.personal if sealer is not None else {}
        if sealer is not None:
            sealer.keys.refresh()
            unseal = sealer._open_decoded
            rows = list(rows)  # a sealed row is checked before it is opened (ADR 0128)
            links = Links(self.backend, rows, personal)
        # The events of one append share their time: its text is parsed once per run of it.
        last_at: Any = None
        time_: Any = None
        pos = None
        try:
            for row in rows:
                pos, id_, stream, version, kind, schema, actor, at, data, caus, corr, h = row
                if at != last_at:
                    last_at, time_ = at, parse(at)
                if current(kind) == schema:
                    payload = decoders[kind](data)
                else:  # an older schema to upcast, or a kind this program does not know
                    payload = decode_payload(registry.get(kind), data, schema)
                if kind in personal:
                    links.check(row)
                    payload = unseal(kind, id_, payload)
                elif sealer is not None and kind == "subject.forgotten":
                    sealer.forgotten(payload.subject)
                add(
                    make(
                        pos,
                        id_,
                        stream,
                        version,
                        kind,
                        schema,
                        actor,
                        time_,
                        payload,
                        caus,
                        corr,
                        h,
                    )
                )
                if sealer is not None:
                    links.follows(row)
        except (ValueError, TypeError, msgspec.DecodeError) as exc:
            raise DamagedEventError(
                f"the event at position {pos} cannot be read ({type(exc).__name__}:"
                f" {str(exc)[:200]}): its row was changed outside engram; `engram verify`"
                " names the first damaged position"
            ) from exc
        return events

    # -- integrity -------------------------------------------------------------------------

    def verify(
        self,
        *,
        expect_head: int | None = None,
        expect_hash: str | None = None,
        progress: Any = None,
    ) -> VerifyReport:
        """Recompute the hash chain and name the first position that is wrong.

        Detects edited content, deleted rows (a gap) and swapped rows. Rows removed from the
        tail leave a shorter, valid chain: pass a head position and its hash recorded
        elsewhere (``expect_head``, ``expect_hash``) to detect that too. ``progress`` is
        called with the number of events checked, every 10,000 events.
        """
        self._check_open()
        if expect_head is not None:
            check_position(expect_head, "expect_head")
        return verify_chain(
            self.backend, expect_head=expect_head, expect_hash=expect_hash, progress=progress
        )

    # -- lifecycle -------------------------------------------------------------------------

    def audit_target(self) -> AuditTarget:
        """Say where the SQL audit attaches this ledger."""
        return self.backend.audit_target()

    def close(self) -> None:
        """Wait for appends in progress, then release connections; no use afterwards."""
        if self._closed:
            return
        self._closed = True
        self._committer.close()
        self.backend.close()
        if self.sealer is not None:
            self.sealer.keys.close()

    def _check_open(self) -> None:
        if self._closed:
            raise LedgerClosedError("the ledger is closed")

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
