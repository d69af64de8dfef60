"""A sealed row is checked against its hash before it is opened (ADR 0128): a row edited
outside engram to hand its text to another subject is named by position, never opened."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import engram
from engram.ledger import Ledger
from engram.ledger.errors import DamagedEventError

SECRET = "the cellar door code is 4711"


def _seeded(tmp_path: Path) -> str:
    ledger = str(tmp_path / "l.db")
    with engram.open_memory(ledger) as memory:
        memory.agent("bob").observe("bob keeps the spare keys by the cellar door")
        memory.agent("alice").observe(SECRET, visibility="private")
        memory.agent("bob").observe("the garden gate is green")
        assert memory.agent("bob").recall("cellar door code").items[0].event.position == 1
    return ledger


def _edit(ledger: str, position: int, old: bytes, new: bytes) -> None:
    """Edit one row's payload as someone with the file would: the triggers dropped."""
    conn = sqlite3.connect(ledger)
    conn.isolation_level = None
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        conn.execute(f"DROP TRIGGER {name}")
    (payload,) = conn.execute(
        "SELECT payload FROM events WHERE position = ?", [position]
    ).fetchone()
    assert old in payload
    conn.execute(
        "UPDATE events SET payload = ? WHERE position = ?", [payload.replace(old, new), position]
    )
    conn.close()


def test_a_private_row_made_public_outside_engram_is_refused_not_served(tmp_path: Path) -> None:
    # Flipping "private" to "public" in the row (the sealed text untouched, its key still
    # alice's) had bob's recall open and serve alice's text; only `engram verify` noticed.
    ledger = _seeded(tmp_path)
    _edit(ledger, 2, b'"private"', b'"public"')
    shutil.rmtree(ledger + ".projections")
    with (
        pytest.raises(DamagedEventError, match="position 2 was changed outside engram"),
        engram.open_memory(ledger) as memory,
    ):
        memory.agent("bob").recall("cellar door code")
    with Ledger.open(ledger) as led:  # no key store: nothing is opened, nothing to check
        assert SECRET not in str(led.get([2])[0].payload)


def test_untouched_rows_read_as_before_whatever_their_order(tmp_path: Path) -> None:
    ledger = _seeded(tmp_path)
    with engram.open_memory(ledger) as memory:
        assert [e.position for e in memory.ledger.get([3, 2, 1])] == [3, 2, 1]
        texts = [e.payload.text for e in memory.ledger.read(kinds=["memory.observed"])]
        assert SECRET in texts


def _edit_store(ledger: str, assignment: str) -> int:
    """Edit every projection row of alice's private memory as someone with the store file
    would; return how many rows changed."""
    conn = sqlite3.connect(ledger + ".projections/projections.db")
    conn.isolation_level = None
    changed = 0
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        columns = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
        if {"visibility", "agent"} <= columns:
            changed += conn.execute(
                f'UPDATE "{table}" SET {assignment} WHERE agent = ? AND visibility = ?',
                ["alice", "private"],
            ).rowcount
    conn.close()
    return changed


@pytest.mark.parametrize("assignment", ["visibility = 'public'", "agent = 'bob'"])
def test_a_store_row_made_public_or_given_to_another_agent_is_not_served(
    tmp_path: Path, assignment: str
) -> None:
    # ADR 0141: the projection store's visibility or author edited, bob's recall served
    # alice's private text, labelled as hers, and nothing flagged the store.
    ledger = _seeded(tmp_path)
    assert _edit_store(ledger, assignment) > 0
    with engram.open_memory(ledger) as memory:
        for scope in ("memories", "all"):
            served = memory.agent("bob").recall("cellar door code", 10, scope=scope, min_score=0)
            assert SECRET not in str([r.event.payload for r in served.items])
        if assignment.startswith("visibility"):  # hers is still served to her
            own = memory.agent("alice").recall("cellar door code", 10, min_score=0)
            assert SECRET in str([r.event.payload for r in own.items])
