"""Group commit: many threads' appends share one transaction and one fsync.

The first caller to find no leader becomes the leader. It drains the queue and commits what
it took as one group, again and again while callers keep arriving, so commits run back to
back with no thread hand-off in between; the others only wait for their own request's
outcome. A leader whose own request is done hands leadership to the next waiting caller
after a few rounds, so no caller serves the others for long.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ledger.errors import LedgerClosedError
from ledger.planning import Request

#: Groups a leader commits for others after its own request is done, before handing over.
ROUNDS_AFTER_OWN = 4


class GroupCommitter:
    """Serialize commits of queued requests; one leader at a time, no background thread."""

    def __init__(self, commit: Callable[[list[Request]], None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()  # guards the queue and the leadership flag
        self._commit_lock = threading.Lock()  # held while a group commits; close() takes it
        self._queue: list[Request] = []
        self._leading = False
        self.closed = False

    def submit(self, request: Request) -> None:
        """Commit ``request`` (with whatever else is queued); return once it is decided."""
        with self._lock:
            self._queue.append(request)
            lead = not self._leading
            self._leading = True
            if not lead:
                request.wake = wake = threading.Event()
        if not lead:
            try:
                wake.wait()
            except BaseException:
                self._withdraw(request, wake)
                raise
            if not request.lead:
                return
        self._lead(request)

    def close(self) -> None:
        """Wait for the group committing now; later requests fail with LedgerClosedError."""
        with self._commit_lock:
            self.closed = True

    def _lead(self, own: Request) -> None:
        rounds = 0
        try:
            while True:
                with self._lock:
                    if not self._queue:
                        self._leading = False
                        return
                    if own.done and rounds >= ROUNDS_AFTER_OWN:
                        self._hand_over()
                        return
                    group, self._queue = self._queue, []
                try:
                    with self._commit_lock:
                        if self.closed:
                            for queued in group:
                                queued.error = LedgerClosedError(
                                    "the ledger was closed before this append"
                                )
                        else:
                            self._commit(group)
                finally:
                    for queued in group:
                        queued.done = True
                        if queued.wake is not None:
                            queued.wake.set()
                if own.done:
                    rounds += 1
        except BaseException:
            with self._lock:
                if self._queue:
                    self._hand_over()
                else:
                    self._leading = False
            raise

    def _hand_over(self) -> None:
        # Called with self._lock held and a non-empty queue; leadership stays taken.
        successor = self._queue[0]
        successor.lead = True
        assert successor.wake is not None  # queued behind a leader, so it waits
        successor.wake.set()

    def _withdraw(self, request: Request, wake: threading.Event) -> None:
        # The caller was interrupted while waiting. If its request is still queued, take it
        # out (passing on leadership if it was just handed over); if a leader has taken it,
        # wait for the outcome so that nothing commits after the caller has given up.
        with self._lock:
            if request in self._queue:
                self._queue.remove(request)
                if request.lead:
                    if self._queue:
                        self._hand_over()
                    else:
                        self._leading = False
                return
        while not request.done:
            wake.wait(0.1)
