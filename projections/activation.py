"""Spreading activation over the neuron graph: a query that writes nothing (ADR 0012).

From seed neurons and strengths a breadth-first wave runs hop by hop. Each hop carries::

    strength * weight / 65535 * max(salience(target), floor) / 65535 * decay

to each target over the source's outgoing connections. A connection's type says what it
carries (ADR 0064):

- ``feeds_into`` passes activation on;
- ``inhibits`` subtracts (a negative gain, never expanded further);
- ``influences`` changes the target's context score (:attr:`Activation.influence`) without
  activating it: the target neither gains a level nor passes anything on;
- ``recalls`` runs backward: the target retrieves its source, so activating the target
  passes activation to the source (episodic recall);
- ``triggers`` fires only when its source changes sharply: the activation the source carries
  in this wave is at least ``TRIGGER_RATIO`` times its salience level (an anomaly against
  what it usually carries), not on every pass.

Two rules keep activation from running away in loops (ADR 0065):

- **refractory period**: a neuron that fired less than ``refractory`` seconds before the
  wave's time is locked: it still receives (its level counts) but relays nothing (a seed is
  the stimulus itself and always passes on);
- **pass count**: a wave that re-enters the network from what an earlier wave changed (an
  agent's commit after a wave woke it) carries its ``passes``; past ``PASS_LIMIT`` passes
  its seeds' force halves with every further pass.

Each neuron is expanded at most once per wave; what reaches an already-expanded neuron
(a reentrant loop) counts at ``reentry`` (half) strength and goes no further. Only targets
whose gain in a hop reaches ``min_strength`` are expanded next; the wave stops at
``max_depth``. Archived neurons neither receive nor pass on activation.

The wave runs on a :class:`GraphSnapshot`: the live graph and neuron saliences loaded into
compressed sparse rows (numpy), reloaded only when a projection's checkpoint moves.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

import numpy as np
import numpy.typing as npt

from engram.projections.errors import QueryError
from engram.projections.salience import DEFAULT_RATE, MAX, decayed
from engram.projections.timetravel import check_as_of, micros

#: Below this salience a target still receives activation as if it had this much (~10%),
#: so a network of quiet neurons can wake up (ADR 0012).
SALIENCE_FLOOR = 6554
DEFAULT_DECAY = 0.9
DEFAULT_DEPTH = 3
DEFAULT_MIN_STRENGTH = 0.01
REENTRY = 0.5
#: A ``triggers`` connection fires when its source carries at least this many times its
#: salience level (salience / 65535) in the wave: a sharp change, not a usual pass (ADR 0064).
TRIGGER_RATIO = 2.0

#: Seconds (of event time) a neuron stays locked after firing: it passes nothing on (ADR 0065).
REFRACTORY = 1.0
#: Passes of a reentrant chain of waves at full force; each further pass halves (ADR 0065).
PASS_LIMIT = 3

# Edge codes of the snapshot: what a connection does when the wave crosses it.
_SPREAD, _INFLUENCE, _TRIGGER = 0, 1, 2
_CODES = {"feeds_into": _SPREAD, "inhibits": _SPREAD, "recalls": _SPREAD,
          "influences": _INFLUENCE, "triggers": _TRIGGER}  # fmt: skip


@dataclass(frozen=True)
class Activation:
    """The result of one wave: activation per neuron and the hop that first reached it.

    ``influence`` holds what ``influences`` connections carried to each neuron: a change of
    its context score, not an activation.
    """

    levels: dict[str, float]
    hops: dict[str, int]
    influence: dict[str, float] = field(default_factory=dict)

    def strongest(self, n: int = 10) -> list[tuple[str, float]]:
        """Return the ``n`` most activated neurons, strongest first."""
        return sorted(self.levels.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


class GraphSnapshot:
    """The live neuron graph in compressed sparse rows, with neuron saliences."""

    def __init__(self, conn: sqlite3.Connection, key: tuple[int, ...] = ()) -> None:
        self.key = key
        ids = [
            r[0]
            for r in conn.execute("SELECT id FROM neurons WHERE archived_at IS NULL ORDER BY id")
        ]
        self.ids = ids
        self._names = np.array(ids, dtype=object)
        self.index = {id_: i for i, id_ in enumerate(ids)}
        n = len(ids)
        sources: list[int] = []
        targets: list[int] = []
        weights: list[float] = []
        codes: list[int] = []
        index = self.index
        for source, target, kind, weight in conn.execute(
            "SELECT source, target, type, weight FROM connections"
        ):
            s, t = index.get(source), index.get(target)
            if s is None or t is None:
                continue
            if kind == "recalls":  # the target retrieves the source: the wave runs backward
                s, t = t, s
            sources.append(s)
            targets.append(t)
            weights.append(-weight if kind == "inhibits" else weight)
            codes.append(_CODES.get(kind, _SPREAD))
        src = np.asarray(sources, dtype=np.int64)
        order = np.argsort(src, kind="stable")
        self.targets = np.asarray(targets, dtype=np.int64)[order]
        self.weights = np.asarray(weights, dtype=np.float64)[order] / MAX
        self.codes = np.asarray(codes, dtype=np.int8)[order]
        # Graphs of only feeds_into/inhibits/recalls take the plain path, code-free.
        self.influences = bool((self.codes == _INFLUENCE).any())
        self.triggers = bool((self.codes == _TRIGGER).any())
        self.indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self.indptr[1:])
        # Micros of each neuron's last activation (0: never), for the refractory lock.
        self.fired_us = np.zeros(n, dtype=np.int64)
        for id_, last in conn.execute(
            "SELECT id, last_activated FROM neurons"
            " WHERE archived_at IS NULL AND last_activated IS NOT NULL"
        ):
            self.fired_us[index[id_]] = micros(datetime.fromisoformat(last))
        self.fired = bool(self.fired_us.any())
        self.stored = np.zeros(n, dtype=np.float64)
        self.updated_us = np.zeros(n, dtype=np.int64)
        for item_id, stored, updated in conn.execute(
            "SELECT item_id, salience, updated_us FROM salience"
            " WHERE item_kind = 'neuron' AND archived = 0"
        ):
            i = index.get(item_id)
            if i is not None:
                self.stored[i] = stored
                self.updated_us[i] = updated

    def salience(
        self, nodes: npt.NDArray[np.int64], as_of_us: int, rate: float
    ) -> npt.NDArray[np.float64]:
        """Return the decayed salience of ``nodes`` as of a time (floats, before flooring)."""
        hours = np.maximum(as_of_us - self.updated_us[nodes], 0) / 3_600_000_000
        return np.floor(self.stored[nodes] * np.power(rate, hours))

    def propagate(
        self,
        seeds: Mapping[str, float],
        as_of: datetime,
        *,
        max_depth: int = DEFAULT_DEPTH,
        decay: float = DEFAULT_DECAY,
        min_strength: float = DEFAULT_MIN_STRENGTH,
        salience_floor: int = SALIENCE_FLOOR,
        reentry: float = REENTRY,
        rate: float = DEFAULT_RATE,
        refractory: float = REFRACTORY,
        passes: int = 1,
    ) -> Activation:
        """Run one wave from ``seeds`` (neuron id -> strength) and return the activation map.

        ``passes`` is the wave's place in a reentrant chain (1: a fresh stimulus).
        """
        at = check_as_of(as_of)
        _check_params(max_depth, decay, min_strength, salience_floor, reentry)
        _check_loop(refractory, passes)
        start, strength = self._seeds(seeds)
        if passes > PASS_LIMIT:
            strength = strength * 0.5 ** (passes - PASS_LIMIT)
        locked_before = at - int(refractory * 1_000_000) if refractory and self.fired else None
        n = len(self.ids)
        # Zeroed arrays cost nothing until touched, and every step below touches only the
        # neurons the wave reaches, so a query costs what it reaches, not the graph's size.
        level = np.zeros(n, dtype=np.float64)
        first_hop = np.zeros(n, dtype=np.int64)  # hop + 1 of the first arrival; 0: not reached
        expanded = np.zeros(n, dtype=bool)
        influence = np.zeros(n, dtype=np.float64) if self.influences else level[:0]
        swayed: list[npt.NDArray[np.int64]] = []
        np.add.at(level, start, strength)
        first_hop[start] = 1
        expanded[start] = True
        arrivals = [start]
        frontier, carried = start, strength
        indptr, targets, weights = self.indptr, self.targets, self.weights
        for hop in range(1, max_depth + 1):
            if locked_before is not None and hop > 1:  # a seed is the stimulus: never locked
                fired = self.fired_us[frontier]
                free = (fired <= locked_before) | (fired > at)
                frontier, carried = frontier[free], carried[free]
            begin = indptr[frontier]
            counts = indptr[frontier + 1] - begin
            ends = np.cumsum(counts)
            total = int(ends[-1]) if len(ends) else 0
            if total == 0:
                break
            # Edge offsets of every frontier node, laid end to end.
            edges = np.arange(total) + np.repeat(begin - (ends - counts), counts)
            target = targets[edges]
            factor = np.maximum(self.salience(target, at, rate), salience_floor) / MAX
            gain = np.repeat(carried, counts) * weights[edges] * factor * decay
            if self.triggers or self.influences:
                code = self.codes[edges]
                keep = code == _SPREAD
                if self.triggers:
                    # A source fires its triggers only on a sharp change against its salience.
                    sharp = carried >= TRIGGER_RATIO * self.salience(frontier, at, rate) / MAX
                    keep |= (code == _TRIGGER) & np.repeat(sharp, counts)
                if self.influences:
                    moves = code == _INFLUENCE
                    np.add.at(influence, target[moves], gain[moves])
                    swayed.append(target[moves])
                target, gain = target[keep], gain[keep]
                if len(target) == 0:
                    break
            gain[expanded[target]] *= reentry
            touched, inverse = _unique(target)
            # Weighted, so float64 (the stubs say int).
            received = cast(
                "npt.NDArray[np.float64]",
                np.bincount(inverse, weights=gain, minlength=len(touched)),
            )
            level[touched] += received
            fresh = touched[first_hop[touched] == 0]
            first_hop[fresh] = hop + 1
            arrivals.append(fresh)
            grow = (received >= min_strength) & ~expanded[touched]
            frontier, carried = touched[grow], received[grow]
            expanded[frontier] = True
            if len(frontier) == 0:
                break
        reached = np.sort(np.concatenate(arrivals))  # disjoint arrivals: ascending ids
        names = self._names[reached].tolist()
        moved = np.unique(np.concatenate(swayed)) if swayed else start[:0]
        return Activation(
            dict(zip(names, level[reached].tolist(), strict=True)),
            dict(zip(names, (first_hop[reached] - 1).tolist(), strict=True)),
            dict(zip(self._names[moved].tolist(), influence[moved].tolist(), strict=True)),
        )

    def _seeds(
        self, seeds: Mapping[str, float]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        if not isinstance(seeds, Mapping) or not seeds:
            raise QueryError("seeds must be a non-empty mapping of neuron id -> strength")
        nodes, strengths = [], []
        for neuron, value in seeds.items():
            i = self.index.get(neuron)
            if i is None:
                raise QueryError(f"seed neuron {neuron!r} does not exist (or is archived)")
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not 0 < value <= 1e6
            ):
                raise QueryError(f"seed strength for {neuron!r} must be in (0, 1e6], got {value!r}")
            nodes.append(i)
            strengths.append(float(value))
        return np.asarray(nodes, dtype=np.int64), np.asarray(strengths, dtype=np.float64)


def _unique(
    values: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """``np.unique(values, return_inverse=True)`` for a non-empty 1-D array, without the
    wrapper's overhead (it dominates on the few hundred edges of a hop)."""
    order = values.argsort()
    ordered = values[order]
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(len(ordered), dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first], inverse


def _check_params(
    max_depth: int, decay: float, min_strength: float, floor: int, reentry: float
) -> None:
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or not 0 <= max_depth <= 64:
        raise QueryError(f"max_depth must be an int in 0..64, got {max_depth!r}")
    if not isinstance(decay, int | float) or not 0.0 < decay <= 1.0:
        raise QueryError(f"decay must be in (0, 1], got {decay!r}")
    if not isinstance(min_strength, int | float) or not min_strength > 0:
        raise QueryError(f"min_strength must be > 0, got {min_strength!r}")
    if not isinstance(floor, int) or isinstance(floor, bool) or not 0 <= floor <= MAX:
        raise QueryError(f"salience_floor must be an int in 0..65535, got {floor!r}")
    if not isinstance(reentry, int | float) or not 0.0 <= reentry <= 1.0:
        raise QueryError(f"reentry must be in [0, 1], got {reentry!r}")


def _check_loop(refractory: float, passes: int) -> None:
    if (
        not isinstance(refractory, int | float)
        or isinstance(refractory, bool)
        or not 0.0 <= refractory <= 86_400.0
    ):
        raise QueryError(f"refractory must be seconds in [0, 86400], got {refractory!r}")
    if not isinstance(passes, int) or isinstance(passes, bool) or not 1 <= passes <= 1_000:
        raise QueryError(f"passes must be an int in 1..1000, got {passes!r}")


def inhibition(
    conn: sqlite3.Connection, neuron: str, as_of: datetime, *, rate: float = DEFAULT_RATE
) -> float:
    """Return the pressure that live ``inhibits`` connections put on ``neuron`` now.

    The sum, over each live source inhibiting it, of ``weight / 65535 * salience / 65535``
    (decayed as of the time): 0 when nothing inhibits it, about 1 when one saturated source
    inhibits it at full weight (ADR 0066).
    """
    at = check_as_of(as_of)
    rows = conn.execute(
        "SELECT c.weight, s.salience, s.updated_us FROM connections c"
        " JOIN neurons n ON n.id = c.source AND n.archived_at IS NULL"
        " JOIN neurons t ON t.id = c.target AND t.archived_at IS NULL"
        " JOIN salience s ON s.item_kind = 'neuron' AND s.item_id = c.source AND s.archived = 0"
        " WHERE c.target = ? AND c.type = 'inhibits' AND c.weight > 0 ORDER BY c.source",
        (neuron,),
    ).fetchall()
    return float(
        sum(
            weight / MAX * decayed(stored, updated, at, rate) / MAX
            for weight, stored, updated in rows
        )
    )


def influence(
    conn: sqlite3.Connection, as_of: datetime, *, rate: float = DEFAULT_RATE
) -> dict[str, float]:
    """Return the sway live ``influences`` connections put on each neuron's concept now.

    For each live target, the sum over its live sources of ``weight / 65535 * salience /
    65535`` (decayed as of the time), keyed by the target's concept: how far a context frame
    raises the items that stand for that concept (ADR 0083). The target is not activated.
    Like :func:`inhibition`, the one-hop reading of what a wave adds to
    :attr:`Activation.influence`, from the sources' standing salience.
    """
    at = check_as_of(as_of)
    rows = conn.execute(
        "SELECT t.concept, c.weight, s.salience, s.updated_us FROM connections c"
        " JOIN neurons n ON n.id = c.source AND n.archived_at IS NULL"
        " JOIN neurons t ON t.id = c.target AND t.archived_at IS NULL"
        " JOIN salience s ON s.item_kind = 'neuron' AND s.item_id = c.source AND s.archived = 0"
        " WHERE c.type = 'influences' AND c.weight > 0 ORDER BY t.concept, c.source"
    ).fetchall()
    sway: dict[str, float] = {}
    for concept, weight, stored, updated in rows:
        value = weight / MAX * decayed(stored, updated, at, rate) / MAX
        if value > 0:
            sway[concept] = sway.get(concept, 0.0) + value
    return sway


class SnapshotCache:
    """Hands out a :class:`GraphSnapshot`, reloading it only when the graph has moved."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot: GraphSnapshot | None = None

    def get(self, conn: sqlite3.Connection) -> GraphSnapshot:
        """Return a snapshot matching the live generations' checkpoints seen by ``conn``."""
        key = tuple(
            v
            for row in conn.execute(
                "SELECT generation, checkpoint FROM engram_generations WHERE state = 'live'"
                " AND name IN ('neuron_graph', 'salience') ORDER BY name"
            )
            for v in row
        )
        with self._lock:
            if self._snapshot is None or self._snapshot.key != key:
                self._snapshot = GraphSnapshot(conn, key)
            return self._snapshot
