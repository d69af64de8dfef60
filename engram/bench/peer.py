"""The peer library: eventsourcing 9.5 on SQLite, through its event store or its recorder.

Appends are compared through eventsourcing's own persistence path, ``EventStore.put``: its
mapper turns each domain event into a StoredEvent (JSON transcoding of the event's state)
and its recorder inserts the batch in one transaction — the counterpart of engram's
``Ledger.append``, which also encodes every payload. The domain events themselves (with
their originator versions and timestamps) are built before timing, as engram's NewEvents
are. :meth:`Peer.insert` drives the recorder alone with StoredEvents encoded beforehand; it
fills the replay copy and gives the recorder-only figure.

eventsourcing sets ``journal_mode=WAL`` and no ``synchronous`` pragma, so it runs at
SQLite's compiled default; :class:`Peer` reports the value its connections use and raises
it to FULL when the default is weaker, so both sides are durable.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from engram.ledger import NewEvent
from engram.ledger.catalog import KINDS

_SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
_NAMESPACE = uuid.UUID("6f1c5a8e-0a7b-4c55-9d7e-3f0d5b1e2a44")
_encode = msgspec.json.Encoder(order="sorted").encode


def available() -> str | None:
    """Return why the peer cannot run, or None when it can."""
    try:
        import eventsourcing.sqlite  # noqa: F401
    except ImportError as exc:
        return f"eventsourcing is not installed ({exc}); pip install 'engram[bench]'"
    return None


def version() -> str:
    """Return the installed eventsourcing version."""
    from importlib.metadata import version as dist_version

    return dist_version("eventsourcing")


class Peer:
    """An eventsourcing application recorder on one SQLite file."""

    def __init__(self, path: str) -> None:
        from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore

        self.datastore = SQLiteDatastore(path)
        pool: Any = self.datastore.pool
        create: Callable[[], Any] = pool._create_connection
        self.default_synchronous = -1

        def create_durable() -> Any:
            conn = create()
            raw = conn._sqlite_conn
            level = int(raw.execute("PRAGMA synchronous").fetchone()[0])
            if self.default_synchronous < 0:
                self.default_synchronous = level
            if level < 2:
                raw.execute("PRAGMA synchronous = FULL")
            return conn

        pool._create_connection = create_durable
        self._decoders = {kind: msgspec.json.Decoder(t) for kind, t in KINDS.items()}
        self.recorder = SQLiteApplicationRecorder(self.datastore)
        self.recorder.create_table()
        self.store = _event_store(self.recorder)

    def synchronous(self) -> str:
        """Describe the durability the peer ran with."""
        name = _SYNC_NAMES.get(self.default_synchronous, str(self.default_synchronous))
        forced = "" if self.default_synchronous >= 2 else ", raised to FULL by the bench"
        return f"WAL, synchronous={name} (SQLite default; eventsourcing sets none){forced}"

    def put(self, domain_events: Sequence[Any]) -> None:
        """Store one batch of domain events in one transaction, as an application does."""
        self.store.put(domain_events)

    def insert(self, stored: Sequence[Any]) -> None:
        """Insert one batch of already encoded StoredEvents in one transaction."""
        self.recorder.insert_events(stored)

    def replay(self, start: int = 1, count: int | None = None, page: int = 2000) -> int:
        """Read ``count`` notifications from ``start`` (all when None), decoding each state.

        Each state is decoded into its kind's payload Struct, as engram decodes payloads.
        """
        decoders = self._decoders
        select = self.recorder.select_notifications
        done = 0
        while count is None or done < count:
            limit = page if count is None else min(page, count - done)
            notes = select(start, limit)
            for n in notes:
                decoders[n.topic].decode(n.state)
            done += len(notes)
            if len(notes) < limit:
                break
            start = notes[-1].id + 1
        return done

    def close(self) -> None:
        """Close the datastore's connections."""
        self.datastore.close()


def stored_events(events: Sequence[NewEvent], versions: dict[str, int] | None = None) -> list[Any]:
    """Return the events as eventsourcing StoredEvents: stream -> originator, kind -> topic.

    ``versions`` carries each stream's last version across calls that continue a sequence.
    """
    from eventsourcing.persistence import StoredEvent

    versions = {} if versions is None else versions
    ids: dict[str, uuid.UUID] = {}
    out: list[Any] = []
    for e in events:
        version = versions[e.stream] = versions.get(e.stream, 0) + 1
        originator = ids.get(e.stream) or ids.setdefault(e.stream, uuid.uuid5(_NAMESPACE, e.stream))
        out.append(StoredEvent(originator, version, e.kind, _encode(e.payload)))
    return out


def _event_store(recorder: Any) -> Any:
    # What an eventsourcing Application builds by default: a JSON transcoder with the
    # standard transcodings, no compression, no cipher.
    from eventsourcing.persistence import (
        DatetimeAsISO,
        DecimalAsStr,
        EventStore,
        JSONTranscoder,
        Mapper,
        UUIDAsHex,
    )

    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO(), DecimalAsStr()):
        transcoder.register(transcoding)
    return EventStore(Mapper(transcoder=transcoder), recorder)


_event_classes: dict[str, Any] = {}


def _event_class(kind: str) -> Any:
    """Return the eventsourcing DomainEvent class of ``kind``: the payload's fields."""
    cls = _event_classes.get(kind)
    if cls is None:
        from eventsourcing.domain import DomainEvent, MetaDomainEvent

        name = "".join(part.capitalize() for part in kind.replace("_", ".").split("."))
        fields = {f.name: Any for f in msgspec.structs.fields(KINDS[kind])}
        namespace = {"__annotations__": fields, "__module__": __name__, "__qualname__": name}
        cls = MetaDomainEvent(name, (DomainEvent,), namespace)
        setattr(sys.modules[__name__], name, cls)  # so that its topic resolves
        _event_classes[kind] = cls
    return cls


def domain_events(events: Sequence[NewEvent]) -> list[Any]:
    """Return the events as eventsourcing domain events: stream -> originator, kind -> class.

    Each payload's fields become the event's attributes (nested Structs as dicts, datetimes
    kept, so the transcoder encodes them as eventsourcing does); versions count per stream.
    """
    versions: dict[str, int] = {}
    ids: dict[str, uuid.UUID] = {}
    now = datetime.now(UTC)
    out: list[Any] = []
    for e in events:
        version = versions[e.stream] = versions.get(e.stream, 0) + 1
        originator = ids.get(e.stream) or ids.setdefault(e.stream, uuid.uuid5(_NAMESPACE, e.stream))
        state = msgspec.to_builtins(e.payload, builtin_types=(datetime,))
        out.append(
            _event_class(e.kind)(
                originator_id=originator, originator_version=version, timestamp=now, **state
            )
        )
    return out
