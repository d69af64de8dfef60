"""SQLite figures: durable appends, group commit, replay; vs raw sqlite3 and eventsourcing.

Within a repetition every side gets a fresh file, then the sides take turns chunk by chunk
(:func:`~engram.bench.common.alternate`), so a burst of someone else's disk or CPU load hits
engram and its reference alike.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import msgspec

from engram.bench import peer
from engram.bench.common import (
    Config,
    Figure,
    Progress,
    alternate,
    log,
    repeat_runs,
    scratch_file,
)
from engram.bench.workload import SQLITE_DDL, SQLITE_INSERT, RawRows, Workload
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import KINDS

BATCH = 100
THREADS = 8
#: The project's goals for the ledger figures (ADR 0059), printed as each figure's target:
#: a figure under its goal shows as FAIL, so a regression is seen in the run that makes it.
GOALS = {
    "append_vs_raw": 0.9,  # SQLite, batches of 100, durable, vs raw sqlite3
    "append_vs_peer": 1.5,  # the same, vs eventsourcing's EventStore.put
    "replay_vs_raw": 0.85,  # replay into Event objects vs raw scan + msgspec
    "pg_append_vs_raw": 0.9,  # PostgreSQL, batches of 100, vs raw psycopg
    "sealed_append": 0.9,  # sealed over plain append (personal fields sealed)
    "sealed_replay": 0.85,  # sealed over plain replay (personal fields opened)
}
Step = Callable[[int], None]


@contextmanager
def fresh_ledger(directory: str, name: str, durability: str = "full") -> Iterator[Ledger]:
    """Yield a ledger on a new file, removed afterwards."""
    with scratch_file(directory, name) as path:
        ledger = Ledger.open(path, durability=durability)
        try:
            yield ledger
        finally:
            ledger.close()


@contextmanager
def fresh_raw(directory: str, name: str) -> Iterator[sqlite3.Connection]:
    """Yield a hand-written writer's connection (WAL, synchronous=FULL) on a new table."""
    with scratch_file(directory, name) as path:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute(SQLITE_DDL)
            yield conn
        finally:
            conn.close()


@contextmanager
def fresh_peer(directory: str, name: str) -> Iterator[peer.Peer]:
    """Yield an eventsourcing recorder on a new file."""
    with scratch_file(directory, name) as path:
        p = peer.Peer(path)
        try:
            yield p
        finally:
            p.close()


def _append_step(ledger: Ledger, events: Sequence[NewEvent], per_chunk: int, batch: int) -> Step:
    def step(i: int) -> None:
        for s in range(i * per_chunk, (i + 1) * per_chunk, batch):
            ledger.append(events[s : s + batch] if batch > 1 else events[s])

    return step


def _raw_step(conn: sqlite3.Connection, rows: RawRows, per_chunk: int, batch: int) -> Step:
    def step(i: int) -> None:
        for s in range(i * per_chunk, (i + 1) * per_chunk, batch):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(SQLITE_INSERT, rows.take(s, s + batch))
            conn.execute("COMMIT")

    return step


def _peer_name() -> str:
    return f"eventsourcing {peer.version()}" if peer.available() is None else "eventsourcing"


def batched(config: Config) -> list[Figure]:
    """Batches of 100, durable: engram vs raw sqlite3 vs eventsourcing."""
    chunks = max(1, min(20, config.sizes.batch_events // (BATCH * 5)))
    per_chunk = config.sizes.batch_events // (chunks * BATCH) * BATCH
    n = chunks * per_chunk
    log(f"SQLite, batches of {BATCH}, durable: {n:,} events per repetition")
    events = Workload(config.seed).events(n)
    vs_raw = Figure(
        f"SQLite append, batches of {BATCH}, durable",
        "events/s",
        "raw sqlite3",
        GOALS["append_vs_raw"],
        note="raw: WAL, synchronous=FULL, executemany of 100 rows per transaction, same schema",
    )
    vs_peer = Figure(
        f"SQLite append, batches of {BATCH} vs eventsourcing",
        "events/s",
        _peer_name(),
        GOALS["append_vs_peer"],
    )
    vs_recorder = Figure(
        f"SQLite append, batches of {BATCH} vs eventsourcing recorder",
        "events/s",
        f"{_peer_name()} SQL only",
        None,
    )
    why_not = peer.available()
    domain = peer.domain_events(events) if why_not is None else []
    stored = peer.stored_events(events) if why_not is None else []
    modes: list[str] = []

    def one_repetition() -> dict[str, float]:
        with ExitStack() as stack:
            d = config.scratch
            ledger = stack.enter_context(fresh_ledger(d, "engram.db"))
            conn = stack.enter_context(fresh_raw(d, "raw.db"))
            sides = [
                ("engram", _append_step(ledger, events, per_chunk, BATCH)),
                ("raw", _raw_step(conn, RawRows(events), per_chunk, BATCH)),
            ]
            if why_not is None:
                p = stack.enter_context(fresh_peer(d, "peer.db"))
                q = stack.enter_context(fresh_peer(d, "recorder.db"))

                def peer_step(i: int) -> None:
                    for s in range(i * per_chunk, (i + 1) * per_chunk, BATCH):
                        p.put(domain[s : s + BATCH])

                def recorder_step(i: int) -> None:
                    for s in range(i * per_chunk, (i + 1) * per_chunk, BATCH):
                        q.insert(stored[s : s + BATCH])

                sides += [("peer", peer_step), ("recorder", recorder_step)]
            spent = alternate(chunks, sides)
            if why_not is None:
                modes.append(p.synchronous())
        return {name: n / seconds for name, seconds in spent.items()}

    samples = repeat_runs(config.repeat, one_repetition, "batches of 100")
    vs_raw.engram_samples = vs_peer.engram_samples = samples["engram"]
    vs_recorder.engram_samples = samples["engram"]
    vs_raw.reference_samples = samples["raw"]
    if why_not is None:
        durability = modes[0] if modes else "?"
        vs_peer.reference_samples = samples["peer"]
        vs_peer.note = (
            f"EventStore.put of {BATCH} domain events per call (mapper: JSON transcoding of "
            "each event; recorder: one transaction), built before timing as engram's "
            f"NewEvents are; peer durability: {durability}"
        )
        vs_recorder.reference_samples = samples["recorder"]
        vs_recorder.note = (
            f"recorder.insert_events of {BATCH} StoredEvents encoded before timing: the "
            "peer's SQL alone, without the encoding engram's figure includes (for reference)"
        )
    else:
        vs_peer.skipped = vs_recorder.skipped = why_not
    return [vs_raw, vs_peer, vs_recorder]


class _Threads:
    """Eight threads appending one event per call to one Ledger, released a chunk at a time."""

    def __init__(self, ledger: Ledger, events: Sequence[NewEvent], chunks: int, per_chunk: int):
        self._go = threading.Barrier(THREADS + 1)
        self._done = threading.Barrier(THREADS + 1)
        self.errors: list[BaseException] = []
        per_thread = chunks * per_chunk

        def work(offset: int) -> None:
            for i in range(chunks):
                try:
                    self._go.wait()
                except threading.BrokenBarrierError:
                    return  # the measurement was abandoned
                try:
                    for j in range(offset + i * per_chunk, offset + (i + 1) * per_chunk):
                        ledger.append(events[j])
                except BaseException as exc:
                    self.errors.append(exc)
                try:
                    self._done.wait()
                except threading.BrokenBarrierError:
                    return

        self._threads = [
            threading.Thread(target=work, args=(t * per_thread,), daemon=True)
            for t in range(THREADS)
        ]
        for thread in self._threads:
            thread.start()

    def step(self, _i: int) -> None:
        self._go.wait()
        self._done.wait()

    def abort(self) -> None:
        """Release the threads when the measurement fails half-way."""
        self._go.abort()
        self._done.abort()

    def join(self) -> None:
        for thread in self._threads:
            thread.join()
        if self.errors:
            raise self.errors[0]


def single_and_threads(config: Config) -> list[Figure]:
    """One event per append (engram vs raw), and 8 threads sharing a Ledger (vs 1 thread)."""
    chunks = max(1, min(20, config.sizes.thread_appends // 5))
    singles_per_chunk = max(1, config.sizes.single_appends // chunks)
    per_thread_chunk = max(1, config.sizes.thread_appends // chunks)
    n, threaded_n = chunks * singles_per_chunk, chunks * per_thread_chunk * THREADS
    log(
        f"SQLite, one event per append, durable: {n} appends; {THREADS} threads × "
        f"{chunks * per_thread_chunk} appends; {chunks} alternating chunks"
    )
    workload = Workload(config.seed + 1)
    singles = workload.activations(n)
    threaded = workload.activations(threaded_n)
    one = Figure(
        "SQLite append, 1 event per call, durable",
        "events/s",
        "raw sqlite3",
        0.7,
        note="raw: one INSERT per BEGIN IMMEDIATE..COMMIT, WAL, synchronous=FULL",
    )
    group = Figure(
        f"SQLite append, {THREADS} threads × 1 event, durable",
        "events/s",
        "engram, 1 thread",
        3.0,
        note="one shared Ledger (group commit) vs row above's engram",
    )

    def one_repetition() -> dict[str, float]:
        with ExitStack() as stack:
            d = config.scratch
            ledger = stack.enter_context(fresh_ledger(d, "single.db"))
            conn = stack.enter_context(fresh_raw(d, "raw.db"))
            shared = stack.enter_context(fresh_ledger(d, "threads.db"))
            threads = _Threads(shared, threaded, chunks, per_thread_chunk)
            try:
                spent = alternate(
                    chunks,
                    [
                        ("engram", _append_step(ledger, singles, singles_per_chunk, 1)),
                        ("raw", _raw_step(conn, RawRows(singles), singles_per_chunk, 1)),
                        ("threads", threads.step),
                    ],
                )
            except BaseException:
                threads.abort()
                raise
            threads.join()
        return {
            "engram": n / spent["engram"],
            "raw": n / spent["raw"],
            "threads": threaded_n / spent["threads"],
        }

    samples = repeat_runs(config.repeat, one_repetition, "one per append")
    one.engram_samples, one.reference_samples = samples["engram"], samples["raw"]
    group.engram_samples, group.reference_samples = samples["threads"], samples["engram"]
    return [one, group]


def build_ledger(
    path: str, events_of: Callable[[int], list[NewEvent]], total: int, label: str
) -> float:
    """Fill a fresh ledger with ``total`` events, 1000 per append, durability "fast"."""
    progress = Progress(label, total)
    ledger = Ledger.open(path, durability="fast")
    try:
        done = 0
        while done < total:
            chunk = events_of(min(1000, total - done))
            ledger.append(chunk)
            done += len(chunk)
            progress.update(done)
    finally:
        ledger.close()
    return progress.finish()


def replay(config: Config) -> list[Figure]:
    """Replay into Event objects: engram vs raw sqlite3 + msgspec, vs eventsourcing."""
    chunks = 10
    n = config.sizes.replay_events // chunks * chunks
    per_chunk = n // chunks
    vs_raw = Figure(
        "SQLite replay into Event objects",
        "events/s",
        "raw sqlite3 + msgspec",
        GOALS["replay_vs_raw"],
        note="engram: sum(1 for _ in ledger.read(...)); raw: SELECT * ORDER BY position, "
        "each payload decoded into its kind's Struct",
    )
    vs_peer = Figure(
        "SQLite replay, decoded, vs eventsourcing",
        "events/s",
        _peer_name(),
        1.0,
        note="select_notifications in pages of 2000, each state decoded into its kind's Struct",
    )
    path = os.path.join(config.scratch, "replay.db")
    workload = Workload(config.seed + 2)
    why_not = peer.available()
    stack = ExitStack()
    p = None if why_not else stack.enter_context(fresh_peer(config.scratch, "replay-peer.db"))

    versions: dict[str, int] = {}

    def events_of(k: int) -> list[NewEvent]:
        chunk = workload.events(k)
        if p is not None:  # the same events in the same order: rowid = position
            p.insert(peer.stored_events(chunk, versions))
        return chunk

    with stack:
        seconds = build_ledger(path, events_of, n, f"replay: generating {n:,} events")
        log(f"  generated in {seconds:.1f} s (durability='fast'; eventsourcing copy included)")
        decoders = {kind: msgspec.json.Decoder(t) for kind, t in KINDS.items()}

        def one_repetition() -> dict[str, float]:
            counts = {"engram": 0, "raw": 0, "peer": 0}
            ledger = Ledger.open(path)
            conn = sqlite3.connect(path)

            def engram_step(i: int) -> None:
                counts["engram"] += sum(1 for _ in ledger.read(i * per_chunk, limit=per_chunk))

            def raw_step(i: int) -> None:
                for row in conn.execute(
                    "SELECT * FROM events WHERE position > ? ORDER BY position LIMIT ?",
                    (i * per_chunk, per_chunk),
                ):
                    decoders[row[4]].decode(row[8])
                    counts["raw"] += 1

            def peer_step(i: int) -> None:
                assert p is not None
                counts["peer"] += p.replay(i * per_chunk + 1, per_chunk)

            sides = [("engram", engram_step), ("raw", raw_step)]
            if p is not None:
                sides.append(("peer", peer_step))
            try:
                spent = alternate(chunks, sides)
            finally:
                ledger.close()
                conn.close()
            if any(counts[name] != n for name, _ in sides):
                raise RuntimeError(f"replay read {counts}, expected {n} each")
            return {name: n / seconds for name, seconds in spent.items()}

        samples = repeat_runs(config.repeat, one_repetition, "replay")
    vs_raw.engram_samples = vs_peer.engram_samples = samples["engram"]
    vs_raw.reference_samples = samples["raw"]
    if why_not is None:
        vs_peer.reference_samples = samples["peer"]
    else:
        vs_peer.skipped = why_not
    return [vs_raw, vs_peer]
