"""The daemon as real processes: SIGKILL mid-window, SIGTERM, two daemons on one PostgreSQL ledger.

``engram run`` runs as a child process with its own config file. After any crash the ledger
must hold each (job, window) at most once, every window's effects exactly with its
``job.completed``, and windows that tile time without overlap.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from engram.jobs.status import liveness, read_status, status_path
from engram.ledger import Event, Ledger, NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronCreated


def _config(path: Path, ledger: str, store: Path, body: str, schema: str | None = None) -> Path:
    lines = [f'ledger = "{ledger}"', f'projections = "{store}"']
    if schema:
        lines.append(f'pg_schema = "{schema}"')
    path.write_text("\n".join(lines) + "\n" + body, encoding="utf-8")
    return path


def _kill_then_finish(
    config: Path, ledger_path: str, rng: random.Random, *, pause: tuple[float, float]
) -> tuple[str, list[Event]]:
    """SIGKILL the daemon three times after a random pause, then run it ``--once`` to the end.

    Return the last run's output and every event of the ledger.
    """
    for _ in range(3):
        proc = _spawn(config)
        time.sleep(rng.uniform(*pause))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    with _spawn(config, "--once") as proc:
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    with Ledger.open(ledger_path, readonly=True) as ledger:
        return out, list(ledger.read())


def _spawn(config: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ENGRAM_CONFIG": str(config)}
    env.pop("ENGRAM_LEDGER", None)
    return subprocess.Popen(
        [
            sys.executable,
            "-W",
            "error",
            "-m",
            "engram",
            "run",
            "--beat",
            "0.2",
            "--poll",
            "0.1",
            *args,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _graph(ledger: Ledger, n: int, at: datetime, fan: int = 8) -> int:
    """Append n neurons, each connected to the next ``fan``, all strongly active at ``at``."""
    names = [f"n{i:05d}" for i in range(n)]
    ledger.append(
        [
            NewEvent.of(
                NeuronCreated(id=x, concept=x, type="semantic"), stream=f"neuron:{x}", at=at
            )
            for x in names
        ]
    )
    links = [
        NewEvent.of(
            ConnectionCreated(source=x, target=names[(i + k) % n], type="feeds_into", weight=1000),
            stream=f"neuron:{x}",
            at=at,
        )
        for i, x in enumerate(names)
        for k in range(1, fan + 1)
    ]
    for start in range(0, len(links), 5000):
        ledger.append(links[start : start + 5000])
    fire = [
        NewEvent.of(
            NeuronActivated(id=x, strength=1.0), stream=f"neuron:{x}", at=at + timedelta(minutes=1)
        )
        for x in names
        for _ in range(4)
    ]
    ledger.append(fire)
    return n * fan


def _check_windows(events: list[Event]) -> dict[str, list[tuple[datetime, datetime]]]:
    """Each (job, window) once; a job's windows tile time; effects only with their window."""
    by_job: dict[str, list[tuple[datetime, datetime]]] = {}
    for e in events:
        if e.kind == "job.completed":
            by_job.setdefault(e.payload.job, []).append(
                (e.payload.window_start, e.payload.window_end)
            )
    for job, windows in by_job.items():
        assert len(windows) == len(set(windows)), f"{job}: a window completed twice"
        ordered = sorted(windows)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ordered)), (
            f"{job}: windows overlap or leave a gap: {ordered}"
        )
    ids = Counter(e.id for e in events)
    assert max(ids.values(), default=1) == 1
    return by_job


def test_sigkill_mid_window_then_restart_completes_it_once(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    print(f"seed {seed}")
    ledger_path = str(tmp_path / "ledger.db")
    now = datetime.now(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    with Ledger.open(ledger_path, durability="fast") as ledger:
        edges = _graph(ledger, 1500, today - timedelta(hours=12))
    config = _config(
        tmp_path / "engram.toml",
        ledger_path,
        tmp_path / "store",
        '[jobs.sleep]\nevery = "1d"\nthreshold = 40000\n[jobs.archive]\nevery = "1d"\n',
    )
    out, events = _kill_then_finish(config, ledger_path, rng, pause=(1.0, 3.0))
    windows = _check_windows(events)
    assert windows["sleep"] == [(today - timedelta(days=1), today)], out
    reweighted = [e for e in events if e.kind == "connection.reweighted"]
    assert len(reweighted) == edges
    assert {e.payload.weight for e in reweighted} == {1512}
    completed = [e for e in events if e.kind == "job.completed" and e.payload.job == "sleep"]
    assert completed[0].payload.counts["reweighted"] == edges
    # The batch was atomic: the window's effects sit right before its job.completed.
    assert max(e.position for e in reweighted) < completed[0].position
    assert liveness(read_status(status_path(tmp_path / "store"))).state != "running"


def test_sigterm_stops_the_daemon_cleanly(tmp_path: Path) -> None:
    ledger_path = str(tmp_path / "ledger.db")
    Ledger.open(ledger_path).close()
    config = _config(tmp_path / "engram.toml", ledger_path, tmp_path / "store", "")
    proc = _spawn(config)
    deadline = time.monotonic() + 30
    while liveness(read_status(status_path(tmp_path / "store"))).state != "running":
        assert time.monotonic() < deadline, "the daemon never wrote a beat"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    record = read_status(status_path(tmp_path / "store"))
    assert liveness(record).state == "stopped"
    env = {**os.environ, "ENGRAM_CONFIG": str(config)}
    env.pop("ENGRAM_LEDGER", None)
    status = subprocess.run(
        [sys.executable, "-m", "engram", "status"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "daemon: stopped" in status.stderr
    assert record is not None
    assert record["stopped"]


def test_sigterm_after_embedding_in_the_daemon_exits_0_and_keeps_the_vectors(
    tmp_path: Path,
) -> None:
    """The follower thread embeds new memories; the cache they go to is on disk, and a
    SIGTERM afterwards is a clean stop (exit 0, no traceback), as a service manager expects."""
    import sqlite3

    import engram

    ledger_path = str(tmp_path / "ledger.db")
    store = tmp_path / "store"
    config = _config(tmp_path / "engram.toml", ledger_path, store, "")
    with engram.open_memory(ledger_path, projections=str(store)) as memory:
        memory.agent("alice").observe("the cat sat on the mat")
    proc = _spawn(config)
    try:
        with Ledger.open(ledger_path) as ledger:
            deadline = time.monotonic() + 30
            while liveness(read_status(status_path(store))).state != "running":
                assert time.monotonic() < deadline, "the daemon never wrote a beat"
                time.sleep(0.1)
            with engram.open_memory(ledger_path, projections=str(tmp_path / "other")) as other:
                position = other.agent("bob").observe("a dog barked at the postman")
            while (read_status(status_path(store)) or {}).get("checkpoint", 0) < position:
                assert time.monotonic() < deadline, "the daemon never caught up"
                time.sleep(0.1)
            assert ledger.head() >= position
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    with sqlite3.connect(store / "embeddings.db") as conn:
        (count,) = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()
    assert count >= 2, "the daemon's embeddings never reached the cache file"


def test_two_daemons_on_one_postgres_ledger_run_each_window_once(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    seconds = float(os.environ.get("ENGRAM_TEST_DAEMON_SECONDS", "15"))
    body = (
        '[jobs.sleep]\nevery = "1s"\nthreshold = 40000\n'
        '[jobs.archive]\nevery = "2s"\nneuron_age = "1s"\nmin_activations = 1\n'
    )
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as ledger:
        configs = [
            _config(tmp_path / f"d{i}.toml", pg_dsn, tmp_path / f"store{i}", body, pg_schema)
            for i in (0, 1)
        ]
        procs = [_spawn(c) for c in configs]
        try:
            end = time.monotonic() + seconds
            i = 0
            while time.monotonic() < end:
                at = datetime.now(UTC)
                names = [f"x{i}", f"y{i}"]
                ledger.append(
                    [
                        NewEvent.of(
                            NeuronCreated(id=x, concept=x, type="semantic"),
                            stream=f"neuron:{x}",
                            at=at,
                        )
                        for x in names
                    ]
                    + [
                        NewEvent.of(
                            ConnectionCreated(
                                source=names[0], target=names[1], type="feeds_into", weight=100
                            ),
                            stream=f"neuron:{names[0]}",
                            at=at,
                        )
                    ]
                    + [
                        NewEvent.of(
                            NeuronActivated(id=x, strength=1.0), stream=f"neuron:{x}", at=at
                        )
                        for x in names
                        for _ in range(4)
                    ]
                )
                i += 1
                time.sleep(0.25)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            results = [proc.communicate(timeout=60) for proc in procs]
        for proc, (_, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, err
        events = list(ledger.read())
    windows = _check_windows(events)
    assert len(windows["sleep"]) >= seconds / 2
    assert len(windows["archive"]) >= seconds / 4
    # Every pair that fired together was consolidated exactly once, in the window it fired in.
    reweighted = Counter(e.payload.source for e in events if e.kind == "connection.reweighted")
    assert reweighted
    assert set(reweighted.values()) == {1}
    archived = Counter(e.payload.id for e in events if e.kind == "neuron.archived")
    assert not archived or set(archived.values()) == {1}
