"""Processes append to one ledger at once, racing on one shared stream.

Each worker (``_workers/ledger_worker.py contend``) loops: read the shared stream's version,
append with that exact expectation (sometimes with a second stream in the batch), append free
batches, or retry an acknowledged batch verbatim. It reports every outcome; the parent then
checks the ledger against the reports. SQLite is the case that matters (one file, many
processes); PostgreSQL runs the same script.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram.ledger import Event, Ledger

WORKER = Path(__file__).parent / "_workers" / "ledger_worker.py"
SHARED = "shared:counter"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_ledger_path: str) -> Iterator[tuple[str, str]]:
    """Yield (location, pg_schema) of a ledger that does not exist yet, on each backend."""
    if request.param == "sqlite":
        yield tmp_ledger_path, "engram"
    else:
        yield request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_schema")


def _run_workers(
    target: tuple[str, str], tmp: Path, workers: int, iterations: int, seed: int, *, fresh: bool
) -> list[list[Any]]:
    location, schema = target
    if not fresh:
        Ledger.open(location, pg_schema=schema).close()  # create it once, before the race
    go = tmp / "go"
    procs, outs, readies = [], [], []
    for k in range(workers):
        out, ready = tmp / f"worker{k}.json", tmp / f"ready{k}"
        cfg = {
            "target": location,
            "schema": schema,
            "fresh": fresh,
            "worker": k,
            "iterations": iterations,
            "seed": seed * 100 + k,
            "out": str(out),
            "ready": str(ready),
            "go": str(go),
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-W", "error", str(WORKER), "contend", json.dumps(cfg)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        outs.append(out)
        readies.append(ready)
    deadline = time.monotonic() + 60
    while not all(r.exists() for r in readies) and time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.01)
    go.touch()
    failures = []
    for k, proc in enumerate(procs):
        _, stderr = proc.communicate(timeout=240)
        if proc.returncode != 0:
            failures.append(f"worker {k} exited {proc.returncode}:\n{stderr}")
    assert not failures, "\n".join(failures)
    return [json.loads(out.read_text()) for out in outs]


def _check_contiguous_streams(events: list[Event]) -> dict[str, int]:
    versions: dict[str, int] = defaultdict(int)
    for e in events:
        versions[e.stream] += 1
        assert e.version == versions[e.stream], (
            f"stream {e.stream}: version {e.version} at position {e.position}, "
            f"expected {versions[e.stream]}"
        )
    return versions


def test_processes_contend_on_one_ledger(target: tuple[str, str], tmp_path: Path) -> None:
    # A PostgreSQL commit waits for its WAL flush (~8 ms here): fewer rounds, same races.
    iterations = 300 if target[1] == "engram" else 120
    _contend(target, tmp_path, workers=4, iterations=iterations, fresh=False)


def test_processes_race_to_create_a_new_ledger(target: tuple[str, str], tmp_path: Path) -> None:
    _contend(target, tmp_path, workers=6, iterations=20, fresh=True)


def _contend(
    target: tuple[str, str], tmp_path: Path, *, workers: int, iterations: int, fresh: bool
) -> None:
    seed = random.randrange(2**31)
    print(f"contention seed {seed} ({workers} workers x {iterations})")
    reports = _run_workers(target, tmp_path, workers, iterations, seed, fresh=fresh)

    with Ledger.open(target[0], pg_schema=target[1]) as ledger:
        events = list(ledger.read())
        report = ledger.verify()
        head = ledger.head()
    by_id = {e.id: e for e in events}
    by_position = {e.position: e for e in events}

    # Gap-free positions, unique ids, contiguous versions, an intact chain.
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert head == len(events)
    assert len(by_id) == len(events), "duplicate ids stored"
    versions = _check_contiguous_streams(events)
    assert report.ok, report
    assert report.checked == head

    acknowledged: set[str] = set()
    successes, conflicts, attempts = [], [], 0
    for k, records in enumerate(reports):
        assert len(records) == iterations
        for rec in records:
            if rec["op"] == "shared":
                attempts += 1
            if not rec["ok"]:
                conflicts.append((k, rec))
                continue
            positions, ids = rec["positions"], rec["ids"]
            # The caller's positions hold exactly the caller's events, in batch order.
            assert positions == list(range(positions[0], positions[0] + len(ids)))
            for position, event_id in zip(positions, ids, strict=True):
                assert by_position[position].id == event_id, (k, rec)
                assert by_position[position].actor == f"worker-{k}"
            if rec["op"] == "retry":
                assert positions == rec["original"], f"retry moved: {rec}"
                continue
            acknowledged.update(ids)
            if rec["op"] == "shared":
                successes.append((k, rec))
                assert by_id[ids[0]].version == rec["expected"] + 1, rec

    # Every stored event was acknowledged to someone, and nothing of a conflict was stored.
    assert set(by_id) == acknowledged
    for _, rec in conflicts:
        assert rec["stream"] == SHARED, f"only the shared stream can conflict: {rec}"
        assert rec["actual"] > rec["expected"], f"a conflict needs a newer version: {rec}"
        assert not set(rec["ids"]) & set(by_id), f"part of a refused batch was stored: {rec}"
        # The version this attempt wanted belongs to another successful attempt.
        winner = next(e for e in events if e.stream == SHARED and e.version == rec["expected"] + 1)
        assert winner.id not in rec["ids"]

    shared_versions = Counter(by_id[rec["ids"][0]].version for _, rec in successes)
    assert attempts == len(successes) + len(conflicts)
    assert versions[SHARED] == len(successes) == len(shared_versions)
    assert max(shared_versions.values()) == 1
    print(
        f"{len(events)} events; shared stream: {attempts} attempts, {len(successes)} won, "
        f"{len(conflicts)} conflicts"
    )
    if not fresh:  # the short creation race may, rarely, see no conflict at all
        assert conflicts, "the workers never raced; the test proved nothing about conflicts"
