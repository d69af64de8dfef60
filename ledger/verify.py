"""The ledger's integrity check: recompute the hash chain, name the first position wrong.

:meth:`engram.ledger.Ledger.verify` runs it over its backend's rows; cold segments report in
the same :class:`VerifyReport` (``engram.ledger.cold``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from engram.ledger.backend import Backend, Row
from engram.ledger.codec import GENESIS_HASH, canonical, chain
from engram.ledger.errors import ConfigError
from engram.ledger.schema import Column

__all__ = ["VerifyReport", "head_unlinked", "verify_chain"]

_POSITION = Column.POSITION.value
_SHA256_HEX = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class VerifyReport:
    """The result of :meth:`Ledger.verify`."""

    ok: bool
    checked: int
    head: int
    head_hash: str
    first_bad: int | None = None
    reason: str | None = None

    def __str__(self) -> str:
        if self.ok:
            return f"ok: {self.checked} events, head {self.head}, hash {self.head_hash}"
        if self.first_bad is not None and self.checked >= self.first_bad:
            # The chain holds; what failed is a head recorded elsewhere.
            return (
                f"FAILED at position {self.first_bad}: {self.reason} "
                f"(the chain itself verifies through {self.checked})"
            )
        return (
            f"FAILED at position {self.first_bad}: {self.reason} "
            f"({self.checked} verified before it)"
        )


def verify_chain(
    backend: Backend,
    *,
    expect_head: int | None = None,
    expect_hash: str | None = None,
    progress: Any = None,
    since: tuple[int, bytes] | None = None,
) -> VerifyReport:
    """Walk ``backend``'s rows in position order, recomputing the chain (:meth:`Ledger.verify`
    says what it detects); ``expect_head``, when given, is a checked position. ``since``, a
    position and its hash known good (a signed checkpoint's), walks only the rows after it,
    from that hash (ADR 0163)."""
    if expect_head is None and expect_hash is not None:
        raise ConfigError("expect_hash needs expect_head: the position that hash belongs to")
    if expect_hash is not None and not (
        isinstance(expect_hash, str) and _SHA256_HEX.fullmatch(expect_hash)
    ):
        raise ConfigError(
            f"expect_hash must be a sha256 hash as 64 hex digits, got {expect_hash!r}"
        )
    expected, previous, anchor = 1, GENESIS_HASH, None
    # From the lowest position a row can hold: a row below 1 was put there outside engram.
    after = -(2**63)
    if since is not None:
        after, previous = since
        expected = after + 1
    for row in backend.scan(after=after):
        pos = row[_POSITION]
        if pos != expected:
            if pos < 1:
                reason = f"a row at position {pos}, below 1, was inserted outside engram"
            elif pos > expected:
                reason = f"position {expected} is missing (the next stored position is {pos})"
            else:
                reason = f"position {pos} appears out of order after {expected - 1}"
            return _failed(expected - 1, pos, previous, pos if pos < 1 else expected, reason)
        try:
            computed = chain(previous, _canonical_row(backend, row))
        except Exception as exc:  # a tampered cell may not even parse
            return _failed(expected - 1, pos, previous, pos, f"unreadable row: {exc}")
        if computed != row[Column.HASH]:
            return _failed(
                expected - 1,
                pos,
                previous,
                pos,
                f"hash mismatch: the content or order of event {row[Column.ID]} "
                f"({row[Column.KIND]} on {row[Column.STREAM]}) was changed",
            )
        previous = computed
        if pos == expect_head:
            anchor = computed.hex()
        if progress is not None and pos % 10_000 == 0:
            progress(pos)
        expected += 1
    head = expected - 1
    if expect_head is not None and anchor is None:
        return _failed(
            head,
            head,
            previous,
            head + 1,
            f"the ledger ends at {head}, but position {expect_head} was expected: "
            "events were removed from the tail",
        )
    if expect_hash is not None and anchor != expect_hash.lower():
        return _failed(
            head,
            head,
            previous,
            expect_head,
            f"position {expect_head} has hash {anchor}, not {expect_hash} as recorded: "
            f"the events up to {expect_head} were rewritten (their chain recomputed) "
            "since that hash was recorded, or it was recorded for another ledger",
        )
    return VerifyReport(ok=True, checked=head, head=head, head_hash=previous.hex())


def head_unlinked(backend: Backend) -> str | None:
    """Say why the head row does not link to the row before it, if it does not: a position
    missing below it, or a hash its content and its predecessor's do not give (a row planted
    or changed outside engram). None when it links, or the ledger is empty. A writer checks
    this once before it chains its first event onto the head (ADR 0186): two rows read, not
    the whole chain."""
    head = backend.head()
    if head < 1:
        return None
    wanted = [head - 1, head] if head > 1 else [head]
    rows = list(backend.scan(after=wanted[0] - 1))[: len(wanted)]
    if [r[_POSITION] for r in rows] != wanted:
        return f"position {head - 1} is missing below the head {head}"
    previous = rows[0][Column.HASH] if head > 1 else GENESIS_HASH
    row = rows[-1]
    try:
        computed = chain(bytes(previous), _canonical_row(backend, row))
    except Exception as exc:  # a tampered cell may not even parse
        return f"the head {head} cannot be read: {exc}"
    if computed != bytes(row[Column.HASH]):
        return f"the head {head} does not link to position {head - 1}: its hash does not match"
    return None


def _canonical_row(backend: Backend, row: Row) -> bytes:
    if not isinstance(row[Column.PAYLOAD], bytes | bytearray | memoryview):
        # SQLite keeps a cell's storage class: engram writes the payload as a BLOB (ADR 0186).
        kind = type(row[Column.PAYLOAD]).__name__
        raise ValueError(f"its payload cell holds a {kind}, not the bytes engram writes")
    at = backend.at_text(row[Column.AT])
    fields = (
        *row[: Column.AT],
        at,
        bytes(row[Column.PAYLOAD]),
        *row[Column.CAUSATION_ID : Column.HASH],
    )
    return canonical(fields)


def _failed(
    checked: int, head: int, head_hash: bytes, first_bad: int | None, reason: str
) -> VerifyReport:
    return VerifyReport(
        ok=False,
        checked=checked,
        head=head,
        head_hash=head_hash.hex(),
        first_bad=first_bad,
        reason=reason,
    )
