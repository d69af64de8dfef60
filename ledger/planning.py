"""Append planning: validate a batch, then assign positions, versions and hashes.

:func:`prepare` runs in the caller's thread and needs no database. :class:`GroupPlan` runs
inside the exclusive write transaction: it checks every request of a commit group against the
stored state and the requests before it, so a conflict fails only its own request and
nothing is inserted before every request has been decided.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from engram.ledger.backend import Row, StoredContent, WriteTransaction
from engram.ledger.codec import (
    encode_canonical,
    encode_header,
    encode_payload,
    format_at,
    naive,
    refuse_sealed_lookalike,
    seal_payload,
    utc_now_text,
)
from engram.ledger.errors import (
    AppendError,
    ConcurrencyError,
    EnvelopeError,
    IdempotencyError,
    UnknownKindError,
)
from engram.ledger.events import Expect, Expectation, NewEvent
from engram.ledger.ids import new_ids, normalize_id
from engram.ledger.json_values import short
from engram.ledger.kinds import KindRegistry, KindSpec
from engram.ledger.shred import DEFAULT_PERSONAL, Sealer

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


@dataclass(slots=True)
class Request:
    """One caller's append: its events, its expectations, and (once committed) its result."""

    events: list[Prepared]
    expect: dict[str, Expectation]
    positions: list[int] | None = None
    error: BaseException | None = None
    done: bool = False
    #: A lock taken on creation and released when the request is decided, or when its
    #: caller is handed the leadership; the caller sleeps acquiring it. Created only for a
    #: caller that waits (a leader never does).
    wake: threading.Lock | None = field(default=None, repr=False)
    lead: bool = False


class _Known(NamedTuple):
    """Where an id is already placed, and the content it was placed with."""

    position: int
    content: tuple[object, ...]


class _Placed(NamedTuple):
    """An event an earlier request of the group placed (its content is built on demand)."""

    position: int
    event: Prepared


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_good_names: set[str] = set()  # streams and actors repeat: check each once
_new_tuple = tuple.__new__  # builds a Prepared without the Python-level NamedTuple.__new__


#: What no stream, kind or actor holds: a control character (a terminal runs an escape in
#: a listing, no one types it) or one reordering the text around it (ADR 0175).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069]")


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
        or _CONTROLS.search(value) is not None
    ):
        raise EnvelopeError(
            f"event #{index}: field `{field_name}` must be a non-empty string of at most "
            f"{MAX_NAME} characters without surrounding spaces, control characters or invalid"
            f" unicode, got {short(value)}"
            + (f" ({len(value):,} characters)" if isinstance(value, str) else ""),
            index=index,
            field=field_name,
        )
    if len(_good_names) > 100_000:
        _good_names.clear()
    _good_names.add(value)
    return value


def prepare(
    events: Sequence[NewEvent] | NewEvent,
    expect: Expectation | Mapping[str, Expectation],
    registry: KindRegistry,
    max_payload_bytes: int,
    sealer: Sealer | None = None,
) -> Request:
    """Validate a batch and its expectations; raise an EventError naming event and field.

    With a ``sealer``, the personal fields of its kinds are sealed once the payload is
    validated as given (ADR 0039).
    """
    if isinstance(events, NewEvent):
        events = (events,)
    elif type(events) is not list and not isinstance(events, Sequence):
        raise EnvelopeError("append needs a non-empty sequence of NewEvent")
    if not events:
        raise EnvelopeError("append needs a non-empty sequence of NewEvent")
    now: str | None = None
    out: list[Prepared] = []
    add = out.append
    seen: set[str] = set()
    good = _good_names
    specs: dict[str, KindSpec] = {}
    fresh: Iterator[str] | None = None  # ids for the events without one, made on first need
    encode = encode_canonical
    personal = sealer.personal if sealer is not None else {}
    for i, ev in enumerate(events):
        if type(ev) is not NewEvent and not isinstance(ev, NewEvent):
            raise EnvelopeError(
                f"event #{i}: expected a NewEvent, got {type(ev).__name__}", index=i
            )
        kind = ev.kind
        spec = specs.get(kind) if type(kind) is str else None
        if spec is None:
            spec = registry.get(kind) if type(kind) is str else None
            if spec is None:
                raise UnknownKindError(
                    f"event #{i}: kind {kind!r} is not registered; register its payload "
                    "Struct with KindRegistry.register()",
                    index=i,
                    field="kind",
                )
            specs[kind] = spec
        event_id = ev.id
        if event_id is None:
            if fresh is None:  # one clock read and one lock for the rest of the batch
                fresh = iter(new_ids(len(events) - i))
            event_id = next(fresh)
        else:
            event_id = normalize_id(event_id, index=i)
        if event_id in seen:
            raise IdempotencyError(f"event #{i}: id {event_id} appears twice in the batch")
        seen.add(event_id)
        if ev.at is None:
            at = now = now or utc_now_text()
        else:
            at = format_at(ev.at, index=i)
        stream, actor = ev.stream, ev.actor
        if type(stream) is not str or stream not in good:
            stream = _name(stream, "stream", i)
        if type(actor) is not str or actor not in good:
            actor = _name(actor, "actor", i)
        value = ev.payload
        # encode_payload's common case inline (a payload of the kind's own type that reads
        # back as itself, no datetime field of it naive); anything else takes
        # encode_payload, which explains a refusal.
        data = None
        if type(value) is spec.type and not (spec.times and naive(value, spec.times)):
            try:
                data = encode(value)
                decoded = spec.decoder.decode(data)  # the validation: types, constraints
                if (spec.compare and decoded != value) or len(data) > max_payload_bytes:
                    data = None
            except Exception:
                data = None
        if data is None:
            data = encode_payload(spec, value, index=i, max_bytes=max_payload_bytes)
        if kind in personal:
            assert sealer is not None
            data = seal_payload(sealer, spec, value, data, event_id, actor, i, max_payload_bytes)
        elif kind in DEFAULT_PERSONAL:  # unsealed now; a key store may be added later
            refuse_sealed_lookalike(spec, value, DEFAULT_PERSONAL[kind], i)
        causation, correlation = ev.causation_id, ev.correlation_id
        if causation is not None:
            causation = normalize_id(causation, field="causation_id", index=i)
        if correlation is not None:
            correlation = normalize_id(correlation, field="correlation_id", index=i)
        add(
            _new_tuple(
                Prepared,
                (event_id, stream, kind, spec.schema, actor, at, data, causation, correlation),
            )
        )
    return Request(out, {} if expect is Expect.ANY else _expectations(expect, out))


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
    and the append needs no version lookups. ``complete`` says the cache holds every stream
    of the ledger (it was started on an empty ledger and never trimmed): then a stream
    missing from it does not exist, and needs no lookup either.
    """

    head: int = -1
    versions: dict[str, int] = field(default_factory=dict)
    limit: int = 100_000
    complete: bool = False

    def reset(self, head: int = -1) -> None:
        """Forget every version; ``head`` is the head the cache now starts from (-1: none)."""
        self.head = head
        self.versions.clear()
        self.complete = head == 0

    def remember(self, head: int, versions: dict[str, int]) -> None:
        if len(self.versions) + len(versions) > self.limit:
            self.versions.clear()
            self.complete = False
        self.versions.update(versions)
        self.head = head


class GroupPlan:
    """Decide every request of a commit group inside one write transaction.

    Optimistic (``careful=False``): stream versions come from the cache and ids are not
    looked up — the unique indexes catch a stored id or a stale version, and the store then
    rolls back and plans the group again carefully, looking everything up.
    """

    __slots__ = (
        "_hash",
        "_head",
        "_pending",
        "_stored",
        "_versions",
        "cache",
        "careful",
        "requests",
        "rows",
        "tx",
    )

    def __init__(
        self,
        tx: WriteTransaction,
        requests: list[Request],
        cache: VersionCache,
        careful: bool = False,
    ) -> None:
        self.tx = tx
        self.requests = requests
        self.cache = cache
        self.careful = careful
        self.rows: list[Row] = []
        self._stored: dict[str, StoredContent] = {}
        #: Events placed by earlier requests of this group, by id.
        self._pending: dict[str, _Placed] = {}

    def run(self) -> None:
        """Place every request that fits; mark the others with their error."""
        requests = self.requests
        if len(requests) == 1 and len(requests[0].events) == 1:
            streams = [requests[0].events[0].stream]
        else:
            streams = list(dict.fromkeys(e.stream for r in requests for e in r.events))
        if self.careful:
            ids = [e.id for r in requests for e in r.events]
            self._head, self._hash, versions, self._stored = self.tx.state(ids, streams)
            self._versions = {s: versions.get(s, 0) for s in streams}
        else:
            self._head, self._hash = self.tx.head()
            self._versions = self._cached_versions(streams)
        last = requests[-1]
        for request in requests:
            try:
                try:
                    request.positions = self._place(request)
                    if request is not last:  # later requests may retry these ids
                        for e, position in zip(request.events, request.positions, strict=True):
                            self._pending[e.id] = _Placed(position, e)
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

    def _cached_versions(self, streams: list[str]) -> dict[str, int]:
        cache = self.cache
        if cache.head != self._head:
            cache.reset(self._head)
        cached = cache.versions
        versions: dict[str, int] = {}
        missing: list[str] = []
        for stream in streams:
            version = cached.get(stream)
            if version is None:
                missing.append(stream)
            else:
                versions[stream] = version
        if missing:
            found = {} if cache.complete else self.tx.stream_versions(missing)
            for stream in missing:
                versions[stream] = found.get(stream, 0)
        return versions

    def remember(self) -> None:
        """Tell the cache the state this plan committed."""
        self.cache.remember(self._head, self._versions)

    def _known(self, event_id: str) -> _Known | None:
        stored: StoredContent | None = self._stored.get(event_id)
        if stored is not None:
            return _Known(
                stored.position,
                (
                    stored.stream,
                    stored.kind,
                    stored.schema,
                    stored.actor,
                    stored.payload,
                    stored.causation_id,
                    stored.correlation_id,
                ),
            )
        placed = self._pending.get(event_id)
        return None if placed is None else _Known(placed.position, placed.event.content())

    def _place(self, request: Request) -> list[int]:
        events = request.events
        if self._stored or self._pending:
            known = [self._known(e.id) for e in events]
            if any(k is not None for k in known):
                return self._retry(request, known)
        group_versions = self._versions
        for stream, expected in request.expect.items():
            actual = group_versions.get(stream, 0)
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
        # The request fits: from here on it changes the group's state.
        head, last = self._head, self._hash
        rows: list[Row] = []
        add = rows.append
        first = head + 1
        versions_get, header, sha256 = group_versions.get, encode_header, hashlib.sha256
        for event_id, stream, kind, schema, actor, at, payload, causation, correlation in events:
            version = versions_get(stream, 0) + 1
            group_versions[stream] = version
            head += 1
            # codec.link inline: hash(n) = sha256(hash(n-1) ‖ header ‖ "\n" ‖ payload)
            fields = (
                head, event_id, stream, version, kind, schema, actor, at, causation, correlation,
            )  # fmt: skip
            last = sha256(last + header(fields) + b"\n" + payload).digest()
            add(
                (head, event_id, stream, version, kind, schema, actor, at, payload, causation,
                 correlation, last)
            )  # fmt: skip
        positions = list(range(first, head + 1))
        self._head, self._hash = head, last
        if self.rows:
            self.rows.extend(rows)
        else:
            self.rows = rows
        return positions

    @staticmethod
    def _retry(request: Request, known: list[_Known | None]) -> list[int]:
        positions: list[int] = []
        for i, (e, k) in enumerate(zip(request.events, known, strict=True)):
            if k is None:
                stored = next(x for x in known if x is not None)
                raise IdempotencyError(
                    f"event #{i} (id {e.id}) is new, but others of the batch are already stored "
                    f"(e.g. at position {stored.position}): a retried batch must be identical"
                )
            if k.content != e.content():
                raise IdempotencyError(
                    f"event #{i}: id {e.id} is already stored at position {k.position} with "
                    "other content"
                )
            positions.append(k.position)
        return positions
