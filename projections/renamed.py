"""Keyword arguments renamed for one release: the old name still works and warns (ADR 0069).

"kind" names the event kind only; a parameter that used the word for something else (what
the salience index ranks, what a scar records) took its own name, and the old keyword is
accepted for one release with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from engram.projections.errors import QueryError

F = TypeVar("F", bound=Callable[..., Any])


def renamed_keyword(old: str, new: str) -> Callable[[F], F]:
    """Let ``old=`` stand for ``new=`` (with a DeprecationWarning); both at once is an error."""

    def wrap(function: F) -> F:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise QueryError(f"give {new}= only ({old}= is its deprecated name)")
                warnings.warn(
                    f"{function.__qualname__}: {old}= is deprecated, use {new}=",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
