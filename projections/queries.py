"""Read-side queries over the live salience index and neuron graph.

Every function takes a connection from :meth:`ProjectionEngine.read` (a consistent
snapshot); nothing here writes. Salience is evaluated ``as_of`` a timezone-aware time.

The tables hold what the store knows *now*. To read what it knew at a past time ``T`` (no
event whose time is after ``T``: no neuron or memory created after it, no activation, recall
or archival after it), wrap the connection in :func:`known_at`: when nothing in the tables
changed after ``T`` it is the connection itself, otherwise an in-memory replay of the
salience and graph kinds up to ``T`` (ADR 0019).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from engram.ledger import Event, Ledger, chunked
from engram.projections import lexical
from engram.projections.base import Projection, Tables, kind_names
from engram.projections.errors import QueryError
from engram.projections.graph import NeuronGraph
from engram.projections.salience import DEFAULT_RATE, MAX, SalienceIndex, decayed, micros
from engram.projections.store import ProjectionStore

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


class Vitality(NamedTuple):
    """How alive the remembered items are at a time."""

    items: int
    alive: int
    mean_salience: float
    by_kind: dict[str, int]


_COLUMNS = (
    "item_kind, item_id, salience, updated_us, importance, last_recalled_us, recall_count, position"
)


def check_as_of(as_of: Any, argument: str = "as_of") -> int:
    """Return ``as_of`` as epoch microseconds, refusing naive or non-datetime values."""
    if not isinstance(as_of, datetime) or as_of.tzinfo is None or as_of.utcoffset() is None:
        raise QueryError(f"{argument} must be a timezone-aware datetime, got {as_of!r}")
    return micros(as_of)


def _kinds(kinds: Sequence[str] | None) -> list[str]:
    if kinds is None:
        return list(ITEM_KINDS)
    if isinstance(kinds, str):
        kinds = [kinds]
    unknown = [k for k in kinds if k not in ITEM_KINDS]
    if unknown:
        raise QueryError(f"kinds: unknown item kind(s) {unknown} (known: {list(ITEM_KINDS)})")
    return list(dict.fromkeys(kinds))


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
    _kinds([kind])
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM salience WHERE item_kind = ? AND item_id = ? AND archived = 0",
        (kind, item_id),
    ).fetchone()
    return None if row is None else _item(row, at, rate)


def top(
    conn: sqlite3.Connection,
    as_of: datetime,
    k: int = 10,
    kinds: Sequence[str] | None = None,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> list[Item]:
    """Return the ``k`` most salient live items of the given kinds as of a time.

    Ties are broken by kind and id, so the answer is deterministic.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return top(known, as_of, k, kinds, rate=rate)

    at = check_as_of(as_of)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise QueryError(f"k must be a positive int, got {k!r}")
    candidates: list[Item] = []
    for kind in _kinds(kinds):
        # Items updated after as_of do not decay back in time; take them all (rare).
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
            " AND updated_us > ?",
            (kind, at),
        ).fetchall()
        head = conn.execute(
            f"SELECT {_COLUMNS}, rank FROM salience WHERE item_kind = ? AND archived = 0"
            " AND updated_us <= ? ORDER BY rank DESC LIMIT ?",
            (kind, at, k),
        ).fetchall()
        if head:
            # Everything whose floor could tie with the k-th item is fetched too.
            kth = _item(head[-1][:-1], at, rate).salience
            floor_rank = _threshold_rank(kth, at, rate)
            rows += conn.execute(
                f"SELECT {_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
                " AND updated_us <= ? AND rank >= ?",
                (kind, at, floor_rank),
            ).fetchall()
        candidates += (_item(r, at, rate) for r in rows)
    candidates.sort(key=lambda i: (-i.salience, i.kind, i.id))
    return candidates[:k]


def above(
    conn: sqlite3.Connection,
    threshold: int,
    as_of: datetime,
    kinds: Sequence[str] | None = None,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> list[Item]:
    """Return live items whose salience as of a time is above ``threshold``, most first.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return above(known, threshold, as_of, kinds, rate=rate)

    at = check_as_of(as_of)
    if not isinstance(threshold, int) or isinstance(threshold, bool) or not 0 <= threshold <= MAX:
        raise QueryError(f"threshold must be an int in 0..65535, got {threshold!r}")
    found: list[Item] = []
    bound = _threshold_rank(threshold + 1, at, rate) if threshold < MAX else math.inf
    for kind in _kinds(kinds):
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM salience WHERE item_kind = ? AND archived = 0"
            " AND (updated_us > ? OR rank >= ?)",
            (kind, at, bound),
        ).fetchall()
        found += (i for r in rows if (i := _item(r, at, rate)).salience > threshold)
    found.sort(key=lambda i: (-i.salience, i.kind, i.id))
    return found


def vitality(
    conn: sqlite3.Connection,
    as_of: datetime,
    *,
    alive_at: int = 655,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> Vitality:
    """Count live items, those at or above ``alive_at`` (1% by default), and mean salience.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return vitality(known, as_of, alive_at=alive_at, rate=rate)

    at = check_as_of(as_of)
    total = alive = 0
    acc = 0
    by_kind: dict[str, int] = {}
    for stored, updated, kind in conn.execute(
        "SELECT salience, updated_us, item_kind FROM salience WHERE archived = 0"
    ):
        value = decayed(stored, updated, at, rate)
        total += 1
        acc += value
        if value >= alive_at:
            alive += 1
            by_kind[kind] = by_kind.get(kind, 0) + 1
    return Vitality(total, alive, acc / total if total else 0.0, by_kind)


def _threshold_rank(value: int, as_of_us: int, rate: float) -> float:
    """The rank at or above which an item's decayed value may reach ``value`` at as_of."""
    if value <= 0:
        return -math.inf
    # stored * rate**((T-u)/H) >= value  <=>  rank >= ln(value) - (T/H) * ln(rate)
    return math.log(value) - (as_of_us / 3_600_000_000) * math.log(rate) - 1e-9


EXPORT_FORMAT = "1.0"


def export_graph(
    conn: sqlite3.Connection,
    as_of: datetime,
    *,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> dict[str, Any]:
    """Return the live graph in the agents' readable JSON shape, salience as of a time.

    ``{"neurons": [{id, concept, type, salience, last_salience_update, connections:
    [{target, weight, type}]}], "metadata": {version, last_modified, active_agents,
    ledger_position, as_of}}``; archived neurons and their connections are left out.

    With ``ledger``, what was known at ``as_of`` (:func:`known_at`); else the live tables.
    """
    if ledger is not None:
        with known_at(conn, ledger, as_of, rate=rate) as known:
            return export_graph(known, as_of, rate=rate)

    at = check_as_of(as_of)
    saliences = {
        item_id: (stored, updated)
        for item_id, stored, updated in conn.execute(
            "SELECT item_id, salience, updated_us FROM salience"
            " WHERE item_kind = 'neuron' AND archived = 0"
        )
    }
    links: dict[str, list[dict[str, Any]]] = {}
    for source, target, kind, weight in conn.execute(
        "SELECT c.source, c.target, c.type, c.weight FROM connections c"
        " JOIN neurons n ON n.id = c.target AND n.archived_at IS NULL"
        " ORDER BY c.source, c.target, c.type"
    ):
        links.setdefault(source, []).append({"target": target, "weight": weight, "type": kind})
    neurons = []
    for id_, concept, kind in conn.execute(
        "SELECT id, concept, type FROM neurons WHERE archived_at IS NULL ORDER BY id"
    ):
        stored, updated = saliences.get(id_, (0, 0))
        neurons.append(
            {
                "id": id_,
                "concept": concept,
                "type": kind,
                "salience": decayed(stored, updated, at, rate),
                "last_salience_update": _iso(updated) if updated else None,
                "connections": links.get(id_, []),
            }
        )
    last, agents = conn.execute(
        "SELECT max(last_at), json_group_array(actor) FROM"
        " (SELECT actor, last_at FROM graph_actors ORDER BY actor)"
    ).fetchone()
    position = conn.execute(
        "SELECT checkpoint FROM engram_generations WHERE state = 'live' AND name = 'neuron_graph'"
    ).fetchone()
    return {
        "neurons": neurons,
        "metadata": {
            "version": EXPORT_FORMAT,
            "last_modified": last,
            "active_agents": [] if agents is None else _json_list(agents),
            "ledger_position": None if position is None else position[0],
            "as_of": as_of.isoformat(),
        },
    }


def _iso(us: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)).isoformat(
        timespec="microseconds"
    )


def _json_list(text: str) -> list[str]:
    return [str(v) for v in json.loads(text)]


# -- single items, for the agents' checks ---------------------------------------------------


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


def neuron_state(conn: sqlite3.Connection, neuron: str) -> str | None:
    """Return ``"live"`` or ``"archived"`` for a neuron of the graph, None when it is unknown."""
    row = conn.execute("SELECT archived_at FROM neurons WHERE id = ?", (neuron,)).fetchone()
    if row is None:
        return None
    return "live" if row[0] is None else "archived"


def connection_weight(conn: sqlite3.Connection, source: str, target: str, type: str) -> int | None:
    """Return the weight of a connection of the graph, None when there is none."""
    row = conn.execute(
        "SELECT weight FROM connections WHERE source = ? AND target = ? AND type = ?",
        (source, target, type),
    ).fetchone()
    return None if row is None else int(row[0])


# -- what the store knew at a time ------------------------------------------------------------

_REPLAY_BATCH = 10_000
#: The projections :func:`known_at` can replay as of a time.
REPLAYED = ("salience", "neuron_graph")
_LATEST: dict[tuple[Any, ...], int] = {}
_UNKNOWN = 2**63 - 1


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
    # A memory's archival time is the lexical index's; it matters to salience reads only.
    names = [n for n in REPLAYED if n in projections] + ["lexical"] * ("salience" in projections)
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
    latest = 0
    live = {row[0] for row in key[1]}
    if "salience" in live:
        (value,) = conn.execute("SELECT max(updated_us) FROM salience").fetchone()
        latest = max(latest, value or 0)
    if "neuron_graph" in live:
        texts = conn.execute(
            "SELECT max(created_at), max(archived_at) FROM neurons UNION ALL"
            " SELECT max(updated_at), NULL FROM connections"
        ).fetchall()
        for text in (t for row in texts for t in row if t is not None):
            latest = max(latest, micros(datetime.fromisoformat(text)))
    if "lexical" in live:
        try:
            latest = max(latest, lexical.latest_archival(conn))
        except sqlite3.Error:  # unreadable: archival times unknown, so assume the latest
            return _UNKNOWN
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
    rate: float = DEFAULT_RATE,
    projections: Sequence[str] = REPLAYED,
) -> Iterator[sqlite3.Connection]:
    """Yield a connection whose salience and graph tables hold what was known at ``as_of``.

    Known at ``T`` means: built from the events whose time is at or before ``T``. When
    nothing in the tables changed after ``T`` (:func:`changed_after`), this is ``conn``;
    otherwise the salience and graph projections the store holds are replayed from the
    ledger into a private in-memory database, at the cost of one read of their kinds: a
    read of the past, not a hot path. ``projections`` narrows both to the tables the caller
    reads (``("salience",)`` for recall).
    """
    check_as_of(as_of)
    unknown = sorted(set(projections) - set(REPLAYED))
    if unknown or isinstance(projections, str):
        raise QueryError(f"projections: unknown {unknown or projections!r}; known: {REPLAYED}")
    if not changed_after(conn, as_of, projections):
        yield conn
        return
    present: list[Projection] = [
        p
        for p in (SalienceIndex(rate), NeuronGraph())
        if p.name in projections and _live(conn, p.name)
    ]
    replay = sqlite3.connect(":memory:")
    try:
        _replay(replay, ledger, as_of, present)
        yield replay
    finally:
        replay.close()


def _live(conn: sqlite3.Connection, name: str) -> bool:
    return ProjectionStore.live_generation(conn, name) is not None


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
