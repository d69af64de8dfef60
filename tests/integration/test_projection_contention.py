"""Two processes catch up the same projection store at once while a third appends.

Each batch holds the store's write lock and re-reads the checkpoints inside it, so neither
catcher applies an event the other applied: the final state equals a fresh full rebuild, and
every neuron's activation count equals its number of ``neuron.activated`` events.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from test_projection_crash import NAMES, WORKER, fresh_digests, generations, run_worker

from engram.ledger import Ledger


def test_two_catchers_and_an_appender_converge_without_double_apply(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    store = tmp_path / "store"
    seed = random.randrange(2**31)
    print(f"contention seed {seed}")
    run_worker("build", {"ledger": path, "events": 5000, "seed": seed})
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    catchers = [
        subprocess.Popen(
            [
                sys.executable,
                "-W",
                "error",
                str(WORKER),
                "follow",
                json.dumps(
                    {
                        "ledger": path,
                        "store": str(store),
                        "batch_size": size,
                        "stop": str(stop),
                        "ready": f"{ready}{k}",
                    }
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k, size in enumerate((17, 40))
    ]
    try:
        deadline = time.monotonic() + 60
        while not all(Path(f"{ready}{k}").exists() for k in range(2)):
            assert all(p.poll() is None for p in catchers), [p.communicate() for p in catchers]
            assert time.monotonic() < deadline
            time.sleep(0.005)
        appended = run_worker(
            "append", {"ledger": path, "seed": seed + 1, "batches": 150, "size": 40}
        )
        stop.touch()
        outputs = [p.communicate(timeout=120) for p in catchers]
    finally:
        for p in catchers:
            p.kill()
            p.communicate()
    for p, (_, err) in zip(catchers, outputs, strict=True):
        assert p.returncode == 0, err
    reports = [json.loads(out.splitlines()[-1]) for out, _ in outputs]
    rounds = [json.loads(out.splitlines()[0])["rounds"] for out, _ in outputs]
    print(f"catch-up rounds while appending: {rounds}")
    head = appended["head"]
    assert head > 5300
    reference = fresh_digests(path, tmp_path / "reference")
    assert reports == [{"head": head, "digests": reference}] * 2
    assert sorted((n, s, c) for _, n, s, c in generations(store)) == [
        (name, "live", head) for name in NAMES
    ]

    with Ledger.open(path) as ledger:
        activations = Counter(e.payload.id for e in ledger.read(kinds=["neuron.activated"]))
        archived = {e.payload.id for e in ledger.read(kinds=["neuron.archived"])}
    conn = sqlite3.connect(store / "projections.db")
    try:
        counts = dict(conn.execute("SELECT id, activation_count FROM neurons"))
        live = {n for (n,) in conn.execute("SELECT id FROM neurons WHERE archived_at IS NULL")}
    finally:
        conn.close()
    assert live == set(counts) - archived
    assert {n: counts[n] for n in live} == {n: activations[n] for n in live}
    assert counts == {n: activations[n] for n in counts}  # archived neurons keep theirs
