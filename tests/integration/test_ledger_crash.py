"""SIGKILL a process in the middle of appending; acknowledged events survive, batches stay whole.

The child (``_workers/ledger_worker.py crash``) appends batches of 1-50 events forever; each
event carries its batch id and size (``SignalSent(topic=batch, body="n/size")``), and after
every acknowledged append the child fsyncs the batch's ids and positions to a side file. The
parent kills it at a random moment and reopens the ledger. Meanwhile a writer in this process
keeps appending beside it and must never fail, not even while the child dies holding the lock.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import SignalSent

WORKER = Path(__file__).parent / "_workers" / "ledger_worker.py"


class _Survivor:
    """Append small batches from this process while the child lives and dies beside it."""

    def __init__(self, target: str, schema: str, durability: str, rng: random.Random) -> None:
        self.ledger = Ledger.open(target, durability=durability, pg_schema=schema)
        self.acked: list[tuple[list[str], list[int]]] = []
        self.error: BaseException | None = None
        self._rng = random.Random(rng.randrange(2**31))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch, size = str(uuid.uuid4()), self._rng.randint(1, 5)
                events = [
                    NewEvent(
                        stream="survivor",
                        kind="signal.sent",
                        payload=SignalSent(to="survivor", topic=batch, body=f"{n}/{size}"),
                        id=str(uuid.uuid4()),
                    )
                    for n in range(size)
                ]
                self.acked.append(([e.id for e in events], self.ledger.append(events)))
                time.sleep(self._rng.random() * 0.005)
        except BaseException as exc:  # e.g. "database is locked" after the child died
            self.error = exc

    def stop(self) -> list[tuple[list[str], list[int]]]:
        self._stop.set()
        self._thread.join(60)
        self.ledger.close()
        assert not self._thread.is_alive()
        if self.error is not None:
            raise AssertionError(f"the surviving writer failed: {self.error!r}") from self.error
        return self.acked


def _crash_round(
    target: str, schema: str, durability: str, acks: Path, round_: int, rng: random.Random
) -> int:
    """Run one child until it has acknowledged a random number of batches; SIGKILL it."""
    cfg = {
        "target": target,
        "schema": schema,
        "durability": durability,
        "acks": str(acks),
        "round": round_,
        "seed": rng.randrange(2**31),
    }
    if acks.exists():  # a torn last line of the round before was never acknowledged:
        data = acks.read_bytes()  # drop it, or this child's first line would continue it
        acks.write_bytes(data[: data.rfind(b"\n") + 1])
    before = _count_lines(acks)
    wanted = before + rng.randint(1, 30)
    proc = subprocess.Popen(
        [sys.executable, "-W", "error", str(WORKER), "crash", json.dumps(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _count_lines(acks) < wanted:
            assert proc.poll() is None, f"child died on its own:\n{proc.communicate()[1]}"
            assert time.monotonic() < deadline, "child acknowledged too little in 60 s"
            time.sleep(0.001)
        time.sleep(rng.random() * 0.02)  # land anywhere: mid-transaction, mid-fsync, between
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"child exited {proc.returncode}:\n{stderr}"
    return _count_lines(acks) - before


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    # A kill can cut the last line short: only complete lines were acknowledged.
    return path.read_bytes().count(b"\n")


def _acknowledged(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    return [json.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines()]


def _check_recovered(
    target: str,
    schema: str,
    durability: str,
    acks: Path,
    survived: list[tuple[list[str], list[int]]],
) -> int:
    with Ledger.open(target, durability=durability, pg_schema=schema) as ledger:
        events = list(ledger.read())
        report = ledger.verify()
        assert report.ok, report
        assert [e.position for e in events] == list(range(1, len(events) + 1))
        by_position = {e.position: e for e in events}

        acknowledged = [(a["ids"], a["positions"]) for a in _acknowledged(acks)]
        for ids, positions in acknowledged + survived:
            for event_id, position in zip(ids, positions, strict=True):
                assert position in by_position, f"acknowledged position {position} lost"
                assert by_position[position].id == event_id, f"position {position} changed"

        batches: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
        for e in events:
            if e.kind == "signal.sent" and e.payload.to in ("crash", "survivor"):
                n, size = map(int, e.payload.body.split("/"))
                batches[e.payload.to, e.payload.topic].append((e.position, n, size))
        for batch, members in batches.items():
            size = members[0][2]
            assert [n for _, n, _ in members] == list(range(size)), f"batch {batch} is partial"
            first = members[0][0]
            assert [p for p, _, _ in members] == list(range(first, first + size))

        # Still writable: the crash left no lock, no torn page, no broken chain head.
        probe = NewEvent(stream="probe", kind="signal.sent", payload=SignalSent(to="x", topic="y"))
        [position] = ledger.append([probe])
        assert position == len(events) + 1
        assert ledger.verify().ok
        return sum(writer == "crash" for writer, _ in batches)


def _crash_rounds(target: str, schema: str, durability: str, tmp: Path, rounds: int) -> None:
    seed = random.randrange(2**31)
    print(f"crash seed {seed} ({rounds} rounds, durability={durability})")
    rng = random.Random(seed)
    acks = tmp / "acks.jsonl"
    Ledger.open(target, durability=durability, pg_schema=schema).close()
    survived: list[tuple[list[str], list[int]]] = []
    for round_ in range(rounds):
        survivor = _Survivor(target, schema, durability, rng)
        try:
            acked = _crash_round(target, schema, durability, acks, round_, rng)
        finally:
            survived += survivor.stop()
        assert acked >= 1
        batches = _check_recovered(target, schema, durability, acks, survived)
        assert batches >= _count_lines(acks)
    print(f"{_count_lines(acks)} child batches and {len(survived)} survivor batches acknowledged")
    assert os.path.getsize(acks) > 0


@pytest.mark.parametrize("durability", ["full", "fast"])
def test_sqlite_sigkill_keeps_acknowledged_batches(
    tmp_ledger_path: str, tmp_path: Path, durability: str
) -> None:
    _crash_rounds(tmp_ledger_path, "engram", durability, tmp_path, rounds=3)


@pytest.mark.postgres
@pytest.mark.parametrize("durability", ["full", "fast"])
def test_postgres_sigkill_keeps_acknowledged_batches(
    pg_dsn: str, pg_schema: str, tmp_path: Path, durability: str
) -> None:
    _crash_rounds(pg_dsn, pg_schema, durability, tmp_path, rounds=3)


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["full", "fast"])
def test_sqlite_sigkill_soak(tmp_ledger_path: str, tmp_path: Path, durability: str) -> None:
    _crash_rounds(tmp_ledger_path, "engram", durability, tmp_path, rounds=20)
