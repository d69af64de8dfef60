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
