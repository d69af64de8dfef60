"""PostgreSQL appends after this process's own commit take one round trip (ADR 0084).

The plan starts from the head this process wrote last; the lock, a check of that head's row
and the inserts go as one pipeline. Whatever another writer did in between, the positions
stay gap-free and commit-ordered and the chain verifies.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from engram.ledger import ConcurrencyError, Ledger, NewEvent
from engram.ledger.catalog import NeuronActivated
from engram.ledger.postgres import PostgresBackend


def _event(stream: str, n: int) -> NewEvent:
    return NewEvent.of(NeuronActivated(id=f"n{n}", strength=0.5), stream=stream)


def _count_locked_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = PostgresBackend._locked_writer

    def counting(self: PostgresBackend) -> Any:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(PostgresBackend, "_locked_writer", counting)
    return calls


def test_an_append_after_its_own_skips_the_head_round_trip(
    pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_locked_reads(monkeypatch)
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as ledger:
        assert ledger.append([_event("s", n) for n in range(3)]) == [1, 2, 3]
        assert len(calls) == 1  # the first append reads the head under the lock
        assert ledger.append([_event("s", 3)]) == [4]
        assert ledger.append([_event("t", n) for n in range(2)]) == [5, 6]
        assert len(calls) == 1
        assert ledger.verify().ok


def test_another_writer_in_between_is_found_and_the_group_replanned(
    pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_locked_reads(monkeypatch)
    with (
        Ledger.open(pg_dsn, pg_schema=pg_schema) as mine,
        Ledger.open(pg_dsn, pg_schema=pg_schema) as other,
    ):
        assert mine.append([_event("s", 0), _event("s", 1)]) == [1, 2]
        assert other.append([_event("s", 2), _event("u", 0)]) == [3, 4]
        before = len(calls)
        # mine still believes the head is 2 and stream s at version 2: both collide, and the
        # group is planned again under the lock.
        assert mine.append([_event("s", 3)]) == [5]
        assert len(calls) == before + 1
        assert [(e.stream, e.version) for e in mine.read()] == [
            ("s", 1),
            ("s", 2),
            ("s", 3),
            ("u", 1),
            ("s", 4),
        ]
        # An exact expectation against a version another writer moved: read under the lock,
        # so the caller's (right) expectation is met, not refused on a stale cache.
        assert other.append([_event("s", 4)]) == [6]
        assert mine.append([_event("s", 5)], expect=5) == [7]
        with pytest.raises(ConcurrencyError):
            mine.append([_event("s", 6)], expect=5)
        assert mine.verify().ok


def test_a_ledger_recreated_under_a_writer_gets_no_gap(pg_dsn: str, pg_schema: str) -> None:
    with Ledger.open(pg_dsn, pg_schema=pg_schema) as mine:
        assert mine.append([_event("s", n) for n in range(3)]) == [1, 2, 3]
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(pg_schema)))
        Ledger.open(pg_dsn, pg_schema=pg_schema).close()  # a new, empty ledger
        # The head this process wrote (position 3) is gone: the check refuses it and the
        # group is planned again from the real head.
        assert mine.append([_event("s", 9)]) == [1]
        assert [e.position for e in mine.read()] == [1]
        assert mine.verify().ok
