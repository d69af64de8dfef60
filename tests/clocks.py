"""A scheduler clock for the jobs' tests: the runner asks it the time, the test moves it."""

from __future__ import annotations

from datetime import datetime


class Clock:
    """A scheduler clock the test moves by hand."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
