"""Many processes closing memories on one store at once: every one succeeds, the file holds.

Each process saves the semantic index file when it closes. With a fixed temp name, eight
processes on one store saw FileNotFoundError at close, after their recalls were recorded —
a caller that retried would have written twice. Now saves use unique temp names under a
lock, a save that cannot happen is skipped with a log line, and the file that remains loads
without a rebuild and serves every vector of the table.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import engram
from engram.projections.semantic import VectorSearcher

WORKER = Path(__file__).parent / "_workers" / "memory_worker.py"
PROCESSES = 16
NOTES = 3


def test_sixteen_processes_observe_recall_and_close_on_one_store(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger) as memory:  # create the ledger and the store first
        memory.agent("seed").observe("the store exists")
    children = [
        subprocess.Popen(
            [sys.executable, "-W", "error", str(WORKER), ledger, f"agent{i}", str(NOTES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    failures = []
    for child in children:
        _, err = child.communicate(timeout=300)
        if child.returncode != 0:
            failures.append(f"exit {child.returncode}: {err.strip()[-500:]}")
    assert not failures, "\n".join(failures)

    with engram.open_memory(ledger) as memory:
        memory.engine.catch_up()
        searcher = VectorSearcher(
            memory.settings.projection_store,
            memory.embedder.dimension,
            str(memory.embedder.fingerprint),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a rebuild from the table would warn
            with memory.engine.read() as conn:
                searcher.sync(conn)
        assert searcher.size == 1 + PROCESSES * NOTES
        observed = sum(1 for _ in memory.ledger.read(kinds=["memory.observed"]))
        assert observed == 1 + PROCESSES * NOTES
    store = Path(memory.settings.projection_store)
    assert not list(store.glob("*.tmp")), "a temp file was left behind"
