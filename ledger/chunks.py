"""Split long lists of keys into slices that fit one SQL ``IN (...)`` list."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# SQLite's host-parameter limit is 32,766 on current builds but 999 on old ones; 500 keeps
# every statement well inside both and costs nothing measurable per slice.
SQL_CHUNK = 500


def chunked(items: Sequence[T], size: int = SQL_CHUNK) -> Iterator[Sequence[T]]:
    """Yield consecutive slices of ``items`` of at most ``size`` elements."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]
