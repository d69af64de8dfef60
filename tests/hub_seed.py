"""A small brain for the hub's tests: neurons, connections, waves, memories, a lesson to review.

One observation carries a script payload: the hub must show it as text, never run it.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import IO, Any, NamedTuple

import engram
from engram.ledger import NewEvent
from engram.ledger.catalog import JobCompleted, MemoryReflected

XSS = '<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2">'
RULE = "Check the migration lock before every deploy."


class Seeded(NamedTuple):
    """What the seed wrote, for the tests to find."""

    suggestion: str  # pending, to apply
    other: str  # pending, to refuse or modify
    xss_position: int
    reflection_position: int
    neurons: list[str]


def seed(ledger: str, **options: Any) -> Seeded:
    """Write the brain into ``ledger`` (created; ``options`` as for open_memory)."""
    start = datetime.now(UTC) - timedelta(hours=6)
    with engram.open_memory(ledger, actor="seed", **options) as memory:
        net = memory.network
        names = []
        types = ("core", "contextual", "episodic", "semantic")
        for i in range(12):
            name = f"n{i:02d}"
            net.create_neuron(name, f"concept {i}", types[i % 4], at=start + timedelta(minutes=i))
            names.append(name)
        kinds = ("feeds_into", "influences", "inhibits", "recalls", "triggers")
        for i in range(12):
            net.connect(
                names[i],
                names[(i + 1) % 12],
                kinds[i % 5],  # type: ignore[arg-type]
                20_000 + 3_000 * i,
                at=start + timedelta(minutes=20 + i),
            )
            if i % 3 == 0:
                net.connect(
                    names[i],
                    names[(i + 5) % 12],
                    "influences",
                    30_000,
                    at=start + timedelta(minutes=40 + i),
                )
        for hour in range(1, 6):
            when = start + timedelta(hours=hour)
            net.stimulate({names[hour]: 0.9, names[hour + 3]: 0.6}, cause="seed", at=when)
            net.vitality(as_of=when, record=True)
        alice = memory.agent("alice")
        first = alice.observe("The deploy failed at 3am: the migration held a lock.")
        xss = alice.observe(XSS)
        alice.observe("Rolled back and the site came up again.")
        (observed,) = memory.ledger.get([first])
        (reflected,) = memory.ledger.append(
            NewEvent.of(
                MemoryReflected(
                    agent="alice",
                    text="Night deploys fail on locks.",
                    evidence=[observed.id],
                    depth=1,
                ),
                stream="agent:alice",
                actor="alice",
            )
        )
        scar_at = memory.scars("alice").record(
            "failure", "the deploy failed on a migration lock", "check the lock first"
        )
        (scar,) = memory.ledger.get([scar_at])
        lessons = memory.lessons()
        suggestion = lessons.propose([scar.id], "rules", RULE)
        other = lessons.propose([scar.id], "rules", "Never deploy at night.")
        memory.memo("standup").post("alice", "looking at the <b>lock</b>")
        for hour in range(3):
            window = start + timedelta(hours=2 * hour)
            memory.ledger.append(
                NewEvent.of(
                    JobCompleted(
                        job="consolidation",
                        window_start=window,
                        window_end=window + timedelta(hours=2),
                        counts={"events": 3 + hour},
                        duration_ms=40.0 + hour,
                    ),
                    stream="job:consolidation",
                    actor="daemon",
                    at=window + timedelta(hours=2),
                )
            )
        memory.engine.catch_up()
    return Seeded(suggestion, other, xss, reflected, names)


TOKEN = "browser-token-0123456789abcdef"


class Running(NamedTuple):
    """A hub served by ``engram hub`` in its own process."""

    process: subprocess.Popen[str]
    base: str  # http://127.0.0.1:PORT


def start_hub(ledger: str, *options: str, timeout: float = 60.0) -> Running:
    """Start ``engram hub`` on a free port over ``ledger``; return once it listens."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "engram",
            "hub",
            "--ledger",
            ledger,
            "--port",
            "0",
            "--token",
            TOKEN,
            *options,
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        lines.append(line)
        found = re.search(r"engram hub at (http://[^/]+)/\?token=", line)
        if found:
            # Keep draining stderr so the server never blocks on a full pipe.
            threading.Thread(target=_drain, args=(process.stderr,), daemon=True).start()
            return Running(process, found.group(1))
        if not line and process.poll() is not None:
            break
    process.kill()
    raise AssertionError("engram hub did not start:\n" + "".join(lines))


def _drain(stream: IO[str]) -> None:
    with contextlib.suppress(ValueError, OSError):  # closed by stop_hub
        for _ in stream:
            pass


def stop_hub(running: Running) -> None:
    """Stop the hub (SIGTERM, then SIGKILL after 10 s)."""
    running.process.terminate()
    try:
        running.process.wait(10)
    except subprocess.TimeoutExpired:
        running.process.kill()
        running.process.wait(10)
    if running.process.stderr is not None:
        running.process.stderr.close()
