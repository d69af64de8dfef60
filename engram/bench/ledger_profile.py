"""Where each microsecond of an append and a replay goes: CPU time per event, by part.

``python -m engram.bench.ledger_profile [--append N] [--replay N]`` appends N events in
batches of 100 (``durability="fast"``: no fsync, so what is left is the CPU engram and SQLite
spend) and replays N events, each part measured alone with ``time.thread_time`` (the CPU time
of this thread, which a shared machine's other load stretches far less than the clock): the
payload check and envelope (``prepare``), sealing, the hash chain, SQLite's insert and commit
of the same rows into the ledger's table and into a table without its triggers (what raw
sqlite3 pays), and the replay's page fetch, payload decoding, time parsing and the rest
(ADR 0059). Medians of 5 repetitions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from engram.bench.workload import SQLITE_DDL, SQLITE_INSERT, RawRows, Workload
from engram.ledger import ANY, KeyStore, Ledger, NewEvent, Sealer, default_registry
from engram.ledger.catalog import KINDS
from engram.ledger.codec import GENESIS_HASH, link
from engram.ledger.planning import prepare

__all__ = ["main"]

BATCH = 100
_clock = time.thread_time


def _per_event(run: Callable[[], object], n: int, repeat: int = 5) -> float:
    samples = []
    for _ in range(repeat):
        start = _clock()
        run()
        samples.append((_clock() - start) / n * 1e6)
    return statistics.median(samples)


def _fresh(path: str) -> str:
    for suffix in ("", "-wal", "-shm", ".keys", ".keys-wal", ".keys-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    return path


def _append_parts(directory: str, label: str, events: Sequence[NewEvent]) -> list[str]:
    registry = default_registry()
    batches = [events[s : s + BATCH] for s in range(0, len(events), BATCH)]
    n = len(events)
    prepared: dict[bool, float] = {}
    for sealed in (False, True):
        sealer = Sealer(KeyStore(_fresh(os.path.join(directory, "p.keys")))) if sealed else None

        def run(sealer: Sealer | None = sealer) -> None:
            for batch in batches:
                prepare(batch, ANY, registry, 1 << 20, sealer)

        prepared[sealed] = _per_event(run, n)
        if sealer is not None:
            sealer.keys.close()
    fields = []
    for position, e in enumerate(
        (e for b in batches for e in prepare(b, ANY, registry, 1 << 20).events), 1
    ):
        fields.append(
            (position, e.id, e.stream, 1, e.kind, e.schema, e.actor, e.at, e.payload,
             e.causation_id, e.correlation_id)
        )  # fmt: skip

    def hashing() -> None:
        last = GENESIS_HASH
        for f in fields:
            last = link(last, f)

    def whole(sealed: bool) -> float:
        samples = []
        for _ in range(3):
            path = _fresh(os.path.join(directory, "whole.db"))
            sealer = Sealer(KeyStore(path + ".keys")) if sealed else None
            with Ledger.open(path, durability="fast", sealer=sealer) as ledger:
                start = _clock()
                for batch in batches:
                    ledger.append(batch)
                samples.append((_clock() - start) / n * 1e6)
        return statistics.median(samples)

    def sql(ledger_table: bool) -> float:
        samples = []
        for _ in range(3):
            path = _fresh(os.path.join(directory, "sql.db"))
            if ledger_table:
                Ledger.open(path, durability="fast").close()
            conn = sqlite3.connect(path, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if not ledger_table:
                conn.execute(SQLITE_DDL)
            raw = RawRows(events)
            rows = [raw.take(s, s + BATCH) for s in range(0, n, BATCH)]
            start = _clock()
            for chunk in rows:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(SQLITE_INSERT, chunk)
                conn.execute("COMMIT")
            samples.append((_clock() - start) / n * 1e6)
            conn.close()
        return statistics.median(samples)

    return [
        f"append, batches of {BATCH}, {label} ({n:,} events; CPU µs an event)",
        f"  prepare (envelope, ids, names, payload check)  {prepared[False]:6.2f}",
        f"  sealing, added to prepare                      {prepared[True] - prepared[False]:6.2f}",
        f"  hash chain (header JSON + SHA-256)             {_per_event(hashing, n):6.2f}",
        f"  SQL: insert + commit, the ledger's table       {sql(True):6.2f}",
        f"  SQL: the same rows, no triggers (raw's cost)   {sql(False):6.2f}",
        f"  whole append, plain                            {whole(False):6.2f}",
        f"  whole append, sealed                           {whole(True):6.2f}",
    ]


def _replay_line(ledger: Ledger, path: str, n: int, label: str) -> str:
    decoders = {kind: msgspec.json.Decoder(t).decode for kind, t in KINDS.items()}
    rows: list[tuple[Any, ...]] = []

    def read() -> None:
        assert sum(1 for _ in ledger.read()) == n

    def fetch() -> None:
        # The store's own pages, each row let go once read as the replay lets it go: a fetch
        # that kept every row measured the cache misses of the list, not the query (ADR 0104).
        backend, after = ledger.backend, 0
        while True:
            with backend.scan_rows(after, None, None, None, backend.page_rows) as cursor:
                tail = deque(cursor, maxlen=1)
            if not tail:
                return
            after = tail[0][0]

    after = 0
    while page := ledger.backend.read_rows(after, None, None, None, 5000):
        rows.extend(page)
        after = page[-1][0]

    def decode() -> None:
        for row in rows:
            decoders[row[4]](row[8])

    def parse() -> None:
        at = ledger.backend.parse_at
        for row in rows:
            at(row[7])

    conn = sqlite3.connect(path)

    def raw() -> None:
        for row in conn.execute("SELECT * FROM events ORDER BY position"):
            decoders[row[4]](row[8])

    try:
        whole, reference = _per_event(read, n, 3), _per_event(raw, n, 3)
        fetched = _per_event(fetch, n, 3)
        decoded, parsed = _per_event(decode, n, 3), _per_event(parse, n, 3)
    finally:
        conn.close()
    rest = whole - fetched - decoded - parsed
    return (
        f"  {label}: ledger.read {whole:5.2f}; raw scan + msgspec {reference:5.2f} (ratio "
        f"{reference / whole:.2f}); page fetch {fetched:5.2f}, payload decode {decoded:5.2f}, "
        f"`at` parse {parsed:5.2f}, events, opening and loop {rest:5.2f}"
    )


def _replay_parts(directory: str, n: int) -> list[str]:
    lines = [f"replay of {n:,} events (CPU µs an event)"]
    for sealed in (False, True):
        path = _fresh(os.path.join(directory, f"replay-{sealed}.db"))
        sealer = Sealer(KeyStore(path + ".keys")) if sealed else None
        workload = Workload(11)
        with Ledger.open(path, durability="fast", sealer=sealer) as ledger:
            for s in range(0, n, 1000):
                ledger.append(workload.events(min(1000, n - s)))
            lines.append(_replay_line(ledger, path, n, "sealed" if sealed else "plain "))
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print the breakdown; return 0."""
    parser = argparse.ArgumentParser(prog="python -m engram.bench.ledger_profile")
    parser.add_argument("--append", type=int, default=10_000, metavar="N")
    parser.add_argument("--replay", type=int, default=200_000, metavar="N")
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix="engram-profile-")
    try:
        workload = Workload(7)
        mix = workload.events(args.append)
        observations: list[NewEvent] = []
        while len(observations) < args.append:
            observations += [
                e for e in workload.events(6 * args.append) if e.kind == "memory.observed"
            ]
        for line in [
            *_append_parts(directory, "mix", mix),
            *_append_parts(directory, "observations", observations[: args.append]),
            *_replay_parts(directory, args.replay),
        ]:
            print(line, flush=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
