"""Vitality: how alive the brain is at a time (seed MagistraAI §1.2), from the graph and salience.

Read functions over the ``graph`` and ``salience`` projections, evaluated as of a time
(salience decays lazily, so "now" and "last Tuesday" differ even when no event came):

- active neurons: live neurons whose salience is at least ``alive_at`` (1% by default);
- mean salience of the live neurons;
- connection density: connections between live neurons over the ``n × (n − 1)`` possible;
- inhibition balance: the share of the connections' total weight that inhibits (0..1);
- growth: neurons created during the ``window`` before the time.

For the past, pass ``ledger`` (what was known then, :func:`queries.known_at`). A measurement
worth keeping is appended as a ``vitality.measured`` event, so the series is SQL over the
ledger (the ``vitality_measured`` view).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from typing import NamedTuple

from engram.ledger import Ledger
from engram.projections.errors import QueryError
from engram.projections.queries import check_as_of, known_at
from engram.projections.salience import DEFAULT_RATE, decayed

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
    since, until = at - window, at
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
