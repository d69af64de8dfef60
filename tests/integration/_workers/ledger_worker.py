"""Child processes for the ledger's multi-process and crash tests (run as a script).

    ledger_worker.py contend CONFIG_JSON   read-version-then-append loops against one file
    ledger_worker.py crash CONFIG_JSON     append batches and acknowledge each one until killed
    ledger_worker.py emit CONFIG_JSON      append a scripted list of events, with pauses

Every mode opens its own :class:`Ledger`; any unexpected exception ends the process with a
traceback on stderr and a non-zero status, which the parent test reports.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from engram.ledger import NO_STREAM, ConcurrencyError, Ledger, NewEvent
from engram.ledger.catalog import MemoryObserved, NeuronActivated, SignalSent

SHARED = "shared:counter"


def _id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.002)


def contend(cfg: dict[str, Any]) -> None:
    """Mix optimistic appends on one shared stream, free appends, and exact retries."""
    k, rng = cfg["worker"], random.Random(cfg["seed"])
    own = f"worker:{k}"
    records: list[dict[str, Any]] = []
    sent: list[tuple[list[NewEvent], Any, list[int]]] = []
    if cfg["fresh"]:  # race the other workers to create the ledger
        Path(cfg["ready"]).touch()
        _wait_for(Path(cfg["go"]))
    with Ledger.open(cfg["target"], pg_schema=cfg["schema"]) as ledger:
        if not cfg["fresh"]:
            Path(cfg["ready"]).touch()
            _wait_for(Path(cfg["go"]))
        known, own_version = 0, 0
        for i in range(cfg["iterations"]):
            roll = rng.random()
            if roll < 0.5:
                for event in ledger.read_stream(SHARED, after_version=known):
                    known = event.version
                expected = known
                events = [
                    NewEvent(
                        stream=SHARED,
                        kind="neuron.activated",
                        payload=NeuronActivated(id=f"w{k}", strength=0.5, cause=f"{k}:{i}"),
                        actor=f"worker-{k}",
                        id=_id(rng),
                    )
                ]
                expect: Any = expected or NO_STREAM
                if rng.random() < 0.5:
                    # A second stream in the same batch: a shared conflict must drop it too.
                    events.append(
                        NewEvent(
                            stream=own,
                            kind="signal.sent",
                            payload=SignalSent(to="*", topic=f"{k}:{i}"),
                            actor=f"worker-{k}",
                            id=_id(rng),
                        )
                    )
                    expect = {SHARED: expected or NO_STREAM, own: own_version or NO_STREAM}
                if rng.random() < 0.5:
                    time.sleep(rng.random() * 0.003)  # widen the read-to-append window
                record: dict[str, Any] = {
                    "op": "shared",
                    "expected": expected,
                    "ids": [e.id for e in events],
                    "streams": [e.stream for e in events],
                }
                try:
                    positions = ledger.append(events, expect=expect)
                except ConcurrencyError as exc:
                    record.update(ok=False, stream=exc.stream, actual=exc.actual)
                else:
                    record.update(ok=True, positions=positions)
                    sent.append((events, expect, positions))
                    known = expected + 1
                    own_version += len(events) - 1
                records.append(record)
            elif roll < 0.9 or not sent:
                events = []
                for _ in range(rng.randint(1, 5)):
                    stream = own if rng.random() < 0.5 else f"free:{rng.randrange(3)}"
                    events.append(
                        NewEvent(
                            stream=stream,
                            kind="memory.observed",
                            payload=MemoryObserved(agent=f"w{k}", text=f"note {i}", tags=[own]),
                            actor=f"worker-{k}",
                            id=_id(rng),
                        )
                    )
                positions = ledger.append(events)
                own_version += sum(e.stream == own for e in events)
                sent.append((events, None, positions))
                records.append(
                    {
                        "op": "free",
                        "ok": True,
                        "ids": [e.id for e in events],
                        "streams": [e.stream for e in events],
                        "positions": positions,
                    }
                )
            else:
                events, expect, original = sent[rng.randrange(len(sent))]
                positions = (
                    ledger.append(events)
                    if expect is None
                    else ledger.append(events, expect=expect)
                )
                records.append(
                    {
                        "op": "retry",
                        "ok": True,
                        "ids": [e.id for e in events],
                        "original": original,
                        "positions": positions,
                    }
                )
    Path(cfg["out"]).write_text(json.dumps(records))


def crash(cfg: dict[str, Any]) -> None:
    """Append batches forever; after each acknowledged append, fsync its ids and positions."""
    rng = random.Random(cfg["seed"])
    streams = [f"crash:{cfg['round']}:{j}" for j in range(3)] + ["crash:all"]
    with (
        Ledger.open(cfg["target"], durability=cfg["durability"], pg_schema=cfg["schema"]) as ledger,
        open(cfg["acks"], "a", encoding="utf-8") as acks,
    ):
        while True:
            batch, size = _id(rng), rng.randint(1, 50)
            events = [
                NewEvent(
                    stream=rng.choice(streams),
                    kind="signal.sent",
                    payload=SignalSent(to="crash", topic=batch, body=f"{n}/{size}"),
                    id=_id(rng),
                )
                for n in range(size)
            ]
            positions = ledger.append(events)
            acks.write(
                json.dumps({"batch": batch, "ids": [e.id for e in events], "positions": positions})
                + "\n"
            )
            acks.flush()
            os.fsync(acks.fileno())


def emit(cfg: dict[str, Any]) -> None:
    """Append each scripted event after its pause; print one JSON line per acknowledgement."""
    with Ledger.open(cfg["target"], pg_schema=cfg.get("schema", "engram")) as ledger:
        print(json.dumps({"ready": True}), flush=True)
        for step in cfg["steps"]:
            time.sleep(step["pause"])
            event = NewEvent(
                stream=step["stream"], kind=step["kind"], payload=step["payload"], id=step["id"]
            )
            [position] = ledger.append([event])
            acked = time.time()
            print(json.dumps({"id": step["id"], "position": position, "acked": acked}), flush=True)


if __name__ == "__main__":
    {"contend": contend, "crash": crash, "emit": emit}[sys.argv[1]](json.loads(sys.argv[2]))
