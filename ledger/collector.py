"""Pause Python's cyclic garbage collector around allocation-heavy, cycle-free work."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; leave it alone if the caller had paused it.

    A page of rows turned into events, or a batch applied to a projection, allocates many
    small objects that form no cycles; the collector would walk them again and again for
    nothing (about a tenth of a replay or a rebuild). The pause is process-wide, so keep the
    block short (a page, a batch) and never ``yield`` to a caller from inside it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
