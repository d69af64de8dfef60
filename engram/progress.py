"""A one-line progress bar with rate and ETA for long catch-ups, rebuilds and index loads."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import IO


class ProgressBar:
    """Draws ``label [#####.....] done/total  rate/s  ETA`` on a terminal stream.

    Call it as ``bar(label, done, total)`` (the projection engine's progress callback). Stays
    silent for work that ends within ``delay`` seconds. Redraws at most ten times a second; on
    a stream that is not a terminal it prints a plain line at most every ``every`` seconds, so
    logs stay readable.

    Between two calls a step may run for minutes (a rebuild applies 200,000 events per
    batch). After :meth:`start`, a ticker redraws the line every second with the time spent,
    so a long step never looks frozen; :meth:`close` (or leaving the ``with`` block) stops it.
    A total of 0 means an unknown amount of work: the line shows only the time spent.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        width: int = 30,
        *,
        delay: float = 0.5,
        every: float = 2.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.delay = delay
        self.every = every
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._start = time.monotonic()
        self._from = 0  # what the step had done when it started: a resumed step's offset
        self._last = 0.0
        self._drawn = False
        self._open_line = 0  # length of a terminal line drawn without its newline
        self._state = ("", 0, 0)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def start(self, label: str, total: int = 0) -> ProgressBar:
        """Begin a step of ``total`` units (0: unknown) and keep its line alive until closed."""
        with self._lock:
            self._start = self._last = time.monotonic()
            self._state = (label, 0, total)
            self._from = -1  # set by the step's first report
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __call__(self, label: str, done: int, total: int) -> None:
        with self._lock:
            before, was, _ = self._state
            if label != before or done < was:  # a new step: its rate is its own
                self._start = time.monotonic()
                self._from = -1
            if self._from < 0:
                # A step resumed where an interrupted one stopped reports its first count
                # with what was done before it: the rate counts only what it did (ADR 0175).
                self._from = 0 if done == 0 or time.monotonic() - self._start > 1.0 else done
            self._state = (label, done, total)
            self._draw(time.monotonic(), forced=False)

    def close(self) -> None:
        """Stop the ticker and end the line, so what follows starts on a fresh one."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None
        with self._lock:
            if self._open_line:
                self.stream.write("\n")
                self.stream.flush()
                self._open_line = 0

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                _, done, total = self._state
                if total and done >= total:
                    continue
                now = time.monotonic()
                if now - self._last >= (1.0 if self.tty else self.every * 5):
                    self._draw(now, forced=True)

    def _draw(self, now: float, *, forced: bool) -> None:
        label, done, total = self._state
        finished = total > 0 and done >= total
        elapsed = max(now - self._start, 1e-9)
        if elapsed < self.delay and not self._drawn:
            return
        if not forced and not finished and now - self._last < (0.1 if self.tty else self.every):
            return
        self._last = now
        line = self._line(label, done, total, elapsed)
        if self.tty:
            pad = " " * max(self._open_line - len(line), 0)
            self.stream.write("\r" + line + pad + ("\n" if finished else ""))
            self._open_line = 0 if finished else len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._drawn = True

    def _line(self, label: str, done: int, total: int, elapsed: float) -> str:
        spent = f"{elapsed:,.0f}s"
        if total <= 0:
            return f"{label}… {spent}"
        filled = int(self.width * min(done / total, 1.0))
        bar = "#" * filled + "." * (self.width - filled)
        rate = max(done - max(self._from, 0), 0) / elapsed
        if done == 0:
            return f"{label} [{bar}] 0/{total:,}  {spent}"
        eta = (total - done) / rate if rate > 0 else float("inf")
        eta_text = "--" if eta == float("inf") else f"{eta:,.0f}s"
        return f"{label} [{bar}] {done:,}/{total:,}  {rate:,.0f} events/s  ETA {eta_text}"
