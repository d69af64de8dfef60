"""A row read checked against its place in the hash chain (ADR 0128).

`engram verify` walks the whole chain; a read cannot. But a sealed row is about to be opened
with its subject's key, and what the row says beside the sealed text (its visibility, its
actor, its stream) decides who is shown it: a row edited outside engram would hand the text
to another subject. So each sealed row a read builds is checked against its own link,
``hash(n) = sha256(hash(n-1) ‖ canonical(n))``: about a microsecond an event, and one
statement per page for the hashes of rows the page does not hold before it.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from typing import Any

from engram.ledger.backend import Backend, Row
from engram.ledger.chunks import chunked
from engram.ledger.codec import GENESIS_HASH, link
from engram.ledger.errors import DamagedEventError

__all__ = ["Links"]


class Links:
    """The links of one page of rows: the hash each row of a ``kinds`` kind follows."""

    def __init__(self, backend: Backend, rows: Sequence[Row], kinds: Container[str]) -> None:
        self._at_text: Callable[[Any], str] = backend.at_text
        wanted, last = [], -1
        for row in rows:
            pos = row[0]
            if row[4] in kinds and pos - 1 != last:
                wanted.append(pos - 1)
            last = pos
        self._before: dict[int, bytes] = {0: GENESIS_HASH} if 0 in wanted else {}
        for chunk in chunked([p for p in wanted if p >= 1]):
            self._before.update(backend.read_hashes(chunk))
        self._last: Row = (-1,)

    def follows(self, row: Row) -> None:
        """Note ``row`` as read (the next row's predecessor, where it is the next)."""
        self._last = row

    def check(self, row: Row) -> None:
        """Raise DamagedEventError unless ``row``'s hash is its link from its predecessor."""
        pos, last = row[0], self._last
        previous = last[11] if pos - 1 == last[0] else self._before.get(pos - 1, b"")
        # The stored rows, as both backends read them, hold the payload and hash as bytes and,
        # in SQLite, the time as the very text hashed: the row is the canonical fields.
        fields = row[:11] if type(row[7]) is str else (*row[:7], self._at_text(row[7]), *row[8:11])
        if link(previous, fields) != row[11]:
            raise DamagedEventError(
                f"the event at position {pos} was changed outside engram (its hash does not"
                " match its content and its predecessor's), so its sealed text is not opened;"
                " `engram verify` names the first damaged position"
            )
