"""Time travel: what the store knew at a past time (ADR 0019).

The tables hold what the store knows *now*. To read what it knew at a past time ``T`` (no
event whose time is after ``T``: no neuron or memory created after it, no activation, recall
or archival after it), wrap a connection in :func:`known_at`: when nothing in the tables
changed after ``T`` it is the connection itself, otherwise an in-memory replay up to ``T`` of
the projections that can be replayed.

A projection that can be replayed registers itself here (:func:`replayable`) with the
function that reads its latest change, so this module holds no SQL over another module's
tables and imports no projection: ``salience`` and ``graph`` import it, not the reverse.
Times are epoch microseconds (:func:`micros`); :func:`check_as_of` validates an ``as_of``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, NamedTuple

from engram.ledger import Event, Ledger
from engram.projections.base import Projection, Tables, kind_names
from engram.projections.errors import QueryError
from engram.projections.store import ProjectionStore

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REPLAY_BATCH = 10_000
#: The projections :func:`known_at` can replay as of a time.
REPLAYED = ("salience", "neuron_graph")
#: The latest change of a store that cannot say: every past time is then stale.
UNKNOWN = 2**63 - 1


def micros(at: datetime) -> int:
    """Return a timezone-aware datetime as integer microseconds since the Unix epoch."""
    delta = at - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def check_as_of(as_of: Any, argument: str = "as_of") -> int:
    """Return ``as_of`` as epoch microseconds, refusing naive or non-datetime values."""
    if not isinstance(as_of, datetime) or as_of.tzinfo is None or as_of.utcoffset() is None:
        raise QueryError(f"{argument} must be a timezone-aware datetime, got {as_of!r}")
    return micros(as_of)


class Replayable(NamedTuple):
    """How to replay one projection as of a time, and how to read its latest change."""

    #: Builds the projection for a decay rate (None: its default; one without ignores it).
    build: Callable[[float | None], Projection]
    #: The latest event time (epoch microseconds) its tables record a change at, 0 if none.
    latest: Callable[[sqlite3.Connection], int]
    #: Other projections whose checkpoints the latest change depends on.
    also: tuple[str, ...] = ()


_REPLAYABLE: dict[str, Replayable] = {}
_LATEST: dict[tuple[Any, ...], int] = {}


def replayable(name: str, entry: Replayable) -> None:
    """Register projection ``name`` (one of :data:`REPLAYED`) for :func:`known_at`."""
    if name not in REPLAYED:
        raise QueryError(f"projection {name!r} cannot be replayed; known: {REPLAYED}")
    _REPLAYABLE[name] = entry


def changed_after(
    conn: sqlite3.Connection, as_of: datetime, projections: Sequence[str] = REPLAYED
) -> bool:
    """Say whether the salience or graph tables hold anything an event after ``as_of`` did."""
    return latest_change(conn, projections) > check_as_of(as_of)


def latest_change(conn: sqlite3.Connection, projections: Sequence[str] = REPLAYED) -> int:
    """Return the latest event time (epoch microseconds) the tables record a change at.

    Salience rows keep the time of their last change, the graph its creation, update and
    archival times, and the lexical index a memory's archival time; 0 when there is none. A
    projection that is not in the store has nothing to be stale. The answer is cached per
    store file and live checkpoints, so a store that has not moved is read once.
    """
    mine = [n for n in REPLAYED if n in projections]
    names = mine + [a for n in mine for a in _REPLAYABLE[n].also]
    if not names:
        return 0
    key = (
        tuple(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"),
        tuple(
            conn.execute(
                "SELECT name, generation, checkpoint FROM engram_generations"
                f" WHERE state = 'live' AND name IN ({','.join('?' * len(names))})"
                " ORDER BY name",
                names,
            ).fetchall()
        ),
    )
    cached = _LATEST.get(key)
    if cached is not None:
        return cached
    live = {row[0] for row in key[1]}
    latest = max((_REPLAYABLE[n].latest(conn) for n in mine if n in live), default=0)
    if latest == UNKNOWN:
        return latest
    if len(_LATEST) >= 64:
        _LATEST.clear()
    _LATEST[key] = latest
    return latest


@contextmanager
def known_at(
    conn: sqlite3.Connection,
    ledger: Ledger,
    as_of: datetime,
    *,
    rate: float | None = None,
    projections: Sequence[str] = REPLAYED,
) -> Iterator[sqlite3.Connection]:
    """Yield a connection whose salience and graph tables hold what was known at ``as_of``.

    Known at ``T`` means: built from the events whose time is at or before ``T``. When
    nothing in the tables changed after ``T`` (:func:`changed_after`), this is ``conn``;
    otherwise the salience and graph projections the store holds are replayed from the
    ledger into a private in-memory database, at the cost of one read of their kinds: a
    read of the past, not a hot path. ``projections`` narrows both to the tables the caller
    reads (``("salience",)`` for recall). ``rate`` is salience's decay rate (its default
    when None).
    """
    check_as_of(as_of)
    unknown = sorted(set(projections) - set(REPLAYED))
    if unknown or isinstance(projections, str):
        raise QueryError(f"projections: unknown {unknown or projections!r}; known: {REPLAYED}")
    if not changed_after(conn, as_of, projections):
        yield conn
        return
    present = [
        _REPLAYABLE[name].build(rate)
        for name in REPLAYED
        if name in projections and ProjectionStore.live_generation(conn, name) is not None
    ]
    replay = sqlite3.connect(":memory:")
    try:
        _replay(replay, ledger, as_of, present)
        yield replay
    finally:
        replay.close()


def _replay(
    target: sqlite3.Connection, ledger: Ledger, as_of: datetime, projections: list[Projection]
) -> None:
    tables = [Tables(target, {t: t for t in p.tables}) for p in projections]
    for projection, db in zip(projections, tables, strict=True):
        projection.create(db)
    target.execute(
        "CREATE TABLE engram_generations (name TEXT, generation INTEGER, state TEXT,"
        " checkpoint INTEGER)"
    )
    kinds = sorted({k for p in projections for k in kind_names(p)})
    last = 0
    batch: list[Event] = []
    for event in ledger.read(kinds=kinds) if kinds else ():
        last = event.position
        if event.at <= as_of:
            batch.append(event)
        if len(batch) >= _REPLAY_BATCH:
            _apply(projections, tables, batch)
            batch = []
    _apply(projections, tables, batch)
    target.executemany(
        "INSERT INTO engram_generations VALUES (?, 0, 'live', ?)",
        [(p.name, last) for p in projections],
    )


def _apply(projections: list[Projection], tables: list[Tables], events: list[Event]) -> None:
    for projection, db in zip(projections, tables, strict=True):
        mine = [e for e in events if e.kind in projection.kinds]
        if mine:
            projection.apply(db, mine)
