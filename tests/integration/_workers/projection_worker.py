"""Child processes for the projection crash and contention tests (run as a script).

    projection_worker.py build CONFIG_JSON      append a seeded random history to a ledger
    projection_worker.py catch_up CONFIG_JSON   catch the store up (killed mid-way by a test)
    projection_worker.py rebuild CONFIG_JSON    rebuild the store (killed mid-way by a test)
    projection_worker.py follow CONFIG_JSON     catch up repeatedly until told to stop
    projection_worker.py append CONFIG_JSON     append activations and memories in batches

Histories activate only neurons that exist and are live, and recall only memories, so every
neuron's activation count equals its number of ``neuron.activated`` events. Modes that finish
print one JSON line: the head they reached and the digest of every projection.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    MemoryObserved,
    MemoryRecalled,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
    RecalledItem,
)
from engram.projections import engine as engine_module
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

START = datetime(2030, 1, 1, tzinfo=UTC)
NEURONS = 300
STABLE = 100  # n0..n99 are never archived: the appender activates them


def _event(rng: random.Random, position: int, archived: set[int], memories: list[int]) -> NewEvent:
    at = START + timedelta(minutes=position)
    roll = rng.random()
    live = [n for n in range(NEURONS) if n not in archived] if roll >= 0.5 else []
    if roll < 0.5 or not live:
        n = rng.randrange(STABLE)
        payload: Any = NeuronActivated(id=f"n{n}", strength=rng.random() * 2, cause="work")
        return NewEvent(stream=f"neuron:n{n}", kind="neuron.activated", payload=payload, at=at)
    if roll < 0.6:
        n = rng.choice(live)
        payload = NeuronActivated(id=f"n{n}", strength=rng.random(), cause="work")
        return NewEvent(stream=f"neuron:n{n}", kind="neuron.activated", payload=payload, at=at)
    if roll < 0.75:
        s, t = f"n{rng.randrange(NEURONS)}", f"n{rng.randrange(NEURONS)}"
        kind = rng.choice(["connection.created", "connection.reweighted"])
        struct = ConnectionCreated if kind == "connection.created" else ConnectionReweighted
        payload = struct(
            source=s,
            target=t,
            type=rng.choice(["feeds_into", "inhibits", "triggers"]),
            weight=rng.randrange(65536),
        )
        return NewEvent(stream=f"neuron:{s}", kind=kind, payload=payload, at=at)
    if roll < 0.76:
        candidates = [n for n in live if n >= STABLE]
        if candidates:
            n = rng.choice(candidates)
            archived.add(n)
            payload = NeuronArchived(id=f"n{n}", reason="retired")
            return NewEvent(stream=f"neuron:n{n}", kind="neuron.archived", payload=payload, at=at)
    if roll < 0.9 or not memories:
        memories.append(position)
        payload = MemoryObserved(agent="inner", text=f"memory {position}", importance=None)
        return NewEvent(stream="agent:inner", kind="memory.observed", payload=payload, at=at)
    items = [RecalledItem(position=rng.choice(memories), score=1.0) for _ in range(2)]
    payload = MemoryRecalled(agent="inner", query="q", items=items, as_of=at)
    return NewEvent(stream="agent:inner", kind="memory.recalled", payload=payload, at=at)


def _memories(ledger: Ledger) -> list[int]:
    return [e.position for e in ledger.read(kinds=["memory.observed"])]


def _archived(ledger: Ledger) -> set[int]:
    return {int(e.payload.id[1:]) for e in ledger.read(kinds=["neuron.archived"])}


def build(cfg: dict[str, Any]) -> None:
    """Create neurons n0..n299, then append ``events`` random events in batches of 1000."""
    rng = random.Random(cfg["seed"])
    with Ledger.open(cfg["ledger"], durability="fast") as ledger:
        ledger.append(
            [
                NewEvent(
                    stream=f"neuron:n{n}",
                    kind="neuron.created",
                    payload=NeuronCreated(id=f"n{n}", concept=f"concept {n}", type="semantic"),
                    at=START,
                )
                for n in range(NEURONS)
            ]
        )
        archived: set[int] = set()
        memories: list[int] = []
        position = ledger.head()
        batch: list[NewEvent] = []
        for _ in range(cfg["events"]):
            position += 1
            batch.append(_event(rng, position, archived, memories))
            if len(batch) == 1000:
                ledger.append(batch)
                batch = []
        if batch:
            ledger.append(batch)
        assert ledger.head() == position


def _engine(cfg: dict[str, Any], ledger: Ledger) -> ProjectionEngine:
    return ProjectionEngine(
        ledger, cfg["store"], [NeuronGraph(), SalienceIndex()], batch_size=cfg["batch_size"]
    )


def _report(engine: ProjectionEngine, head: int) -> None:
    digests = {s.name: s.digest for s in engine.status(digest=True)}
    print(json.dumps({"head": head, "digests": digests}), flush=True)


def catch_up(cfg: dict[str, Any]) -> None:
    """Catch the store up to the head, then report."""
    with Ledger.open(cfg["ledger"]) as ledger, _engine(cfg, ledger) as engine:
        _report(engine, engine.catch_up())


def rebuild(cfg: dict[str, Any]) -> None:
    """Rebuild every projection beside the live ones, then report.

    ``rebuild_batch`` (optional) caps the events per rebuild transaction, so that a rebuild
    of a test-sized ledger commits many times (the engine reads large batches by default).
    """
    if cfg.get("rebuild_batch") and hasattr(engine_module, "REBUILD_BATCH"):
        engine_module.REBUILD_BATCH = cfg["rebuild_batch"]
    with Ledger.open(cfg["ledger"]) as ledger, _engine(cfg, ledger) as engine:
        engine.rebuild()
        _report(engine, ledger.head())


def follow(cfg: dict[str, Any]) -> None:
    """Catch up again and again; once the ``stop`` file exists, catch up a last time."""
    stop = Path(cfg["stop"])
    with Ledger.open(cfg["ledger"]) as ledger, _engine(cfg, ledger) as engine:
        Path(cfg["ready"]).touch()
        rounds = 0
        while not stop.exists():
            engine.catch_up()
            rounds += 1
            time.sleep(0.001)
        head = engine.catch_up()
        print(json.dumps({"rounds": rounds}), flush=True)
        _report(engine, head)


def append(cfg: dict[str, Any]) -> None:
    """Append ``batches`` batches of up to ``size`` events, pausing a little between them."""
    rng = random.Random(cfg["seed"])
    with Ledger.open(cfg["ledger"]) as ledger:
        archived, memories = _archived(ledger), _memories(ledger)
        for _ in range(cfg["batches"]):
            head = ledger.head()  # the only appender: positions are head + 1, head + 2...
            size = rng.randint(1, cfg["size"])
            events = [_event(rng, head + i + 1, archived, memories) for i in range(size)]
            assert ledger.append(events) == list(range(head + 1, head + size + 1))
            time.sleep(rng.random() * 0.004)
        print(json.dumps({"head": ledger.head()}), flush=True)


if __name__ == "__main__":
    modes = {
        "build": build,
        "catch_up": catch_up,
        "rebuild": rebuild,
        "follow": follow,
        "append": append,
    }
    modes[sys.argv[1]](json.loads(sys.argv[2]))
