"""Counts and positions past 64 bits: a clear error from the Python API, not the driver's.

SQLite binds integers of 64 bits; a larger ``after``, ``limit``, ``k`` or position reached
the driver and raised ``OverflowError`` (or, as a ``LIMIT``, "datatype mismatch").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from engram.ledger import ConfigError, Ledger, NewEvent
from engram.ledger.catalog import SignalSent
from engram.projections.counts import SQL_INT_MAX, check_count
from engram.projections.errors import QueryError
from engram.runtime import Memory

PAST = SQL_INT_MAX + 1


def test_check_count_takes_1_to_the_largest_sqlite_int_and_names_the_argument() -> None:
    check_count(1, "k")
    check_count(SQL_INT_MAX, "k")
    for bad, message in (
        (0, "k must be a positive int, got 0"),
        (True, "k must be a positive int, got True"),
        (PAST, f"k must be at most {SQL_INT_MAX} (what SQLite holds), got {PAST}"),
    ):
        with pytest.raises(QueryError) as caught:
            check_count(bad, "k")
        assert str(caught.value) == message


def test_the_ledger_refuses_positions_past_64_bits(tmp_ledger_path: str) -> None:
    with Ledger.open(tmp_ledger_path) as ledger:
        ledger.append(NewEvent.of(SignalSent(to="b", topic="t"), stream="agent:a"))
        reads: dict[str, Callable[[], Any]] = {
            "after": lambda: list(ledger.read(after=PAST)),
            "limit": lambda: list(ledger.read(limit=PAST)),
            "upto": lambda: list(ledger.read(upto=PAST)),
            "position": lambda: ledger.get([1, PAST]),
            "after_version": lambda: list(ledger.read_stream("agent:a", PAST)),
        }
        for name, read in reads.items():
            with pytest.raises(ConfigError, match=f"^{name} must be at most {SQL_INT_MAX} "):
                read()
        with pytest.raises(ConfigError, match=f"^after must be at most {SQL_INT_MAX} "):
            ledger.wait(PAST, 0)
        assert [e.position for e in ledger.read(upto=SQL_INT_MAX)] == [1]


def test_memory_reads_refuse_counts_past_64_bits(memory: Memory) -> None:
    memory.agent("alice").observe("the deploy failed at 3am")
    reads: dict[str, Callable[[], Any]] = {
        "k": lambda: memory.network.top(PAST, as_of=datetime.now(UTC)),
        "limit": lambda: memory.mailbox("bob").inbox(limit=PAST),
    }
    for name, read in reads.items():
        with pytest.raises(QueryError, match=f"^{name} must be at most {SQL_INT_MAX} "):
            read()
