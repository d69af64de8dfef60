"""Vitality: how alive the brain is at a time (seed MagistraAI §1.2), from the graph and salience.

Read functions over the ``graph`` and ``salience`` projections, evaluated as of a time
(salience decays lazily, so "now" and "last Tuesday" differ even when no event came):

- active neurons: live neurons whose salience is at least ``alive_at`` (1% by default);
- mean salience of the live neurons;
- connection density: connections between live neurons over the ``n × (n − 1)`` possible;
- inhibition balance: the share of the connections' total weight that inhibits (0..1);
- growth: neurons created during the ``window`` before the time.

For the past, pass ``ledger`` (what was known then, :func:`timetravel.known_at`). A measurement
worth keeping is appended as a ``vitality.measured`` event, so the series is SQL over the
ledger (the ``vitality_measured`` view).

The **working set** (:func:`working_set`, ADR 0066) is what the brain holds in mind: each
neuron's resonance decays by :data:`RESONANCE_DECAY` per tick (a tick: one wave, a run of
activations stamped with one time) and rises by each activation's strength (capped at 1); a
neuron under :data:`EPSILON` drops out. A resonance of at most 1 falls under epsilon in
:data:`HORIZON` ticks, so the set is folded over the last ``HORIZON + 1`` ticks alone, read
from the ledger's tail.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from engram.ledger import Event, Ledger
from engram.projections.errors import QueryError
from engram.projections.salience import DEFAULT_RATE, decayed
from engram.projections.timetravel import check_as_of, known_at, micros

#: Salience at or above which a neuron counts as active: 1% of the uint16 range.
ALIVE_AT = 655


class BrainVitality(NamedTuple):
    """The vital signs of the neuron graph at one time."""

    at: datetime
    neurons: int
    active_neurons: int
    mean_salience: float
    connections: int
    density: float
    inhibition: float
    growth: int


def measure(
    conn: sqlite3.Connection,
    at: datetime,
    *,
    window: timedelta = timedelta(days=1),
    alive_at: int = ALIVE_AT,
    rate: float = DEFAULT_RATE,
    ledger: Ledger | None = None,
) -> BrainVitality:
    """Return the graph's vital signs as of ``at`` (with ``ledger``: as known then)."""
    if ledger is not None:
        with known_at(
            conn, ledger, at, rate=rate, projections=("salience", "neuron_graph")
        ) as known:
            return measure(known, at, window=window, alive_at=alive_at, rate=rate)
    at_us = check_as_of(at)
    if not isinstance(window, timedelta) or window <= timedelta(0):
        raise QueryError(f"window must be a positive timedelta, got {window!r}")
    if not isinstance(alive_at, int) or isinstance(alive_at, bool) or not 0 <= alive_at <= 65535:
        raise QueryError(f"alive_at must be an int in 0..65535, got {alive_at!r}")
    live = {
        nid: created
        for nid, created in conn.execute(
            "SELECT id, created_at FROM neurons WHERE archived_at IS NULL"
        )
    }
    saliences = [
        decayed(stored, updated, at_us, rate)
        for item_id, stored, updated in conn.execute(
            "SELECT item_id, salience, updated_us FROM salience"
            " WHERE item_kind = 'neuron' AND archived = 0"
        )
        if item_id in live
    ]
    n = len(live)
    links = [
        (kind, weight)
        for source, target, kind, weight in conn.execute(
            "SELECT source, target, type, weight FROM connections"
        )
        if source in live and target in live
    ]
    total_weight = sum(weight for _, weight in links)
    inhibiting = sum(weight for kind, weight in links if kind == "inhibits")
    # Stored times keep the offset they were given in: compare them as datetimes, not text.
    try:
        since = at - window
    except OverflowError:  # a window reaching back past year 1: growth since the beginning
        since = datetime.min.replace(tzinfo=UTC)
    until = at
    return BrainVitality(
        at=at,
        neurons=n,
        active_neurons=sum(1 for s in saliences if s >= alive_at),
        mean_salience=sum(saliences) / len(saliences) if saliences else 0.0,
        connections=len(links),
        density=len(links) / (n * (n - 1)) if n > 1 else 0.0,
        inhibition=inhibiting / total_weight if total_weight else 0.0,
        growth=sum(
            1 for created in live.values() if since < datetime.fromisoformat(created) <= until
        ),
    )


#: What a neuron keeps of its resonance from one tick to the next.
RESONANCE_DECAY = 0.8
#: Under this resonance a neuron leaves the working set.
EPSILON = 0.05
#: Ticks after which any resonance (at most 1) is under EPSILON: 0.8 ** 14 = 0.044.
HORIZON = math.ceil(math.log(EPSILON) / math.log(RESONANCE_DECAY))
_CHUNK = 2048


class WorkingSet(NamedTuple):
    """The working set after the latest tick, and the seed's hygiene metrics over it.

    ``coverage``: the share of live neurons in the set; ``drift``: the share of the set that
    changed with the latest tick (one minus the Jaccard similarity with the set before it).
    """

    at: datetime | None
    size: int
    mean_resonance: float
    coverage: float
    drift: float
    resonance: dict[str, float]


def resonate(ticks: Iterable[Iterable[tuple[str, float]]]) -> list[dict[str, float]]:
    """Fold ticks of (neuron, strength) activations; return the working set after each."""
    current: dict[str, float] = {}
    sets = []
    for tick in ticks:
        current = {n: r * RESONANCE_DECAY for n, r in current.items()}
        for neuron, strength in tick:
            current[neuron] = min(1.0, current.get(neuron, 0.0) + min(max(strength, 0.0), 1.0))
        current = {n: r for n, r in current.items() if r >= EPSILON}
        sets.append(current)
    return sets


def _tail_ticks(ledger: Ledger, at_us: int) -> list[tuple[datetime, list[tuple[str, float]]]]:
    """Return the last HORIZON + 1 ticks of activations known at ``at_us``, oldest first."""
    head = ledger.head()
    events: list[Event] = []
    upto = head
    while upto > 0:
        start = max(upto - _CHUNK, 0)
        chunk = [
            e
            for e in ledger.read(start, kinds=["neuron.activated"], upto=upto)
            if micros(e.at) <= at_us
        ]
        events = chunk + events
        upto = start
        if len({e.at for e in events}) > HORIZON + 2:
            break
    runs: list[tuple[datetime, list[tuple[str, float]]]] = []
    for e in events:
        if not runs or runs[-1][0] != e.at:
            runs.append((e.at, []))
        runs[-1][1].append((e.payload.id, e.payload.strength))
    # More runs than kept were read unless the ledger began first: the oldest, which the
    # chunk's edge may have cut, is never among the kept.
    return runs[-(HORIZON + 1) :]


def working_set(conn: sqlite3.Connection, ledger: Ledger, at: datetime) -> WorkingSet:
    """Return the working set as of ``at``: the fold of the last ``HORIZON + 1`` ticks.

    Older ticks left a resonance under epsilon; the window makes the set a function of the
    last ticks alone, whatever the length of the history.
    """
    at_us = check_as_of(at)
    ticks = _tail_ticks(ledger, at_us)
    live = {nid for (nid,) in conn.execute("SELECT id FROM neurons WHERE archived_at IS NULL")}
    sets = resonate([[(n, s) for n, s in tick if n in live] for _, tick in ticks])
    now = sets[-1] if sets else {}
    before = set(sets[-2]) if len(sets) > 1 else set()
    union = before | set(now)
    return WorkingSet(
        at=ticks[-1][0] if ticks else None,
        size=len(now),
        mean_resonance=sum(now.values()) / len(now) if now else 0.0,
        coverage=len(now) / len(live) if live else 0.0,
        drift=len(before ^ set(now)) / len(union) if union else 0.0,
        resonance=dict(sorted(now.items())),
    )
