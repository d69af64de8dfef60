"""What the suites share: sizes, a figure, interleaved repetitions, progress, scratch files."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

#: Units where a smaller value is the better one.
LOWER_IS_BETTER = frozenset(("s", "ms", "MB", "|Δ|"))
#: How a figure's target reads: the engram/reference speed ratio must reach it.
Target = float | None


@dataclass(frozen=True)
class Sizes:
    """How much work each figure does per repetition."""

    batch_events: int  # batches of 100
    single_appends: int  # one event per append
    thread_appends: int  # per thread, 8 threads
    replay_events: int
    pg_events: int
    audit_events: int
    recall_memories: int  # memories in the recall latency store
    rebuild_texts: int  # texts embedded per repetition of the MiniLM rebuild figure


FULL = Sizes(20_000, 500, 200, 200_000, 10_000, 1_000_000, 100_000, 2_000)
QUICK = Sizes(2_000, 100, 20, 20_000, 1_000, 30_000, 5_000, 200)


@dataclass(frozen=True)
class Config:
    """The resolved options of one `engram bench` run."""

    suite: str
    quick: bool
    repeat: int
    json_path: str | None
    pg_url: str
    scratch: str
    sizes: Sizes
    seed: int
    locomo: str | None = None  # the LoCoMo file (None: $ENGRAM_LOCOMO or the default)
    beam: str | None = None  # the BEAM file (None: $ENGRAM_BEAM or the default)
    embedding_cache: str | None = None  # a lasting cache of MiniLM vectors (None: none)
    recall_scale: int | None = None  # memories of the large latency store (None: none)
    store_cache: str | None = None  # where built latency stores are kept between runs
    modes: tuple[str, ...] = ()  # the recall quality modes to run (empty: every one)


@dataclass
class Figure:
    """One line of the report: engram against a reference, measured in the same run.

    ``unit`` is a rate such as ``events/s`` or a ``recall`` (higher is better), or a time,
    ``s`` or ``ms`` (lower is better); ``ratio`` is always engram's over the reference's in
    the better direction, so > 1 means engram is faster (or finds more).
    """

    name: str
    unit: str
    reference_name: str
    target: Target
    engram_samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    note: str = ""
    skipped: str | None = None
    error: str | None = None

    @property
    def engram(self) -> float | None:
        return statistics.median(self.engram_samples) if self.engram_samples else None

    @property
    def reference(self) -> float | None:
        return statistics.median(self.reference_samples) if self.reference_samples else None

    @property
    def ratio(self) -> float | None:
        """Return the median of the per-repetition ratios.

        Engram and its reference run back to back within a repetition, so each pair shares
        the machine's noise of that moment; the median of the pairs is steadier than the
        ratio of the two medians.
        """
        pairs = [
            (e, r)
            for e, r in zip(self.engram_samples, self.reference_samples, strict=False)
            if e > 0 and r > 0
        ]
        if not pairs:
            return None
        lower = self.unit in LOWER_IS_BETTER
        return statistics.median(r / e if lower else e / r for e, r in pairs)

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "ERROR"
        if self.skipped is not None:
            return "SKIP"
        ratio = self.ratio
        if ratio is None:
            return "info" if self.target is None and self.engram_samples else "n/a"
        if self.target is None:
            return "info"
        return "PASS" if ratio >= self.target else "FAIL"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "engram": self.engram,
            "reference": self.reference,
            "reference_name": self.reference_name,
            "ratio": self.ratio,
            "target": self.target,
            "verdict": self.verdict,
            "engram_samples": self.engram_samples,
            "reference_samples": self.reference_samples,
            "note": self.note,
            "skipped": self.skipped,
            "error": self.error,
        }


def log(message: str) -> None:
    """Print a progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


class Progress:
    """Report the progress of a long step on stderr, every 5%."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, max(total, 1)
        self.done = 0
        self._shown = -1
        self._tty = sys.stderr.isatty()
        self._start = time.perf_counter()

    def update(self, done: int) -> None:
        self.done = done
        percent = min(100, done * 100 // self.total)
        step = percent // 5
        if step == self._shown:
            return
        self._shown = step
        line = f"{self.label}… {percent}%"
        if self._tty:
            print(f"\r{line}", end="" if percent < 100 else "\n", file=sys.stderr, flush=True)
        elif step % 2 == 0 or percent == 100:
            log(line)

    def finish(self) -> float:
        self.update(self.total)
        return time.perf_counter() - self._start


def repeat_runs(
    repeat: int, one_repetition: Callable[[], dict[str, float]], label: str
) -> dict[str, list[float]]:
    """Call ``one_repetition`` ``repeat`` times and collect each side's figure per repetition."""
    samples: dict[str, list[float]] = {}
    for rep in range(repeat):
        for name, value in one_repetition().items():
            samples.setdefault(name, []).append(value)
        log(f"  {label}: repetition {rep + 1}/{repeat} done")
    return samples


def alternate(chunks: int, sides: Sequence[tuple[str, Callable[[int], None]]]) -> dict[str, float]:
    """Run chunk ``i`` of every side for each ``i``, rotating who goes first; return seconds.

    Shared machines drift within seconds (another job's fsyncs, CPU steal): alternating small
    chunks puts engram and its reference under the same noise, and rotating the order
    cancels any advantage of going first or second.
    """
    spent = dict.fromkeys((name for name, _ in sides), 0.0)
    for i in range(chunks):
        k = i % len(sides)
        for name, step in [*sides[k:], *sides[:k]]:
            start = time.perf_counter()
            step(i)
            spent[name] += time.perf_counter() - start
    return spent


def interleave(
    repeat: int, runs: list[tuple[str, Callable[[], float]]], label: str
) -> dict[str, list[float]]:
    """Run whole measurements ``repeat`` times, alternating their order, collecting samples."""
    samples: dict[str, list[float]] = {name: [] for name, _ in runs}
    for rep in range(repeat):
        order = runs if rep % 2 == 0 else list(reversed(runs))
        for name, measure in order:
            samples[name].append(measure())
        log(f"  {label}: repetition {rep + 1}/{repeat} done")
    return samples


@contextmanager
def scratch_file(directory: str, name: str) -> Iterator[str]:
    """Yield a fresh path under ``directory`` and remove it (and its WAL files) afterwards."""
    path = os.path.join(directory, name)
    remove_db(path)
    try:
        yield path
    finally:
        remove_db(path)


@contextmanager
def data_home(folder: str) -> Iterator[str]:
    """Point ``XDG_DATA_HOME`` at ``folder`` for the block (for this process and those it
    starts), then put it back: the ledgers a bench makes seal by default (ADR 0086), and
    their key stores belong with them, not in the user's data home."""
    previous = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = folder
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = previous


def remove_db(path: str) -> None:
    """Remove a SQLite file with its -wal and -shm companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            os.remove(path + suffix)


def remove_tree(path: str) -> None:
    """Remove a scratch directory this run created."""
    shutil.rmtree(path, ignore_errors=True)
