"""The leaner append and replay paths (ADR 0059) store and read exactly what they did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from engram.ledger import KeyStore, Ledger, NewEvent, Sealer, new_id
from engram.ledger.catalog import MemoryObserved, NeuronActivated
from engram.ledger.codec import GENESIS_HASH, canonical, chain, encode_canonical
from engram.ledger.errors import PayloadError
from engram.ledger.sqlite import SQLiteBackend


def _observed(i: int, agent: str = "ann") -> NewEvent:
    payload = MemoryObserved(agent=agent, text=f'note {i} é " \\ end', tags=["t"])
    return NewEvent.of(payload, stream=f"agent:{agent}", actor=f"agent:{agent}")


def test_the_chain_linked_in_the_placing_loop_is_the_canonical_chain(tmp_path: Path) -> None:
    with Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger:
        given = new_id()
        batch = [
            NewEvent.of(NeuronActivated(id="n1", strength=0.5), stream="neuron:n1", id=given),
            *(_observed(i) for i in range(5)),
            NewEvent.of(NeuronActivated(id="n1", strength=0.25), stream="neuron:n1"),
        ]
        assert ledger.append(batch) == list(range(1, 8))
        previous = GENESIS_HASH
        for row in ledger.backend.scan():
            previous = chain(previous, canonical((*row[:8], bytes(row[8]), row[9], row[10])))
            assert row[11] == previous
        events = list(ledger.read())
        assert events[0].id == given
        # Ids made for the events without one: distinct, increasing (UUIDv7), not the given.
        made = [e.id for e in events[1:]]
        assert made == sorted(made)
        assert len(set(made)) == 6
        assert given not in made
        assert [e.version for e in events if e.stream == "neuron:n1"] == [1, 2]
        assert ledger.verify().ok


def test_a_payload_refused_inline_is_still_explained(tmp_path: Path) -> None:
    # Structs are not validated at construction: the inline check must catch this one.
    bad = NewEvent.of(NeuronActivated(id="n1", strength=-1.0), stream="neuron:n1")
    with Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger:
        with pytest.raises(PayloadError, match=r"event #1 \(neuron.activated\).*strength"):
            ledger.append([_observed(0), bad])
        assert ledger.head() == 0


def test_sealed_bytes_are_those_of_the_sealed_struct_and_repeat(tmp_path: Path) -> None:
    sealer = Sealer(KeyStore(tmp_path / "keys"))
    try:
        event = _observed(3)
        payload = event.payload
        fields = sealer.seal_fields("memory.observed", "id-1", event.actor, payload)
        assert set(fields) == {"text"}
        sealed = sealer.seal("memory.observed", "id-1", event.actor, payload)
        # One copy with the sealed field set: the same bytes as a replace of the Struct.
        expected = encode_canonical(msgspec.structs.replace(payload, **fields))
        assert encode_canonical(sealed) == expected
        assert payload.text == 'note 3 é " \\ end'  # the caller's payload is untouched
        assert sealer.seal("memory.observed", "id-1", event.actor, payload) == sealed
        opened = sealer.open("memory.observed", "id-1", sealed)
        assert opened == payload
    finally:
        sealer.keys.close()


def test_a_retried_sealed_batch_keeps_its_positions(tmp_path: Path) -> None:
    sealer = Sealer(KeyStore(tmp_path / "keys"))
    with Ledger.open(str(tmp_path / "l.db"), sealer=sealer) as ledger:
        batch = [msgspec.structs.replace(_observed(i), id=new_id()) for i in range(4)]
        assert ledger.append(batch) == [1, 2, 3, 4]
        assert ledger.append(batch) == [1, 2, 3, 4]
        assert [e.payload.text for e in ledger.read()] == [e.payload.text for e in batch]


def test_replay_streams_pages_and_returns_its_connections(tmp_path: Path) -> None:
    with Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger:
        ledger.append([_observed(i) for i in range(12_000)])
        backend = ledger.backend
        assert isinstance(backend, SQLiteBackend)
        assert [e.position for e in ledger.read()] == list(range(1, 12_001))
        assert [e.position for e in ledger.read(100, limit=5_001)] == list(range(101, 5_102))
        assert [e.position for e in ledger.read(11_990, kinds=["memory.observed"])] == list(
            range(11_991, 12_001)
        )
        # A reader abandoned half-way gives its pooled connection back once it is dropped.
        reader = ledger.read()
        next(reader)
        reader.close()
        assert backend._reader.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_a_replay_lets_each_page_go_before_it_builds_the_next(tmp_path: Path) -> None:
    # ADR 0104: the next page is built in the memory the last one freed, still in the cache.
    import weakref

    class Page(list[Any]):
        pass

    with Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger:
        ledger.append([_observed(i) for i in range(8)])
        ledger.backend.page_rows = 3
        build = ledger._events
        pages: list[weakref.ref[Page]] = []
        alive_at_build: list[int] = []

        def spy(rows: Any) -> Page:
            alive_at_build.append(sum(ref() is not None for ref in pages))
            page = Page(build(rows))
            pages.append(weakref.ref(page))
            return page

        ledger._events = spy  # type: ignore[method-assign]
        assert [e.position for e in ledger.read()] == list(range(1, 9))
        assert [e.position for e in ledger.read(2, limit=4)] == [3, 4, 5, 6]
        assert alive_at_build == [0, 0, 0, 0, 0]


def test_replay_gives_each_event_its_own_time_when_runs_share_one(tmp_path: Path) -> None:
    # Replay parses a run of equal times once (ADR 0084): a change of time must still show.
    from datetime import UTC, datetime, timedelta

    base = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    times = [base, base, base + timedelta(microseconds=1), base, base + timedelta(days=400)]
    with Ledger.open(str(tmp_path / "l.db"), durability="fast") as ledger:
        ledger.append([msgspec.structs.replace(_observed(i), at=t) for i, t in enumerate(times)])
        ledger.append(_observed(9))  # its own time, taken at append
        events = list(ledger.read())
        assert [e.at for e in events[:5]] == times
        assert events[5].at not in times
        assert events[0].at is events[1].at  # one parse for the run
        assert [e.at for e in ledger.get([5, 3, 1])] == [times[4], times[2], times[0]]


def test_a_replay_failing_mid_page_gives_its_cursor_and_connection_back(tmp_path: Path) -> None:
    # Events are built straight off the driver's cursor (ADR 0099): an error while a page is
    # built must still end the query and return the pooled connection, and name the row.
    import sqlite3

    from engram.ledger.errors import KindRegistryError

    path = str(tmp_path / "l.db")
    with Ledger.open(path, durability="fast") as ledger:
        ledger.append([_observed(i) for i in range(3)])
        last = list(ledger.backend.scan())[-1]
        conn = sqlite3.connect(path)
        with conn:  # a row from a newer program: a schema this one cannot read
            conn.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (4, new_id(), last[2], last[3] + 1, last[4], 99, *last[6:]),
            )
        conn.close()
        backend = ledger.backend
        assert isinstance(backend, SQLiteBackend)
        with pytest.raises(KindRegistryError, match="newer than this program"):
            list(ledger.read())
        assert backend._reader.pool.checkedout() == 0  # type: ignore[attr-defined]
        assert [e.position for e in ledger.read(upto=3)] == [1, 2, 3]
