"""Group commit: many threads' appends share one transaction and one fsync.

The first caller to find no leader becomes the leader. It drains the queue and commits what
it took as one group, again and again while callers keep arriving, so commits run back to
back with no thread hand-off in between; the others only wait for their own request's
outcome. A leader whose own request is done hands leadership to the next waiting caller
after a few rounds, so no caller serves the others for long.

Before it takes a group, a leader waits briefly (at most :data:`GATHER_WAIT`) while other
callers are inside an append but not yet queued — preparing their events, or just woken
with their outcome and about to return or append again. Under the GIL those callers need
the CPU the leader would otherwise spend committing a smaller group; waiting for them
fills the group instead of committing back-to-back groups of one. A caller alone never
waits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from engram.ledger.errors import LedgerClosedError
from engram.ledger.planning import Request

#: Groups a leader commits for others after its own request is done, before handing over.
ROUNDS_AFTER_OWN = 4
#: Longest a leader waits for callers inside an append to queue their request (seconds).
GATHER_WAIT = 0.001


def _asleep() -> threading.Lock:
    """Return a held lock: its owner sleeps acquiring it until another thread releases it."""
    lock = threading.Lock()
    lock.acquire()
    return lock


class GroupCommitter:
    """Serialize commits of queued requests; one leader at a time, no background thread.

    Callers bracket each append with :meth:`enter` and :meth:`leave` (around preparing and
    submitting it), so that a leader knows who is about to queue a request.
    """

    def __init__(self, commit: Callable[[list[Request]], None]) -> None:
        self._commit = commit
        self._lock = threading.Lock()  # guards everything below but the commit lock
        self._ready = threading.Condition(self._lock)  # a gathering leader waits on it
        self._commit_lock = threading.Lock()  # held while a group commits; close() takes it
        self._queue: list[Request] = []
        self._leading = False
        self._active = 0  # callers between enter() and leave()
        self._gathering = False  # a leader waits on _ready
        self._idle = 0  # 1 while the gathering leader's own request is already decided
        self.closed = False

    def enter(self) -> None:
        """Say that the calling thread is about to prepare and submit a request."""
        with self._lock:
            self._active += 1

    def leave(self) -> None:
        """Say that the calling thread's append is over (decided, refused or failed)."""
        with self._lock:
            self._active -= 1
            if self._gathering and len(self._queue) >= self._active - self._idle:
                self._ready.notify()

    def submit(self, request: Request) -> None:
        """Commit ``request`` (with whatever else is queued); return once it is decided."""
        with self._lock:
            self._queue.append(request)
            lead = not self._leading
            if lead:
                self._leading = True
            else:
                request.wake = wake = _asleep()
                if self._gathering and len(self._queue) >= self._active - self._idle:
                    self._ready.notify()
        if not lead:
            try:
                wake.acquire()
                if not request.lead:
                    return
            except BaseException:
                self._withdraw(request, wake)
                raise
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
                    if self._queue and not (own.done and rounds >= ROUNDS_AFTER_OWN):
                        self._gather(own)
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
                        if queued.wake is not None and queued is not own:
                            queued.wake.release()
                if own.done:
                    rounds += 1
        except BaseException:
            with self._lock:
                self._gathering = False
                if self._queue:
                    self._hand_over()
                else:
                    self._leading = False
            raise

    def _gather(self, own: Request) -> None:
        # Called with self._lock held. Wait until every caller inside an append (but this
        # leader, once its own request is decided) has queued, or GATHER_WAIT has passed.
        idle = 1 if own.done else 0
        if len(self._queue) >= self._active - idle:
            return
        self._idle, self._gathering = idle, True
        try:
            deadline = time.monotonic() + GATHER_WAIT
            while len(self._queue) < self._active - idle:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._ready.wait(remaining)
        finally:
            self._gathering = False

    def _hand_over(self) -> None:
        # Called with self._lock held and a non-empty queue; leadership stays taken.
        successor = self._queue[0]
        successor.lead = True
        assert successor.wake is not None  # queued behind a leader, so it waits
        successor.wake.release()

    def _withdraw(self, request: Request, wake: threading.Lock) -> None:
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
            wake.acquire(timeout=0.1)
