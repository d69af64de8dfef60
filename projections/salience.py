"""The salience index: one salience model for every item that can be remembered.

Each item (a neuron now; memories here too; scars and reflections later) has a stored uint16
salience, the time it was last updated, an importance, a last-recalled time and a recall
count. Salience decays lazily (ADR 0012)::

    salience(as_of) = floor(stored * rate ** hours(as_of - updated))      rate = 0.99

evaluated when read and never written back by a read. Stored values change only when an
event arrives, computed from the event's time: the decayed value at that time, then

- ``neuron.created``: an item at ``INITIAL`` (half scale);
- ``neuron.activated``: reinforcement closes ``ACTIVATION_GAIN * min(strength, 1)`` of the gap
  to 65535, so salience never leaves uint16 and saturates instead of wrapping;
- ``memory.observed``: an item at ``importance / 10`` of full scale (``INITIAL`` without one);
- ``memory.recalled``: each served memory gets a recall (count, time) and a reinforcement of
  ``RECALL_GAIN``;
- ``neuron.archived``: the item is marked archived and leaves every query;
- ``memory.archived``: each named memory is marked archived the same way (a position that
  holds no memory, or an archived one, is ignored).

Events about unknown items are ignored (the graph records them as anomalies). An event whose
time is before the item's last update counts as happening at that update (no negative decay).

Each row also keeps ``rank = ln(stored) - hours(updated) * ln(rate)``: since
``stored * rate ** (T - u)`` orders like ``rank`` for any fixed ``T``, one index answers
"top-K as of T" for every T.

The read functions below take a connection from :meth:`ProjectionEngine.read` (a consistent
snapshot) and write nothing; salience is evaluated ``as_of`` a timezone-aware time. With
``ledger``, they read what was known at ``as_of`` (:func:`~engram.projections.timetravel.known_at`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from engram.ledger import Event, Ledger, chunked
from engram.ledger.catalog import (
    MemoryArchived,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
)
from engram.projections import lexical
from engram.projections.base import Projection, Tables
from engram.projections.counts import check_count
from engram.projections.errors import ProjectionConfigError, QueryError
from engram.projections.renamed import renamed_keyword
from engram.projections.store import ProjectionStore
from engram.projections.timetravel import UNKNOWN, Replayable, check_as_of, known_at, replayable

# Re-exported: the modules that date their rows read it here since before time travel had one.
from engram.projections.timetravel import micros as micros

MAX = 65535
INITIAL = 32768
ACTIVATION_GAIN = 0.25
RECALL_GAIN = 0.125
DEFAULT_RATE = 0.99
_US_PER_HOUR = 3_600_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_RANK = -1e300  # rank of a zero salience: below every positive one

_NEURON_KINDS = frozenset(t.__kind__ for t in (NeuronCreated, NeuronActivated, NeuronArchived))

# Columns of the in-memory rows used while a batch is applied.
_POS, _SAL, _UPD, _IMP, _RECALLED, _COUNT, _ARCH = range(7)


def decayed(stored: int, updated_us: int, as_of_us: int, rate: float = DEFAULT_RATE) -> int:
    """Return the salience of an item stored at ``updated_us``, evaluated at ``as_of_us``."""
    if as_of_us <= updated_us or stored == 0:
        return stored
    factor: float = rate ** ((as_of_us - updated_us) / _US_PER_HOUR)
    return math.floor(stored * factor)


def reinforced(current: int, strength: float, gain: float) -> int:
    """Return ``current`` moved toward 65535 by ``gain * min(strength, 1)`` of the gap."""
    step = math.floor((MAX - current) * min(max(strength, 0.0), 1.0) * gain)
    return min(MAX, current + step)


def rank(stored: int, updated_us: int, rate: float = DEFAULT_RATE) -> float:
    """Return the as-of-independent ordering key of an item (see the module docstring)."""
    if stored <= 0:
        return _NO_RANK
    return math.log(stored) - (updated_us / _US_PER_HOUR) * math.log(rate)


class SalienceIndex(Projection):
    """Stored salience, importance and recall history of every rememberable item."""

    name = "salience"
    version = 2
    kinds = (
        NeuronCreated,
        NeuronActivated,
        NeuronArchived,
        MemoryObserved,
        MemoryRecalled,
        MemoryArchived,
    )
    tables = ("salience",)

    def __init__(self, rate: float = DEFAULT_RATE) -> None:
        if not isinstance(rate, float | int) or not 0.0 < rate <= 1.0:
            raise ProjectionConfigError(f"decay rate must be in (0, 1], got {rate!r}")
        self.rate = float(rate)

    def config(self) -> str:
        """The decay rate shapes stored values and ranks, so it is part of the identity."""
        return f"rate={self.rate!r}"

    def create(self, db: Tables) -> None:
        """Create the salience table and its indexes."""
        table = db["salience"]
        db.conn.execute(
            f"""CREATE TABLE {table} (
                item_kind     TEXT NOT NULL,
                item_id       TEXT NOT NULL,
                position      INTEGER NOT NULL,
                salience      INTEGER NOT NULL CHECK (salience BETWEEN 0 AND 65535),
                updated_us    INTEGER NOT NULL,
                rank          REAL NOT NULL,
                importance    INTEGER,
                last_recalled_us INTEGER,
                recall_count  INTEGER NOT NULL DEFAULT 0,
                archived      INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (item_kind, item_id)
            ) WITHOUT ROWID"""
        )
        name = table.strip('"')
        db.conn.execute(f'CREATE INDEX "{name}_rank" ON {table} (item_kind, archived, rank)')
        db.conn.execute(f'CREATE INDEX "{name}_position" ON {table} (position)')

    def apply(self, db: Tables, events: Sequence[Event]) -> None:
        """Apply a batch: load the items it touches, update them in memory, write back."""
        table = db["salience"]
        conn = db.conn
        rows: dict[tuple[str, str], list[Any] | None] = {}
        by_position: dict[int, tuple[str, str]] = {}
        neuron_ids = {e.payload.id for e in events if e.kind in _NEURON_KINDS}
        named: set[int] = set()  # memories that recalls and archives name
        for e in events:
            if e.kind == "memory.recalled":
                named.update(item.position for item in e.payload.items)
            elif e.kind == "memory.archived":
                named.update(e.payload.positions)
        self._load(conn, table, "neuron", sorted(neuron_ids), "item_id", rows, by_position)
        self._load(conn, table, "memory", sorted(named), "position", rows, by_position)
        new: set[tuple[str, str]] = set()
        dirty: set[tuple[str, str]] = set()
        rate = self.rate
        # Neuron rows by id (the same lists as in ``rows``), for the hot path: activations.
        neurons = {key[1]: row for key, row in rows.items() if key[0] == "neuron"}
        activated: set[str] = set()
        floor = math.floor
        touch = activated.add
        get = neurons.get
        for e in events:
            kind, p = e.kind, e.payload
            if kind == "neuron.activated":
                row = get(p.id)
                if row is None or row[_ARCH]:
                    continue
                # micros(), decayed() and reinforced() inlined: the same arithmetic in the same
                # order, so the same values to the last bit.
                delta = e.at - _EPOCH
                at = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
                updated = row[_UPD]
                current = row[_SAL]
                if at > updated:
                    if current != 0:
                        current = floor(current * rate ** ((at - updated) / _US_PER_HOUR))
                else:
                    at = updated
                strength = p.strength
                if strength > 1.0:
                    strength = 1.0
                elif not strength >= 0.0:  # min(max(strength, 0.0), 1.0), NaN included
                    strength = min(max(strength, 0.0), 1.0)
                current += floor((MAX - current) * strength * ACTIVATION_GAIN)
                row[_SAL] = current if current < MAX else MAX
                row[_UPD] = at
                touch(p.id)
                continue
            at = micros(e.at)
            if kind == "memory.recalled":
                for item in p.items:
                    mkey = by_position.get(item.position)
                    if mkey is None:
                        continue
                    row = rows.get(mkey)
                    if row is None or row[_ARCH]:
                        continue
                    when = max(at, row[_UPD])
                    row[_SAL] = reinforced(
                        decayed(row[_SAL], row[_UPD], when, rate), 1.0, RECALL_GAIN
                    )
                    row[_UPD] = when
                    row[_RECALLED] = when
                    row[_COUNT] += 1
                    dirty.add(mkey)
            elif kind == "neuron.created":
                key = ("neuron", p.id)
                if rows.get(key) is None:
                    rows[key] = neurons[p.id] = [e.position, INITIAL, at, None, None, 0, 0]
                    new.add(key)
            elif kind == "memory.observed":
                key = ("memory", e.id)
                importance = p.importance
                start = INITIAL if importance is None else MAX * importance // 10
                rows[key] = [e.position, start, at, importance, None, 0, 0]
                by_position[e.position] = key
                new.add(key)
            elif kind == "memory.archived":
                for position in p.positions:
                    mkey = by_position.get(position)
                    row = None if mkey is None else rows.get(mkey)
                    if mkey is not None and row is not None and not row[_ARCH]:
                        row[_ARCH] = 1
                        dirty.add(mkey)
            else:  # neuron.archived
                key = ("neuron", p.id)
                row = rows.get(key)
                if row is not None and not row[_ARCH]:
                    row[_ARCH] = 1
                    dirty.add(key)
        dirty.update(("neuron", neuron) for neuron in activated)
        conn.executemany(
            f"INSERT INTO {table} (position, salience, updated_us, importance, last_recalled_us,"
            " recall_count, archived, rank, item_kind, item_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (*row, rank(row[_SAL], row[_UPD], rate), *key)
                for key in sorted(new)
                if (row := rows[key]) is not None
            ],
        )
        conn.executemany(
            f"UPDATE {table} SET salience = ?, updated_us = ?, last_recalled_us = ?,"
            " recall_count = ?, archived = ?, rank = ? WHERE item_kind = ? AND item_id = ?",
            [
                (
                    row[_SAL],
                    row[_UPD],
                    row[_RECALLED],
                    row[_COUNT],
                    row[_ARCH],
                    rank(row[_SAL], row[_UPD], rate),
                    *key,
                )
                for key in sorted(dirty - new)
                if (row := rows[key]) is not None
            ],
        )

    @staticmethod
    def _load(
        conn: Any,
        table: str,
        item_kind: str,
        wanted: list[Any],
        column: str,
        rows: dict[tuple[str, str], list[Any] | None],
        by_position: dict[int, tuple[str, str]],
    ) -> None:
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for item_id, *row in conn.execute(
                f"SELECT item_id, position, salience, updated_us, importance, last_recalled_us,"
                f" recall_count, archived FROM {table}"
                f" WHERE item_kind = ? AND {column} IN ({marks})",
                [item_kind, *chunk],
            ):
                key = (item_kind, item_id)
                rows[key] = row
                if item_kind == "memory":  # recalls name memories only
                    by_position[row[_POS]] = key


def live_count(conn: sqlite3.Connection, kind: str) -> int:
    """Return how many items of ``kind`` (``memory``, ``neuron``, ...) are not archived."""
    row = conn.execute(
        "SELECT count(*) FROM salience WHERE item_kind = ? AND NOT archived", (kind,)
    ).fetchone()
    return int(row[0])


# -- reads ----------------------------------------------------------------------------------

ITEM_KINDS = ("neuron", "memory")


class Item(NamedTuple):
    """A rememberable item and its salience evaluated at a time."""

    kind: str
    id: str
    salience: int
    stored: int
    updated_us: int
    importance: int | None
    last_recalled_us: int | None
    recall_count: int
    position: int


_READ_COLUMNS = (
    "item_kind, item_id, salience, updated_us, importance, last_recalled_us, recall_count, position"
)


def _item_kinds(items: Sequence[str] | None) -> list[str]:
    if items is None:
        return list(ITEM_KINDS)
    if isinstance(items, str):
        items = [items]
    unknown = [k for k in items if k not in ITEM_KINDS]
    if unknown:
        raise QueryError(f"items: unknown item kind(s) {unknown} (known: {list(ITEM_KINDS)})")
    return list(dict.fromkeys(items))


def _item(row: Sequence[Any], as_of_us: int, rate: float) -> Item:
    kind, id_, stored, updated, importance, recalled, count, position = row
    return Item(
        kind,
        id_,
        decayed(stored, updated, as_of_us, rate),
        stored,
        updated,
        importance,
        recalled,
        count,
        position,
    )


def salience_of(
    conn: sqlite3.Connection,
    kind: str,
    item_id: str,
    as_of: datetime,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> Item | None:
    """Return one item with its salience as of a time (None if unknown or archived).

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return salience_of(known, kind, item_id, as_of, rate=rate)

    at = check_as_of(as_of)
    _item_kinds([kind])
    row = conn.execute(
        f"SELECT {_READ_COLUMNS} FROM salience"
        " WHERE item_kind = ? AND item_id = ? AND archived = 0",
        (kind, item_id),
    ).fetchone()
    return None if row is None else _item(row, at, rate)


@renamed_keyword("kinds", "items")
def top(
    conn: sqlite3.Connection,
    as_of: datetime,
    k: int = 10,
    items: Sequence[str] | None = None,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> list[Item]:
    """Return the ``k`` most salient live items (``neuron``, ``memory``) as of a time.

    Ties are broken by kind and id, so the answer is deterministic.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return top(known, as_of, k, items, rate=rate)

    at = check_as_of(as_of)
    check_count(k, "k")
    candidates: list[Item] = []
    for kind in _item_kinds(items):
        # Items updated after as_of do not decay back in time; take them all (rare).
        rows = conn.execute(
            f"SELECT {_READ_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
            " AND updated_us > ?",
            (kind, at),
        ).fetchall()
        head = conn.execute(
            f"SELECT {_READ_COLUMNS}, rank FROM salience WHERE item_kind = ? AND archived = 0"
            " AND updated_us <= ? ORDER BY rank DESC LIMIT ?",
            (kind, at, k),
        ).fetchall()
        if head:
            # Everything whose floor could tie with the k-th item is fetched too.
            kth = _item(head[-1][:-1], at, rate).salience
            floor_rank = _threshold_rank(kth, at, rate)
            rows += conn.execute(
                f"SELECT {_READ_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
                " AND updated_us <= ? AND rank >= ?",
                (kind, at, floor_rank),
            ).fetchall()
        candidates += (_item(r, at, rate) for r in rows)
    candidates.sort(key=lambda i: (-i.salience, i.kind, i.id))
    return candidates[:k]


@renamed_keyword("kinds", "items")
def above(
    conn: sqlite3.Connection,
    threshold: int,
    as_of: datetime,
    items: Sequence[str] | None = None,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> list[Item]:
    """Return live items whose salience as of a time is above ``threshold``, most first.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return above(known, threshold, as_of, items, rate=rate)

    at = check_as_of(as_of)
    if not isinstance(threshold, int) or isinstance(threshold, bool) or not 0 <= threshold <= MAX:
        raise QueryError(f"threshold must be an int in 0..65535, got {threshold!r}")
    found: list[Item] = []
    bound = _threshold_rank(threshold + 1, at, rate) if threshold < MAX else math.inf
    for kind in _item_kinds(items):
        rows = conn.execute(
            f"SELECT {_READ_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
            " AND (updated_us > ? OR rank >= ?)",
            (kind, at, bound),
        ).fetchall()
        found += (i for r in rows if (i := _item(r, at, rate)).salience > threshold)
    found.sort(key=lambda i: (-i.salience, i.kind, i.id))
    return found


def _threshold_rank(value: int, as_of_us: int, rate: float) -> float:
    """The rank at or above which an item's decayed value may reach ``value`` at as_of."""
    if value <= 0:
        return -math.inf
    # stored * rate**((T-u)/H) >= value  <=>  rank >= ln(value) - (T/H) * ln(rate)
    return math.log(value) - (as_of_us / _US_PER_HOUR) * math.log(rate) - 1e-9


def neuron_saliences(conn: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    """Return each live neuron's stored salience and last update (epoch microseconds)."""
    return {
        item_id: (stored, updated)
        for item_id, stored, updated in conn.execute(
            "SELECT item_id, salience, updated_us FROM salience"
            " WHERE item_kind = 'neuron' AND archived = 0"
        )
    }


class MemoryFacts(NamedTuple):
    """What the salience index holds about one memory (by its ``memory.observed`` position)."""

    position: int
    updated_us: int
    importance: int | None
    archived: bool


def memory_facts(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, MemoryFacts]:
    """Return the salience facts of the memories at ``positions`` (archived ones included)."""
    found: dict[int, MemoryFacts] = {}
    for chunk in chunked(sorted(set(positions))):
        for position, updated, importance, archived in conn.execute(
            # "+item_kind": by the position index; the primary key scans every memory.
            "SELECT position, updated_us, importance, archived FROM salience WHERE +item_kind ="
            f" 'memory' AND position IN ({','.join('?' * len(chunk))})",
            list(chunk),
        ):
            found[position] = MemoryFacts(position, updated, importance, bool(archived))
    return found


def recall_counts(conn: sqlite3.Connection, positions: Sequence[int]) -> dict[int, int]:
    """Return how many times each memory (by its ``memory.observed`` position) was recalled."""
    found: dict[int, int] = {}
    for chunk in chunked(sorted(set(positions))):
        for position, count in conn.execute(
            "SELECT position, recall_count FROM salience WHERE +item_kind = 'memory'"
            f" AND position IN ({','.join('?' * len(chunk))})",
            list(chunk),
        ):
            found[int(position)] = int(count)
    return found


def unrecalled_memories(conn: sqlite3.Connection, observed_before_us: int) -> list[int]:
    """Return the positions of live memories never recalled and last changed before a time.

    A memory never recalled was last changed when it was observed, so this is its age.
    """
    rows = conn.execute(
        "SELECT position FROM salience WHERE item_kind = 'memory' AND archived = 0"
        " AND recall_count = 0 AND updated_us < ? ORDER BY position",
        (observed_before_us,),
    ).fetchall()
    return [int(p) for (p,) in rows]


def _latest_change(conn: sqlite3.Connection) -> int:
    # A memory's archival time is the lexical index's; it matters to salience reads only.
    (value,) = conn.execute("SELECT max(updated_us) FROM salience").fetchone()
    latest = int(value or 0)
    if ProjectionStore.live_generation(conn, "lexical") is not None:
        try:
            latest = max(latest, lexical.latest_archival(conn))
        except sqlite3.Error:  # unreadable: archival times unknown, so assume the latest
            return UNKNOWN
    return latest


replayable(
    "salience",
    Replayable(
        lambda rate: SalienceIndex(DEFAULT_RATE if rate is None else rate),
        _latest_change,
        also=("lexical",),
    ),
)
