"""PostgreSQL positions are commit-ordered: a follower never skips or reorders a position.

The deterministic test parks one writer *inside* its append transaction — after it took the
ledger's position lock — with a row trigger that waits on an advisory lock the test holds,
then shows that the other writers and a follower wait for it, and that everything comes out
in order once it is released.
"""

from __future__ import annotations

import random
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
from psycopg import sql

from engram.ledger import Ledger, NewEvent, StoreError
from engram.ledger.catalog import NeuronActivated, SignalSent

pytestmark = pytest.mark.postgres


class _Thread(threading.Thread):
    """Run a callable in a thread; keep its result or its exception for the test."""

    def __init__(self, fn: Callable[[], Any], name: str) -> None:
        super().__init__(name=name, daemon=True)
        self._fn = fn
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = threading.Event()

    def run(self) -> None:
        try:
            self.result = self._fn()
        except BaseException as exc:
            self.error = exc
        finally:
            self.finished.set()

    def outcome(self, timeout: float = 30.0) -> Any:
        assert self.finished.wait(timeout), f"{self.name} did not finish in {timeout} s"
        if self.error is not None:
            raise AssertionError(f"{self.name} failed: {self.error!r}") from self.error
        return self.result


class _Follower:
    """Follow the ledger in a thread, recording every position it yields."""

    def __init__(self, ledger: Ledger) -> None:
        self.positions: list[int] = []
        self.stop = threading.Event()
        self.thread = _Thread(self._run, "follower")
        self._ledger = ledger

    def _run(self) -> None:
        for event in self._ledger.follow(stop=self.stop):
            self.positions.append(event.position)

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.positions or self.positions[-1] < position:
            assert not self.thread.finished.is_set(), "the follower stopped"
            assert time.monotonic() < deadline, f"follower stuck at {self.positions[-1:]}"
            time.sleep(0.005)

    def finish(self) -> list[int]:
        self.stop.set()
        self.thread.outcome()
        return self.positions


def _lock_parts(key: int) -> tuple[int, int]:
    """Return how pg_locks shows a bigint advisory key: (classid, objid)."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    return unsigned >> 32, unsigned & 0xFFFF_FFFF


def _advisory(conn: psycopg.Connection[Any], key: int) -> list[tuple[int, bool]]:
    classid, objid = _lock_parts(key)
    return conn.execute(
        "SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
        "AND classid::bigint = %s AND objid::bigint = %s "
        "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
        (classid, objid),
    ).fetchall()


def _until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


def _event(stream: str, n: int) -> NewEvent:
    return NewEvent(
        stream=stream,
        kind="neuron.activated",
        payload=NeuronActivated(id=stream, strength=float(n)),
    )


@pytest.fixture
def ledgers(pg_dsn: str, pg_schema: str) -> Iterator[Callable[[], Ledger]]:
    """Open Ledger instances (each its own connections) on the test schema; close them all."""
    with ExitStack() as stack:
        yield lambda: stack.enter_context(Ledger.open(pg_dsn, pg_schema=pg_schema))


class _Gate:
    """A row trigger that parks any insert into 'slow:writer' until the test opens the gate.

    The parked writer is inside its append transaction, holding the ledger's position lock.
    The gate is an advisory lock the test's own connection holds; its key is per schema so
    concurrent test sessions on the server do not collide.
    """

    def __init__(self, dsn: str, schema: str, ledger_key: int) -> None:
        self.key = 0x4242_0000_0000 + zlib.crc32(schema.encode())
        self.ledger_key = ledger_key  # the position lock's key (from the ledger's id)
        self.admin = psycopg.connect(dsn, autocommit=True)
        ident = sql.Identifier(schema)
        self.admin.execute(
            sql.SQL(
                "CREATE FUNCTION {}.gate() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "PERFORM pg_advisory_lock({key}); PERFORM pg_advisory_unlock({key}); "
                "RETURN NEW; END $$"
            ).format(ident, key=sql.Literal(self.key))
        )
        self.admin.execute(
            sql.SQL(
                "CREATE TRIGGER gate BEFORE INSERT ON {}.events FOR EACH ROW "
                "WHEN (NEW.stream = 'slow:writer') EXECUTE FUNCTION {}.gate()"
            ).format(ident, ident)
        )
        self.admin.execute("SELECT pg_advisory_lock(%s)", (self.key,))

    def parked(self) -> int | None:
        """Return the pid of the writer parked at the gate holding the position lock."""
        waiting = [pid for pid, granted in _advisory(self.admin, self.key) if not granted]
        holders = [pid for pid, granted in _advisory(self.admin, self.ledger_key) if granted]
        return waiting[0] if len(waiting) == 1 and holders == waiting else None

    def queued(self) -> list[int]:
        """Return the pids of writers waiting for the position lock."""
        return [pid for pid, granted in _advisory(self.admin, self.ledger_key) if not granted]

    def open(self) -> None:
        self.admin.execute("SELECT pg_advisory_unlock(%s)", (self.key,))

    def close(self) -> None:
        self.admin.close()


@pytest.fixture
def gate(pg_dsn: str, pg_schema: str, ledgers: Callable[[], Ledger]) -> Iterator[_Gate]:
    first = ledgers()  # the table must exist before the trigger
    gate = _Gate(pg_dsn, pg_schema, first.backend._lock_key)  # type: ignore[attr-defined]
    yield gate
    gate.close()


def test_writer_held_inside_its_transaction_blocks_positions_behind_it(
    gate: _Gate, ledgers: Callable[[], Ledger]
) -> None:
    main = ledgers()
    main.append([_event("seed", n) for n in range(3)])
    follower = _Follower(ledgers())
    follower.thread.start()
    follower.wait_for(3)

    a_ledger, b_ledger, c_ledger = ledgers(), ledgers(), ledgers()
    writer_a = _Thread(lambda: a_ledger.append([_event("slow:writer", n) for n in range(2)]), "A")
    writer_a.start()
    _until(lambda: gate.parked() is not None, "A parks inside its INSERT, holding the lock")

    writer_b = _Thread(lambda: b_ledger.append([_event("fast:b", 0)]), "B")
    writer_c = _Thread(lambda: c_ledger.append([_event("fast:c", n) for n in range(3)]), "C")
    writer_b.start()
    writer_c.start()
    _until(lambda: len(gate.queued()) == 2, "B and C wait for the position lock")
    time.sleep(0.3)  # give a broken implementation time to commit around A
    assert not writer_a.finished.is_set()
    assert not writer_b.finished.is_set(), "B committed while A held the position lock"
    assert not writer_c.finished.is_set(), "C committed while A held the position lock"
    assert main.head() == 3
    assert follower.positions == [1, 2, 3], "the follower saw an event while A was held"

    gate.open()
    a, b, c = writer_a.outcome(), writer_b.outcome(), writer_c.outcome()

    assert a == [4, 5], "A took the position lock first, so it has the lowest new positions"
    assert sorted([b, c]) in ([[6], [7, 8, 9]], [[6, 7, 8], [9]])
    follower.wait_for(9)
    assert follower.finish() == list(range(1, 10))
    assert [e.stream for e in main.read(after=3, upto=5)] == ["slow:writer"] * 2
    assert main.verify().ok


def test_writer_killed_inside_its_transaction_leaves_no_gap(
    gate: _Gate, ledgers: Callable[[], Ledger]
) -> None:
    main = ledgers()
    main.append([_event("seed", n) for n in range(3)])
    follower = _Follower(ledgers())
    follower.thread.start()
    a_ledger, b_ledger = ledgers(), ledgers()

    writer_a = _Thread(lambda: a_ledger.append([_event("slow:writer", n) for n in range(2)]), "A")
    writer_a.start()
    _until(lambda: gate.parked() is not None, "A parks inside its INSERT, holding the lock")
    a_pid = gate.parked()
    writer_b = _Thread(lambda: b_ledger.append([_event("fast:b", 0)]), "B")
    writer_b.start()
    _until(lambda: len(gate.queued()) == 1, "B waits for the position lock")
    [b_pid] = gate.queued()

    # The server loses A mid-transaction: A fails, its lock and its positions go to B.
    gate.admin.execute("SELECT pg_terminate_backend(%s)", (a_pid,))
    assert writer_b.outcome() == [4], "B must take the position A never committed"
    assert writer_a.finished.wait(10)
    assert isinstance(writer_a.error, StoreError), f"A: {writer_a.error!r} {writer_a.result!r}"
    gate.open()

    # B's write connection, now idle, is dropped too; both writers carry on.
    gate.admin.execute("SELECT pg_terminate_backend(%s)", (b_pid,))
    _until(
        lambda: (
            not gate.admin.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", ([a_pid, b_pid],)
            ).fetchall()
        ),
        "the terminated sessions are gone",
    )
    assert b_ledger.append([_event("fast:b", 1)]) == [5]
    assert a_ledger.append([_event("slow:writer", 9)]) == [6]

    follower.wait_for(6)
    assert follower.finish() == list(range(1, 7))
    assert [(e.stream, e.payload.strength) for e in main.read(after=3)] == [
        ("fast:b", 0.0),
        ("fast:b", 1.0),
        ("slow:writer", 9.0),
    ]
    assert main.verify().ok


@pytest.mark.parametrize(("writers", "appends"), [(4, 50)])
def test_followers_see_every_position_in_order_under_concurrent_writers(
    ledgers: Callable[[], Ledger], writers: int, appends: int
) -> None:
    seed = random.randrange(2**31)
    print(f"pg ordering seed {seed}")
    follower = _Follower(ledgers())
    follower.thread.start()

    poller_ledger = ledgers()
    polled: list[int] = []
    poll_stop = threading.Event()

    def poll() -> None:
        # A tight reader without `upto`: it would catch a position that shows up late.
        while not poll_stop.is_set():
            after = polled[-1] if polled else 0
            polled.extend(e.position for e in poller_ledger.read(after=after))

    poller = _Thread(poll, "poller")
    poller.start()

    def writer(k: int, ledger: Ledger) -> list[tuple[list[str], list[int]]]:
        rng = random.Random(seed + k)
        done = []
        for i in range(appends):
            events = [
                NewEvent(
                    stream=f"writer:{k}:{rng.randrange(3)}",
                    kind="signal.sent",
                    payload=SignalSent(to="*", topic=f"{k}:{i}:{n}"),
                    id=None,
                )
                for n in range(rng.randint(1, 3))
            ]
            positions = ledger.append(events)
            stored = [
                e.payload.topic for e in ledger.read(after=positions[0] - 1, limit=len(events))
            ]
            done.append((stored, positions))
            assert stored == [e.payload.topic for e in events]
            if rng.random() < 0.3:
                time.sleep(rng.random() * 0.005)
        return done

    def start(k: int) -> _Thread:
        ledger = ledgers()  # each writer its own connections: no group commit between them
        return _Thread(lambda: writer(k, ledger), f"writer-{k}")

    threads = [start(k) for k in range(writers)]
    for t in threads:
        t.start()
    results = [t.outcome(timeout=120) for t in threads]
    total = sum(len(p) for r in results for _, p in r)

    follower.wait_for(total)
    seen = follower.finish()
    _until(lambda: bool(polled) and polled[-1] >= total, "the poller reached the head")
    poll_stop.set()
    poller.outcome()

    assert seen == list(range(1, total + 1)), "follow() skipped or reordered a position"
    assert polled == list(range(1, total + 1)), "a tight reader skipped or reordered a position"
    for r in results:
        for _, positions in r:
            assert positions == list(range(positions[0], positions[0] + len(positions)))
    assert ledgers().verify().ok


def test_opening_an_existing_ledger_waits_for_no_reader_and_stalls_no_writer(
    pg_dsn: str, pg_schema: str, ledgers: Callable[[], Ledger]
) -> None:
    # Opening an existing ledger must take no table lock: creating a trigger would need
    # ACCESS EXCLUSIVE on events, and waiting for it while holding the position lock would
    # stall every append behind one long read.
    main = ledgers()
    main.append([_event("seed", 0)])
    opened: list[Ledger] = []
    with psycopg.connect(pg_dsn) as reader:
        # A long read in progress: an audit query, a report, a pg_dump.
        table = sql.Identifier(pg_schema, "events")
        reader.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()
        opener = _Thread(
            lambda: opened.append(Ledger.open(pg_dsn, pg_schema=pg_schema, busy_timeout=20)),
            "opener",
        )
        opener.start()
        time.sleep(0.2)
        writer = _Thread(lambda: main.append([_event("seed", 1)]), "writer")
        writer.start()
        open_in_time = opener.finished.wait(2.0)
        append_in_time = writer.finished.wait(0.5)
        reader.rollback()
        opener.outcome()
        writer.outcome()
    for ledger in opened:
        ledger.close()
    assert append_in_time, "an append stalled while another process opened the ledger"
    assert open_in_time, "Ledger.open waited for a reader's transaction to end"
