"""A one-line progress bar with rate and ETA for long catch-ups and rebuilds."""

from __future__ import annotations

import sys
import time
from typing import IO


class ProgressBar:
    """Draws ``label [#####.....] done/total  rate/s  ETA`` on a terminal stream.

    Stays silent for work that ends within half a second. Redraws at most ten times a
    second; on a stream that is not a terminal it prints a plain line at most every two
    seconds, so logs stay readable.
    """

    def __init__(self, stream: IO[str] | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._start = time.monotonic()
        self._last = 0.0
        self._drawn = False

    def __call__(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        finished = done >= total
        if now - self._start < 0.5 and not self._drawn:
            return
        if not finished and now - self._last < (0.1 if self.tty else 2.0):
            return
        self._last = now
        elapsed = max(now - self._start, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else float("inf")
        filled = self.width if total <= 0 else int(self.width * min(done / total, 1.0))
        bar = "#" * filled + "." * (self.width - filled)
        eta_text = "--" if eta == float("inf") else f"{eta:,.0f}s"
        line = f"{label} [{bar}] {done:,}/{total:,}  {rate:,.0f} events/s  ETA {eta_text}"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if finished else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._drawn = True
