"""Append planning: validate a batch, then assign positions, versions and hashes.

:func:`prepare` runs in the caller's thread and needs no database. :class:`GroupPlan` runs
inside the exclusive write transaction: it checks every request of a commit group against the
stored state and the requests before it, so a conflict fails only its own request and
nothing is inserted before every request has been decided.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from ledger.backend import Row, StoredContent, WriteTransaction
from ledger.codec import canonical, chain, encode_payload, format_at
from ledger.errors import (
    AppendError,
    ConcurrencyError,
    EnvelopeError,
    IdempotencyError,
    UnknownKindError,
)
from ledger.events import Expect, Expectation, NewEvent
from ledger.ids import new_ids, normalize_id
from ledger.kinds import KindRegistry

MAX_NAME = 512


class Prepared(NamedTuple):
    """A validated event, ready to be placed."""

    id: str
    stream: str
    kind: str
    schema: int
    actor: str
    at: str
    payload: bytes
    causation_id: str | None
    correlation_id: str | None

    def content(self) -> tuple[object, ...]:
        return (
            self.stream,
            self.kind,
            self.schema,
            self.actor,
            self.payload,
            self.causation_id,
            self.correlation_id,
        )


@dataclass
class Request:
    """One caller's append: its events, its expectations, and (once committed) its result."""

    events: list[Prepared]
    expect: dict[str, Expectation]
    positions: list[int] | None = None
    error: BaseException | None = None
    done: bool = False
    #: Set when the request is decided, or when its caller is handed the leadership.
    #: Created only for a caller that waits (a leader never does).
    wake: threading.Event | None = field(default=None, repr=False)
    lead: bool = False


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_good_names: set[str] = set()  # streams and actors repeat: check each once


def _name(value: object, field_name: str, index: int) -> str:
    if type(value) is str and value in _good_names:
        return value
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_NAME
        or value != value.strip()
        or "\x00" in value
        or not _encodable(value)
    ):
        raise EnvelopeError(
            f"event #{index}: field `{field_name}` must be a non-empty string of at most "
            f"{MAX_NAME} characters without surrounding spaces, NUL or invalid unicode, "
            f"got {value!r}",
            index=index,
            field=field_name,
        )
    if len(_good_names) > 100_000:
        _good_names.clear()
    _good_names.add(value)
    return value


def prepare(
    events: Sequence[NewEvent],
    expect: Expectation | Mapping[str, Expectation],
    registry: KindRegistry,
    max_payload_bytes: int,
) -> Request:
    """Validate a batch and its expectations; raise an EventError naming event and field."""
    if isinstance(events, NewEvent):
        events = [events]
    if not isinstance(events, Sequence) or not events:
        raise EnvelopeError("append needs a non-empty sequence of NewEvent")
    now: str | None = None
    out: list[Prepared] = []
    seen: set[str] = set()
    fresh = iter(new_ids(sum(1 for ev in events if getattr(ev, "id", 0) is None)))
    for i, ev in enumerate(events):
        if not isinstance(ev, NewEvent):
            raise EnvelopeError(
                f"event #{i}: expected a NewEvent, got {type(ev).__name__}", index=i
            )
        spec = registry.get(ev.kind) if type(ev.kind) is str else None
        if spec is None:
            raise UnknownKindError(
                f"event #{i}: kind {ev.kind!r} is not registered; register its payload Struct "
                "with KindRegistry.register()",
                index=i,
                field="kind",
            )
        event_id = next(fresh) if ev.id is None else normalize_id(ev.id, index=i)
        if event_id in seen:
            raise IdempotencyError(f"event #{i}: id {event_id} appears twice in the batch")
        seen.add(event_id)
        if ev.at is None:
            now = now or datetime.now(UTC).isoformat(timespec="microseconds")
            at = now
        else:
            at = format_at(ev.at, index=i)
        out.append(
            Prepared(
                event_id,
                _name(ev.stream, "stream", i),
                ev.kind,
                spec.schema,
                _name(ev.actor, "actor", i),
                at,
                encode_payload(spec, ev.payload, index=i, max_bytes=max_payload_bytes),
                None
                if ev.causation_id is None
                else normalize_id(ev.causation_id, field="causation_id", index=i),
                None
                if ev.correlation_id is None
                else normalize_id(ev.correlation_id, field="correlation_id", index=i),
            )
        )
    return Request(out, _expectations(expect, out))


def _check_expectation(value: object, where: str) -> Expectation:
    if isinstance(value, Expect):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise EnvelopeError(
        f"{where}: an expectation is ANY, NO_STREAM or a version >= 1, got {value!r}",
        field="expect",
    )


def _expectations(
    expect: Expectation | Mapping[str, Expectation], events: list[Prepared]
) -> dict[str, Expectation]:
    streams = list(dict.fromkeys(e.stream for e in events))
    if isinstance(expect, Mapping):
        unknown = sorted(set(expect) - set(streams))
        if unknown:
            raise EnvelopeError(
                f"expect names streams not in the batch: {', '.join(map(repr, unknown))}",
                field="expect",
            )
        return {s: _check_expectation(v, f"expect[{s!r}]") for s, v in expect.items()}
    value = _check_expectation(expect, "expect")
    if value is Expect.ANY:
        return {}
    if isinstance(value, int) and len(streams) > 1:
        raise EnvelopeError(
            f"expect={value} is ambiguous for a batch over {len(streams)} streams; "
            "pass a mapping of stream to expectation",
            field="expect",
        )
    return dict.fromkeys(streams, value)


@dataclass
class VersionCache:
    """Stream versions as of a head this process left; valid while the head is unchanged.

    With one write path per process, the head read under the write lock tells whether
    another writer appended since our last commit; if not, every cached version is exact
    and the append needs no version lookups.
    """

    head: int = -1
    versions: dict[str, int] = field(default_factory=dict)
    limit: int = 100_000

    def reset(self) -> None:
        self.head = -1
        self.versions.clear()

    def remember(self, head: int, versions: dict[str, int]) -> None:
        if len(self.versions) + len(versions) > self.limit:
            self.versions.clear()
        self.versions.update(versions)
        self.head = head


@dataclass
class GroupPlan:
    """Decide every request of a commit group inside one write transaction.

    Optimistic (``careful=False``): stream versions come from the cache and ids are not
    looked up — the unique indexes catch a stored id or a stale version, and the store then
    rolls back and plans the group again carefully, looking everything up.
    """

    tx: WriteTransaction
    requests: list[Request]
    cache: VersionCache
    careful: bool = False
    rows: list[Row] = field(default_factory=list)

    def run(self) -> None:
        """Place every request that fits; mark the others with their error."""
        ids = [e.id for r in self.requests for e in r.events]
        streams = list(dict.fromkeys(e.stream for r in self.requests for e in r.events))
        if self.careful:
            self._head, self._hash, versions, self._stored = self.tx.state(ids, streams)
            self._versions = {s: versions.get(s, 0) for s in streams}
        else:
            self._head, self._hash = self.tx.head()
            cache = self.cache
            if cache.head != self._head:
                cache.reset()
            missing = [s for s in streams if s not in cache.versions]
            found = self.tx.stream_versions(missing) if missing else {}
            self._versions = {s: found.get(s, 0) for s in missing}
            self._versions.update((s, cache.versions[s]) for s in streams if s in cache.versions)
            self._stored = {}
        self._pending: dict[str, tuple[int, tuple[object, ...]]] = {}
        for request in self.requests:
            try:
                try:
                    request.positions = self._place(request)
                except ConcurrencyError:
                    if self.careful:
                        raise
                    # A retry of stored events is no conflict: look its ids up, then decide.
                    stored = self.tx.find([e.id for e in request.events])
                    if not stored:
                        raise
                    self._stored.update(stored)
                    request.positions = self._place(request)
            except AppendError as exc:
                request.error = exc

    def remember(self) -> None:
        """Tell the cache the state this plan committed."""
        self.cache.remember(self._head, self._versions)

    def _known(self, event_id: str) -> tuple[int, tuple[object, ...]] | None:
        stored: StoredContent | None = self._stored.get(event_id)
        if stored is not None:
            return stored.position, (
                stored.stream,
                stored.kind,
                stored.schema,
                stored.actor,
                stored.payload,
                stored.causation_id,
                stored.correlation_id,
            )
        return self._pending.get(event_id)

    def _place(self, request: Request) -> list[int]:
        known = [self._known(e.id) for e in request.events]
        if any(k is not None for k in known):
            return self._retry(request, known)
        versions: dict[str, int] = {}
        for stream, expected in request.expect.items():
            actual = self._versions.get(stream, 0)
            if expected is Expect.NO_STREAM and actual != 0:
                raise ConcurrencyError(
                    f"stream {stream!r} was expected not to exist, but is at version {actual}",
                    stream=stream,
                    expected=expected,
                    actual=actual,
                )
            if isinstance(expected, int) and actual != expected:
                raise ConcurrencyError(
                    f"stream {stream!r} was expected at version {expected}, but is at {actual}",
                    stream=stream,
                    expected=expected,
                    actual=actual,
                )
        head, last = self._head, self._hash
        rows: list[Row] = []
        positions: list[int] = []
        for e in request.events:
            version = versions.get(e.stream) or self._versions.get(e.stream, 0)
            version += 1
            versions[e.stream] = version
            head += 1
            fields = (
                head, e.id, e.stream, version, e.kind, e.schema, e.actor, e.at, e.payload,
                e.causation_id, e.correlation_id,
            )  # fmt: skip
            last = chain(last, canonical(fields))
            rows.append((*fields, last))
            positions.append(head)
        # The request fits: only now does it change the group's state.
        self._head, self._hash = head, last
        self._versions.update(versions)
        for e, position in zip(request.events, positions, strict=True):
            self._pending[e.id] = (position, e.content())
        self.rows.extend(rows)
        return positions

    @staticmethod
    def _retry(request: Request, known: list[tuple[int, tuple[object, ...]] | None]) -> list[int]:
        positions: list[int] = []
        for i, (e, k) in enumerate(zip(request.events, known, strict=True)):
            if k is None:
                stored = next(x for x in known if x is not None)
                raise IdempotencyError(
                    f"event #{i} (id {e.id}) is new, but others of the batch are already stored "
                    f"(e.g. at position {stored[0]}): a retried batch must be identical"
                )
            if k[1] != e.content():
                raise IdempotencyError(
                    f"event #{i}: id {e.id} is already stored at position {k[0]} with other content"
                )
            positions.append(k[0])
        return positions
