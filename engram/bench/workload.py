"""A seeded, realistic mix of engram's own event kinds, and the same rows for raw references."""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from engram.ledger import NewEvent, default_registry, new_id
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
    RecalledItem,
    SignalSent,
)

# kind -> share of the mix (per mille)
MIX: dict[str, int] = {
    "neuron.activated": 400,
    "memory.observed": 200,
    "connection.created": 100,
    "connection.reweighted": 100,
    "signal.sent": 100,
    "neuron.created": 50,
    "memory.recalled": 40,
    "neuron.archived": 10,
}
NEURONS = 1000
AGENTS = ("inner", "outer", "critic", "planner", "scout", "scribe", "judge", "keeper")
_SENTENCE = (
    "the agent noticed that a failing test pointed at the cache layer while the user asked "
    "about latency budgets and the retry policy of the queue consumer after yesterday's "
    "incident review where memory pressure and slow disks were blamed for timeouts"
)
_WORDS = tuple(_SENTENCE.split())
_TAGS = ("cache", "latency", "incident", "user", "queue")
_BASE = datetime(2025, 1, 1, tzinfo=UTC)
_encode = msgspec.json.Encoder(order="sorted").encode


class Workload:
    """Generate mixed NewEvents from a seed: the same seed gives the same events."""

    def __init__(self, seed: int) -> None:
        self._rnd = random.Random(seed)
        self._kinds = list(MIX)
        self._weights = list(MIX.values())

    def events(self, n: int) -> list[NewEvent]:
        """Return the next ``n`` events of the mix (ids are left to the ledger)."""
        rnd = self._rnd
        return [self._event(kind) for kind in rnd.choices(self._kinds, self._weights, k=n)]

    def activations(self, n: int) -> list[NewEvent]:
        """Return ``n`` small single-kind events (neuron.activated), as an agent fires them."""
        return [self._event("neuron.activated") for _ in range(n)]

    def _neuron(self) -> str:
        return f"n_{self._rnd.randrange(NEURONS):04d}"

    def _text(self, low: int, high: int) -> str:
        rnd = self._rnd
        return " ".join(rnd.choices(_WORDS, k=rnd.randint(low, high)))

    def _event(self, kind: str) -> NewEvent:
        rnd = self._rnd
        agent = rnd.choice(AGENTS)
        payload: msgspec.Struct
        if kind == "neuron.activated":
            neuron = self._neuron()
            cause = rnd.choice(("stimulus", "recall", f"propagation:{rnd.randrange(10**6)}"))
            payload = NeuronActivated(id=neuron, strength=round(rnd.random(), 4), cause=cause)
            stream = f"neuron:{neuron}"
        elif kind == "memory.observed":
            payload = MemoryObserved(
                agent=agent,
                text=self._text(12, 48),
                type=rnd.choice(("observation", "plan", "thought")),
                importance=rnd.choice((None, rnd.randint(1, 10))),
                tags=rnd.sample(_TAGS, rnd.randint(0, 3)),
            )
            stream = f"agent:{agent}"
        elif kind in ("connection.created", "connection.reweighted"):
            source, target = self._neuron(), self._neuron()
            cls = ConnectionCreated if kind == "connection.created" else ConnectionReweighted
            payload = cls(
                source=source,
                target=target,
                type=rnd.choice(("feeds_into", "influences", "inhibits", "recalls", "triggers")),
                weight=rnd.randrange(65536),
                reason=rnd.choice(("", "co-activation", "hebbian update")),
            )
            stream = f"neuron:{source}"
        elif kind == "signal.sent":
            to = rnd.choice((*AGENTS, "*"))
            payload = SignalSent(to=to, topic="handoff", body=self._text(4, 12))
            stream = f"agent:{agent}"
        elif kind == "neuron.created":
            neuron = self._neuron()
            payload = NeuronCreated(
                id=neuron,
                concept=self._text(1, 4),
                type=rnd.choice(("core", "contextual", "episodic", "semantic")),
            )
            stream = f"neuron:{neuron}"
        elif kind == "memory.recalled":
            payload = MemoryRecalled(
                agent=agent,
                query=self._text(3, 8),
                items=[
                    RecalledItem(rnd.randrange(1, 10**6), round(rnd.random(), 4)) for _ in range(5)
                ],
                as_of=_BASE + timedelta(seconds=rnd.randrange(10**7)),
            )
            stream = f"agent:{agent}"
        else:
            neuron = self._neuron()
            payload = NeuronArchived(id=neuron, reason="decayed")
            stream = f"neuron:{neuron}"
        return NewEvent.of(payload, stream=stream, actor=f"agent:{agent}")


class RawRows:
    """Turn NewEvents into storage rows the way a hand-written writer would.

    Payload bytes are encoded ahead of time; ``take`` assigns what an insert needs at write
    time: position, a fresh UUIDv7 from :func:`engram.ledger.new_id`, the stream version, the time
    and a 32-byte hash (a placeholder of the same size: the reference does not chain).
    """

    def __init__(self, events: Sequence[NewEvent]) -> None:
        registry = default_registry()
        self._parts: list[tuple[str, str, int, str, bytes]] = []
        for e in events:
            spec = registry.get(e.kind)
            assert spec is not None
            self._parts.append((e.stream, e.kind, spec.schema, e.actor, _encode(e.payload)))
        self._position = 0
        self._versions: dict[str, int] = {}
        self._hash = os.urandom(32)

    def __len__(self) -> int:
        return len(self._parts)

    def take(self, start: int, stop: int) -> list[tuple[Any, ...]]:
        """Return rows for events ``start:stop``, in the ledger's column order."""
        at = datetime.now(UTC).isoformat(timespec="microseconds")
        rows: list[tuple[Any, ...]] = []
        versions = self._versions
        for stream, kind, schema, actor, payload in self._parts[start:stop]:
            self._position += 1
            version = versions[stream] = versions.get(stream, 0) + 1
            rows.append(
                (
                    self._position,
                    new_id(),
                    stream,
                    version,
                    kind,
                    schema,
                    actor,
                    at,
                    payload,
                    None,
                    None,
                    self._hash,
                )
            )
        return rows


SQLITE_DDL = """CREATE TABLE events (
    position INTEGER NOT NULL PRIMARY KEY,
    id VARCHAR(36) NOT NULL,
    stream TEXT NOT NULL,
    version BIGINT NOT NULL,
    kind TEXT NOT NULL,
    schema INTEGER NOT NULL,
    actor TEXT NOT NULL,
    at TEXT NOT NULL,
    payload BLOB NOT NULL,
    causation_id VARCHAR(36),
    correlation_id VARCHAR(36),
    hash BLOB NOT NULL,
    CONSTRAINT events_id_key UNIQUE (id),
    CONSTRAINT events_stream_version_key UNIQUE (stream, version)
)"""

SQLITE_INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
