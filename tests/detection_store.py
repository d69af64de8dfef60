"""A memory for detection's tests: under each embedder the suite can run, with background
notes naming nobody observed first, so a person's name stays a rare word."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import engram
from engram.projections.embedding.onnx_provider import ready as onnx_ready
from engram.runtime import Memory

NOW = datetime.now(UTC).replace(microsecond=0)
DAY = timedelta(days=1)
#: The hash embedder always; MiniLM (ONNX) where it can run.
EMBEDDERS = ["hash", pytest.param("onnx", marks=pytest.mark.skipif(
    not onnx_ready(), reason="needs the onnx extra and the MiniLM weights"))]  # fmt: skip


#: Memories naming nobody, so a name stays a rare word beside them.
FILLER = [f"the {p} keeps {t}." for p in ("shed", "attic", "garage", "cellar", "barn")
          for t in ("bees", "old maps", "a boat", "two cats", "a diary", "apples")]  # fmt: skip


@contextmanager
def embedding_with(provider: str, folder: Path, ledger: str = "ledger.db") -> Iterator[Memory]:
    """Open the memory ``ledger`` in ``folder``, embedding with ``provider`` (its routing
    file written beside it)."""
    routing = folder / "routing.toml"
    routing.write_text(f'[embedding.default]\nprovider = "{provider}"\n')
    with engram.open_memory(str(folder / ledger), routing=str(routing)) as opened:
        yield opened


@contextmanager
def detecting(provider: str, folder: Path, filler: Sequence[str]) -> Iterator[Memory]:
    """Open a memory in ``folder`` embedding with ``provider``; ``filler`` observed first,
    a day apart, three hundred days ago."""
    with embedding_with(provider, folder) as opened:
        ana = opened.agent("ana")
        for i, text in enumerate(filler):
            ana.observe(text, at=NOW - 300 * DAY + i * DAY)
        yield opened


@pytest.fixture(name="memory", params=EMBEDDERS)
def detecting_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """The ``memory`` detection's tests share: one per embedder the suite can run, the
    :data:`FILLER` observed first (a test module imports it to use it)."""
    with detecting(request.param, tmp_path, FILLER) as opened:
        yield opened


def replaced(memory: Memory, old: str, new: str) -> bool:
    """Observe ``old`` then ``new`` fifty days later; say whether ``new`` replaced ``old``."""
    ana = memory.agent("ana")
    first = ana.observe(old, at=NOW - 60 * DAY)
    second = ana.observe(new, at=NOW - 10 * DAY)
    return any(
        e.payload.position == second and first in e.payload.replaces
        for e in memory.ledger.read(0, kinds=["memory.superseded"])
    )
