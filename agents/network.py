"""The neuron network as an agent uses it: bootstrap, grow, stimulate, inspect.

Every change is an appended event; reads go through the projections after waiting for the
agent's own writes (read-your-writes). A read ``as_of`` a time sees what the store knew then:
no neuron, connection, activation or archival whose event time is after it
(:func:`engram.projections.timetravel.known_at`). Writes are checked against the live graph
first, so a neuron activated before it exists or a connection to an unknown neuron is refused
here with a clear error; events appended around this API follow the graph's documented rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from engram.agents.errors import ConnectionStateError, NeuronExistsError, UnknownNeuronError
from engram.ledger import NO_STREAM, ConcurrencyError, Expectation, Ledger, NewEvent, new_id
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    ConnectionType,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
    NeuronType,
    VitalityMeasured,
)
from engram.projections import graph, salience, timetravel, vitality
from engram.projections.activation import (
    DEFAULT_DECAY,
    DEFAULT_DEPTH,
    DEFAULT_MIN_STRENGTH,
    REFRACTORY,
    Activation,
    GraphSnapshot,
    SnapshotCache,
)
from engram.projections.engine import ProjectionEngine
from engram.projections.renamed import renamed_keyword
from engram.projections.salience import DEFAULT_RATE
from engram.projections.vitality import BrainVitality, WorkingSet

#: The minimal network ``engram init`` appends once: core perception, memory and decision.
CORE_NEURONS: list[tuple[str, str, NeuronType]] = [
    ("n_perception_001", "perception", "core"),
    ("n_memory_001", "memory", "core"),
    ("n_decision_001", "decision", "core"),
]
CORE_CONNECTIONS: list[tuple[str, str, ConnectionType, int]] = [
    ("n_perception_001", "n_memory_001", "feeds_into", 52000),
    ("n_memory_001", "n_decision_001", "influences", 45000),
    ("n_perception_001", "n_decision_001", "triggers", 30000),
    ("n_decision_001", "n_perception_001", "recalls", 20000),
]
_MAX_STRENGTH = 1e6


def stream_of(neuron: str) -> str:
    """Return the ledger stream of a neuron (its connections live in its source's stream)."""
    return f"neuron:{neuron}"


class Stimulation(NamedTuple):
    """What a stimulus did: the wave's activation map and the events it appended."""

    activation: Activation
    positions: list[int]
    correlation_id: str


class NeuronNetwork:
    """An agent's handle on the neuron network: the ledger plus the caught-up projections."""

    def __init__(
        self,
        ledger: Ledger,
        engine: ProjectionEngine,
        *,
        actor: str = "agent",
        rate: float = DEFAULT_RATE,
    ) -> None:
        """``rate`` is the salience index's decay per hour, for reads as of a time."""
        self.ledger = ledger
        self.engine = engine
        self.actor = actor
        self.rate = rate
        self._snapshots = SnapshotCache()

    # -- writing ---------------------------------------------------------------------------

    def bootstrap(self, at: datetime | None = None) -> list[int]:
        """Append the minimal core network once; return its positions ([] if it exists)."""
        if any(True for _ in self.ledger.read_stream(stream_of(CORE_NEURONS[0][0]))):
            return []
        when = at or datetime.now(UTC)
        events = [
            NewEvent(
                stream=stream_of(n),
                kind="neuron.created",
                actor="engram",
                at=when,
                payload=NeuronCreated(id=n, concept=concept, type=kind),
            )
            for n, concept, kind in CORE_NEURONS
        ] + [
            NewEvent(
                stream=stream_of(s),
                kind="connection.created",
                actor="engram",
                at=when,
                payload=ConnectionCreated(source=s, target=t, type=c, weight=w, reason="bootstrap"),
            )
            for s, t, c, w in CORE_CONNECTIONS
        ]
        expect: dict[str, Expectation] = {stream_of(n): NO_STREAM for n, _, _ in CORE_NEURONS}
        try:
            return self.ledger.append(events, expect=expect)
        except ConcurrencyError:  # another process bootstrapped at the same moment
            return []

    def create_neuron(
        self,
        neuron: str,
        concept: str,
        type: NeuronType = "contextual",
        *,
        at: datetime | None = None,
    ) -> int:
        """Create a neuron; refuse an id that exists. Returns the event's position."""
        event = NewEvent(
            stream=stream_of(neuron),
            kind="neuron.created",
            actor=self.actor,
            at=at,
            payload=NeuronCreated(id=neuron, concept=concept, type=type),
        )
        try:
            return self.ledger.append(event, expect=NO_STREAM)[0]
        except ConcurrencyError:
            raise NeuronExistsError(f"neuron {neuron!r} exists already") from None

    def connect(
        self,
        source: str,
        target: str,
        type: ConnectionType,
        weight: int,
        *,
        reason: str = "",
        at: datetime | None = None,
    ) -> int:
        """Create a connection between two live neurons; refuse one that exists."""
        payload = ConnectionCreated(
            source=source, target=target, type=type, weight=weight, reason=reason
        )
        return self._change_connection("connection.created", payload, at, exists=False)

    def reweight(
        self,
        source: str,
        target: str,
        type: ConnectionType,
        weight: int,
        *,
        reason: str = "",
        at: datetime | None = None,
    ) -> int:
        """Change an existing connection's weight."""
        payload = ConnectionReweighted(
            source=source, target=target, type=type, weight=weight, reason=reason
        )
        return self._change_connection("connection.reweighted", payload, at, exists=True)

    def _change_connection(
        self,
        kind: str,
        payload: ConnectionCreated | ConnectionReweighted,
        at: datetime | None,
        *,
        exists: bool,
    ) -> int:
        """Append a connection event after checking its neurons and whether it exists."""
        source, target, type = payload.source, payload.target, payload.type
        with self._fresh() as conn:
            self._require(conn, source, target)
            found = graph.connection_weight(conn, source, target, type) is not None
        if found != exists:
            label = f"connection {source!r} -[{type}]-> {target!r}"
            raise ConnectionStateError(
                f"{label} does not exist" if exists else f"{label} exists; reweight it instead"
            )
        return self._append_one(stream_of(source), kind, payload, at)

    def archive(self, neuron: str, *, reason: str = "", at: datetime | None = None) -> int:
        """Retire a live neuron from the network."""
        with self._fresh() as conn:
            self._require(conn, neuron)
        payload = NeuronArchived(id=neuron, reason=reason)
        return self._append_one(stream_of(neuron), "neuron.archived", payload, at)

    def stimulate(
        self,
        seeds: Mapping[str, float],
        *,
        cause: str = "stimulus",
        at: datetime | None = None,
        max_depth: int = DEFAULT_DEPTH,
        decay: float = DEFAULT_DECAY,
        min_strength: float = DEFAULT_MIN_STRENGTH,
        refractory: float = REFRACTORY,
        passes: int = 1,
        causation_id: str | None = None,
    ) -> Stimulation:
        """Run a wave from ``seeds`` and append its activations as one correlated batch.

        Seeds are activated with ``cause``; every neuron the wave reached with at least
        ``min_strength`` is activated with ``propagation:<cause>``. The batch shares one
        correlation id, so the wave can be found and replayed in the ledger. ``passes`` is
        the wave's place in a reentrant chain (ADR 0065): past ``PASS_LIMIT`` its force
        halves per pass; a seed's recorded strength is its force after that halving.
        """
        when = at or datetime.now(UTC)
        activation = self.propagate(
            seeds,
            as_of=when,
            max_depth=max_depth,
            decay=decay,
            min_strength=min_strength,
            refractory=refractory,
            passes=passes,
        )
        correlation = new_id()
        events = self._activations(
            activation,
            {n: cause for n in seeds},
            f"propagation:{cause}",
            when,
            min_strength,
            correlation_id=correlation,
            causation_id=causation_id,
        )
        positions = self.ledger.append(events) if events else []
        return Stimulation(activation, positions, correlation)

    def commit_wave(
        self,
        touched: Mapping[str, float],
        *,
        agent: str,
        activated: Sequence[str] = (),
        at: datetime | None = None,
        passes: int = 1,
        min_strength: float = DEFAULT_MIN_STRENGTH,
    ) -> tuple[Activation | None, list[NewEvent]]:
        """Return the wave a commit's touched neurons start and its activations, unappended.

        ``touched`` maps each neuron a commit writes to its strength; neurons not (yet) in
        the live graph are left out. The touched neurons the commit already ``activated``
        get no second event; the others are activated with ``commit:<agent>``, and every
        neuron the wave reaches with ``propagation:commit:<agent>`` (ADR 0066).
        """
        when = at or datetime.now(UTC)
        with self._fresh() as conn:
            snapshot = self._snapshots.get(conn)
        seeds = {n: v for n, v in touched.items() if n in snapshot.index and v > 0}
        if not seeds:
            return None, []
        wave = snapshot.propagate(
            seeds, when, min_strength=min_strength, passes=passes, rate=self.rate
        )
        cause = f"commit:{agent}"
        skip = set(activated)
        events = self._activations(
            wave,
            {n: cause for n in seeds},
            f"propagation:{cause}",
            when,
            min_strength,
            actor=agent,
            skip=skip,
        )
        return wave, events

    def _activations(
        self,
        activation: Activation,
        seeds: Mapping[str, str],
        cause: str,
        when: datetime,
        min_strength: float,
        *,
        actor: str | None = None,
        skip: set[str] | frozenset[str] = frozenset(),
        correlation_id: str | None = None,
        causation_id: str | None = None,
    ) -> list[NewEvent]:
        """Return a wave's activations as events: seeds with their cause, the rest ``cause``."""
        return [
            NewEvent(
                stream=stream_of(neuron),
                kind="neuron.activated",
                actor=actor or self.actor,
                at=when,
                correlation_id=correlation_id,
                causation_id=causation_id,
                payload=NeuronActivated(
                    id=neuron, strength=min(level, _MAX_STRENGTH), cause=seeds.get(neuron, cause)
                ),
            )
            for neuron, level in sorted(activation.levels.items())
            if level >= min_strength and neuron not in skip
        ]

    # -- reading ---------------------------------------------------------------------------

    def propagate(
        self, seeds: Mapping[str, float], *, as_of: datetime | None = None, **options: Any
    ) -> Activation:
        """Compute a wave over the graph as of a time, appending nothing (see activation)."""
        with self._reading(as_of) as (conn, when, replayed):
            snapshot = GraphSnapshot(conn) if replayed else self._snapshots.get(conn)
        return snapshot.propagate(seeds, when, **options)

    @renamed_keyword("kinds", "items")
    def top(
        self, k: int = 10, *, as_of: datetime | None = None, items: Sequence[str] = ("neuron",)
    ) -> list[salience.Item]:
        """Return the ``k`` most salient ``items`` (``neuron``, ``memory``) as of a time."""
        with self._reading(as_of) as (conn, when, _):
            return salience.top(conn, when, k, items, rate=self.rate)

    def export(self, *, as_of: datetime | None = None) -> dict[str, Any]:
        """Return the graph in the agents' JSON shape, as of a time (default: now)."""
        with self._reading(as_of) as (conn, when, _):
            return graph.export_graph(conn, when, rate=self.rate)

    def vitality(
        self,
        *,
        as_of: datetime | None = None,
        window: timedelta = timedelta(days=1),
        record: bool = False,
    ) -> BrainVitality:
        """Return the graph's vital signs as of a time (default: now).

        With ``record``, the measurement is appended as ``vitality.measured`` on the
        ``vitality`` stream, so the series over time is SQL over the ledger.
        """
        with self._reading(as_of) as (conn, when, _):
            signs = vitality.measure(conn, when, window=window, rate=self.rate)
        if record:
            payload = VitalityMeasured(window_s=window.total_seconds(), **signs._asdict())
            self._append_one("vitality", VitalityMeasured.__kind__, payload, None)
        return signs

    def working_set(self, *, as_of: datetime | None = None) -> WorkingSet:
        """Return the working set (resonance per neuron) as of a time (default: now)."""
        with self._reading(as_of) as (conn, when, _):
            return vitality.working_set(conn, self.ledger, when)

    # -- helpers ---------------------------------------------------------------------------

    def _fresh(self) -> Any:
        self.engine.wait_for(self.ledger.head())
        return self.engine.read()

    @contextmanager
    def _reading(self, as_of: datetime | None) -> Iterator[tuple[Any, datetime, bool]]:
        """Yield a connection holding what was known at ``as_of`` (default: now, the live
        tables), the time, and whether the connection is a replay rather than the store."""
        with self._fresh() as live:
            if as_of is None:
                yield live, datetime.now(UTC), False
                return
            timetravel.check_as_of(as_of)
            with timetravel.known_at(live, self.ledger, as_of, rate=self.rate) as known:
                yield known, as_of, known is not live

    def _append_one(self, stream: str, kind: str, payload: Any, at: datetime | None) -> int:
        event = NewEvent(stream=stream, kind=kind, payload=payload, actor=self.actor, at=at)
        return self.ledger.append(event)[0]

    @staticmethod
    def _require(conn: Any, *neurons: str) -> None:
        for neuron in neurons:
            state = graph.neuron_state(conn, neuron)
            if state is None:
                raise UnknownNeuronError(f"neuron {neuron!r} does not exist")
            if state == "archived":
                raise UnknownNeuronError(f"neuron {neuron!r} is archived")
