"""Processes that open a new ledger or projection store at the same moment all open it.

Each one switches the new SQLite file to WAL; the switch needs an exclusive lock, and SQLite
refuses it at once ("database is locked"), without waiting, to a connection that asks while
another holds the lock. Before ``into_wal`` retried, about one round in three of four
processes opening one new projection store failed (one in twenty for a ledger).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram.ledger import Ledger
from engram.projections.store import ProjectionStore

PROCESSES = 4
ROUNDS = 12


def _open_store(path: str) -> None:
    ProjectionStore(path, busy_timeout=10).close()


def _open_ledger(path: str) -> None:
    Ledger.open(os.path.join(path, "ledger.db")).close()


def _opener(opener: Callable[[str], None], path: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    try:
        opener(path)
        out.put("")
    except Exception as exc:  # reported to the test, which names it
        out.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.parametrize("opener", [_open_store, _open_ledger], ids=["store", "ledger"])
def test_processes_opening_a_new_file_at_once_all_open_it(
    tmp_path: Path, opener: Callable[[str], None]
) -> None:
    ctx = mp.get_context("fork")
    failures = []
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"round-{round_}")
        os.makedirs(path)
        barrier, out = ctx.Barrier(PROCESSES), ctx.Queue()
        procs = [
            ctx.Process(target=_opener, args=(opener, path, barrier, out)) for _ in range(PROCESSES)
        ]
        for p in procs:
            p.start()
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * PROCESSES
        failures += [f"round {round_}: {r}" for r in results if r]
    assert failures == []
