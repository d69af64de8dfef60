"""Check a count a read takes (``k``, ``limit``) or a position it looks up.

SQLite binds integers of 64 bits: a larger Python int given as a ``LIMIT`` or compared with
a position raised ``OverflowError`` from the driver (``engram graph top -k`` with twenty
digits). :func:`check_count` refuses it as the other bad counts are refused.
"""

from __future__ import annotations

from engram.projections.errors import QueryError

__all__ = ["SQL_INT_MAX", "check_count"]

#: The largest integer SQLite stores or binds.
SQL_INT_MAX = 2**63 - 1


def check_count(value: object, name: str, what: str = "a positive int") -> None:
    """Refuse ``value`` unless it is an int in 1..:data:`SQL_INT_MAX` (bools are not counts).

    Raises:
        QueryError: naming ``name`` and saying it must be ``what`` (below 1, not an int) or
            at most :data:`SQL_INT_MAX`.
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise QueryError(f"{name} must be {what}, got {value!r}")
    if value > SQL_INT_MAX:
        raise QueryError(f"{name} must be at most {SQL_INT_MAX} (what SQLite holds), got {value}")
