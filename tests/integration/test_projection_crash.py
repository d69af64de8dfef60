"""SIGKILL a process in the middle of a catch-up or a rebuild; the store converges anyway.

The child (``_workers/projection_worker.py``) runs over a ledger of ~40k events with small
batches, so there are hundreds of commits to land in. The parent polls the store's catalog
(``engram_generations``) and kills the child once its checkpoint has passed a random point.
After a restart in a fresh process the store must hold exactly the state of a full rebuild
into a fresh store, and the live generation must stay readable and unchanged while a rebuild
is killed beside it.
"""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engram.ledger import Ledger
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

WORKER = Path(__file__).parent / "_workers" / "projection_worker.py"
NAMES = ("neuron_graph", "salience")


def run_worker(mode: str, cfg: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    """Run a worker to completion; return its last JSON line."""
    proc = subprocess.run(
        [sys.executable, "-W", "error", str(WORKER), mode, json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, f"{mode} worker exited {proc.returncode}:\n{proc.stderr}"
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def spawn_worker(mode: str, cfg: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-W", "error", str(WORKER), mode, json.dumps(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def generations(store: Path) -> list[tuple[int, str, str, int]]:
    """Read the catalog straight from the store file: (generation, name, state, checkpoint)."""
    path = store / "projections.db"
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(
            "SELECT generation, name, state, checkpoint FROM engram_generations ORDER BY 1"
        ).fetchall()
    except sqlite3.OperationalError:  # the catalog is not created yet
        return []
    finally:
        conn.close()


def checkpoint(store: Path, state: str) -> int:
    """The lowest checkpoint of the generations in ``state`` (0 when there are none yet)."""
    points = [c for _, name, s, c in generations(store) if s == state and name in NAMES]
    return min(points) if len(points) == len(NAMES) else 0


def kill_when(proc: subprocess.Popen[str], store: Path, state: str, at: int) -> int:
    """SIGKILL ``proc`` as soon as the ``state`` generations pass position ``at``."""
    deadline = time.monotonic() + 120
    try:
        while (reached := checkpoint(store, state)) < at:
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"the worker ended before position {at} ({proc.returncode}):\n{err}")
            assert time.monotonic() < deadline, f"no progress past {reached} in 120 s"
            time.sleep(0.0005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, f"worker exited {proc.returncode}:\n{err}"
    return reached


def fresh_digests(ledger_path: str, store: Path) -> dict[str, str]:
    with (
        Ledger.open(ledger_path) as ledger,
        ProjectionEngine(ledger, store, [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        engine.catch_up()
        return {name: engine.digest(name) for name in NAMES}


@pytest.fixture(scope="module")
def big_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, dict[str, str]]:
    """A ledger of ~40k events and the digests of a full rebuild of it into a fresh store."""
    root = tmp_path_factory.mktemp("big")
    path = str(root / "ledger.db")
    seed = random.randrange(2**31)
    print(f"ledger seed {seed}")
    run_worker("build", {"ledger": path, "events": 40_000, "seed": seed})
    with Ledger.open(path) as ledger:
        head = ledger.head()
    assert head == 40_300
    return path, head, fresh_digests(path, root / "reference")


def test_sigkill_mid_catch_up_then_restart_converges(
    big_ledger: tuple[str, int, dict[str, str]], tmp_path: Path
) -> None:
    path, head, reference = big_ledger
    store = tmp_path / "store"
    cfg = {"ledger": path, "store": str(store), "batch_size": 25}
    rng = random.Random(random.randrange(2**31))
    killed_at = []
    for _ in range(2):  # kill twice, at random points, each after some progress of its own
        start = checkpoint(store, "live")
        at = start + rng.randint(1000, (head - start) // 2)
        killed_at.append(kill_when(spawn_worker("catch_up", cfg), store, "live", at))
        after = checkpoint(store, "live")
        assert at <= after < head, f"the kill at {at} did not land mid-way ({after})"
    print(f"killed at {killed_at} of {head}")
    result = run_worker("catch_up", cfg)
    assert result == {"head": head, "digests": reference}
    assert [(n, s, c) for _, n, s, c in generations(store)] == [
        ("neuron_graph", "live", head),
        ("salience", "live", head),
    ]


def test_sigkill_mid_rebuild_keeps_the_live_generation_then_converges(
    big_ledger: tuple[str, int, dict[str, str]], tmp_path: Path
) -> None:
    path, head, reference = big_ledger
    store = tmp_path / "store"
    cfg = {"ledger": path, "store": str(store), "batch_size": 25, "rebuild_batch": 25}
    # The live generation: a catch-up up to a prefix, then left as it is.
    with (
        Ledger.open(path) as ledger,
        ProjectionEngine(ledger, store, [NeuronGraph(), SalienceIndex()]) as engine,
    ):
        prefix = random.Random(random.randrange(2**31)).randint(5000, head - 5000)
        engine.catch_up(upto=prefix)
        live = {name: engine.digest(name) for name in NAMES}
        live_generations = {g for g, _, s, _ in generations(store) if s == "live"}

        proc = spawn_worker("rebuild", cfg)
        at = random.randint(head // 4, head // 2)
        try:
            while checkpoint(store, "building") < at // 2:
                assert proc.poll() is None, proc.communicate()[1]
                # Readers see the old live state while the rebuild runs beside it.
                assert {name: engine.digest(name) for name in NAMES} == live
                time.sleep(0.002)
        except BaseException:
            proc.kill()
            proc.communicate()
            raise
        reached = kill_when(proc, store, "building", at)
        print(f"rebuild killed at {reached} of {head} (live at {prefix})")

        catalog = generations(store)
        building = [c for _, _, s, c in catalog if s == "building"]
        assert len(building) == len(NAMES), catalog
        assert all(0 < c < head for c in building), catalog
        assert {g for g, _, s, _ in catalog if s == "live"} == live_generations
        assert {name: engine.digest(name) for name in NAMES} == live
        with engine.read() as conn:
            assert conn.execute("SELECT count(*) FROM neurons").fetchone()[0] == 300

    result = run_worker("rebuild", cfg)
    assert result == {"head": head, "digests": reference}
    assert sorted((n, s, c) for _, n, s, c in generations(store)) == [
        ("neuron_graph", "live", head),
        ("salience", "live", head),
    ]


def test_sigkill_mid_rebuild_then_catch_up_serves_and_converges(
    big_ledger: tuple[str, int, dict[str, str]], tmp_path: Path
) -> None:
    path, head, reference = big_ledger
    store = tmp_path / "store"
    cfg = {"ledger": path, "store": str(store), "batch_size": 25}
    run_worker("catch_up", {**cfg, "batch_size": 5000})
    live = {g for g, _, s, _ in generations(store)}
    # The engine's own rebuild batches: the kill lands inside a large uncommitted batch.
    proc = spawn_worker("rebuild", cfg)
    deadline = time.monotonic() + 60
    while not any(s == "building" for _, _, s, _ in generations(store)):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.0005)
    time.sleep(random.random() * 0.05)
    kill_when(proc, store, "building", 0)
    catalog = generations(store)
    assert {g for g, _, s, _ in catalog if s == "live"} == live, "the kill came too late"
    # A plain catch-up after the crash: the live state is already at the head.
    result = run_worker("catch_up", cfg)
    assert result == {"head": head, "digests": reference}
    # A rebuild after the crash replaces whatever the killed one left.
    assert run_worker("rebuild", cfg) == {"head": head, "digests": reference}
    assert [s for _, _, s, _ in generations(store)] == ["live", "live"]
