"""The checks of the ledger's read arguments: positions, names, texts and timeouts.

Each refuses a bad value with :class:`~engram.ledger.errors.ConfigError` naming the argument,
before anything is read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from engram.ledger.errors import ConfigError

__all__ = ["POSITION_MAX", "check_position", "check_timeout", "check_utf8", "checked_names"]


def check_position(value: object, name: str) -> None:
    """Refuse a position or a count that is no int of 0..:data:`POSITION_MAX`."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{name} must be an int >= 0, got {value!r}")
    if value > POSITION_MAX:  # the driver would raise OverflowError binding it
        raise ConfigError(f"{name} must be at most {POSITION_MAX} (a 64-bit int), got {value}")


#: The largest position either database binds or stores.
POSITION_MAX = 2**63 - 1


def checked_names(values: Sequence[str] | None, what: str) -> list[str] | None:
    """Return ``values`` as a list of names (one string: a list of it), None for None."""
    if values is None:
        return None
    if isinstance(values, str):
        out = [values]
    else:
        out = list(values) if isinstance(values, Iterable) else []
    if not out or not all(isinstance(v, str) for v in out):
        raise ConfigError(f"{what} must be a non-empty list of strings, got {values!r}")
    for value in out:
        check_utf8(value, what)
    return out


def check_utf8(value: str, name: str) -> None:
    """Refuse a string no database can store: one with a lone surrogate (not UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{name} must be valid UTF-8 text, got {value!r}") from None


def check_timeout(value: object) -> None:
    """Refuse a timeout that is no number of seconds >= 0."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < math.inf:
        raise ConfigError(f"timeout must be a number of seconds >= 0, got {value!r}")
