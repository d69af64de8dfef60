"""Live events for the hub's viewers: one follower of the ledger, fanned out as SSE messages.

However many pages watch, one thread reads the ledger (:meth:`Ledger.read` from the last
position it saw, waiting with :meth:`Ledger.wait` in between), encodes each page of new
events once per kind filter, and hands the bytes to every subscriber's bounded queue on the
event loop. A viewer too slow to drain its queue is not allowed to grow it: it is sent an
``overflow`` message and its older messages are dropped, so memory stays flat whatever the
append rate (ADR 0042).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from engram.ledger import Event, Ledger
from engram.ledger.personal import masked

log = logging.getLogger("engram.hub")

#: Events read per page; one SSE message carries at most this many.
PAGE = 500
#: Messages one viewer may have waiting; past it the viewer is told it overflowed.
QUEUE = 64
#: Longest text of a payload field sent live (the event page shows the whole of it).
CLIP = 200
OVERFLOW = b"event: overflow\ndata: {}\n\n"


def summary(event: Event) -> dict[str, Any]:
    """Return what a live viewer needs of an event: its place, kind and a clipped payload,
    another subject's private fields as ``[private]`` (the hub acts as no agent, as on its
    ledger pages; the follower's ledger opens sealed fields with the key store)."""
    payload = msgspec.to_builtins(masked(event, None).payload)
    if isinstance(payload, dict):
        payload = {k: _clip(v) for k, v in payload.items()}
    return {
        "position": event.position,
        "kind": event.kind,
        "stream": event.stream,
        "actor": event.actor,
        "at": event.at.isoformat(),
        "payload": payload,
    }


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CLIP:
        return value[:CLIP] + "…"
    if isinstance(value, list) and len(value) > 20:
        return [*value[:20], "…"]
    return value


def encode(events: Sequence[Event]) -> bytes:
    """Return one SSE message carrying ``events`` (``id`` is the last position)."""
    data = json.dumps([summary(e) for e in events], separators=(",", ":"))
    return f"id: {events[-1].position}\nevent: events\ndata: {data}\n\n".encode()


@dataclass(eq=False)
class Subscriber:
    """One viewer: the kinds it wants (None: all) and its bounded queue of messages."""

    kinds: frozenset[str] | None
    queue: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue(QUEUE))
    dropped: int = 0  # messages of events this viewer never got


class Broadcaster:
    """Follow the ledger in one thread; publish each page of new events to every subscriber."""

    def __init__(self, open_ledger: Callable[[], Ledger], *, wait: float = 0.5) -> None:
        self._open = open_ledger
        self._wait = wait
        self._subscribers: set[Subscriber] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.head = 0
        self.error: str | None = None

    def start(self) -> None:
        """Start following from the ledger's head, on the running event loop."""
        self._loop = asyncio.get_running_loop()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="engram-hub-follow", daemon=True
        )
        self._thread.start()
        ready.wait(30)

    def stop(self) -> None:
        """Stop following and end every subscriber's stream."""
        self._stop.set()
        for sub in list(self._subscribers):
            _put(sub, None)
        if self._thread is not None:
            self._thread.join(10)

    def subscribe(self, kinds: Sequence[str] | None = None) -> Subscriber:
        """Return a new subscriber for ``kinds`` (None: every kind); call on the loop."""
        sub = Subscriber(frozenset(kinds) if kinds else None)
        self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        """Forget a subscriber (its viewer went away)."""
        self._subscribers.discard(sub)

    @property
    def viewers(self) -> int:
        """Return how many viewers are subscribed."""
        return len(self._subscribers)

    def _run(self, ready: threading.Event) -> None:
        try:
            with self._open() as ledger:
                seen = self.head = ledger.head()
                ready.set()
                while not self._stop.is_set():
                    head = ledger.head()
                    if head <= seen:
                        ledger.wait(seen, self._wait)
                        continue
                    events = list(ledger.read(seen, upto=head, limit=PAGE))
                    if not events:  # pragma: no cover - the head moved: the events are there
                        seen = head
                        continue
                    seen = self.head = events[-1].position
                    assert self._loop is not None
                    self._loop.call_soon_threadsafe(self._publish, events)
        except Exception as exc:  # the page says the live view stopped, and why
            self.error = f"{type(exc).__name__}: {exc}"
            log.exception("the hub stopped following the ledger")
        finally:
            ready.set()

    def _publish(self, events: list[Event]) -> None:
        messages: dict[frozenset[str] | None, bytes | None] = {}
        for sub in list(self._subscribers):
            if sub.kinds not in messages:
                chosen = events if sub.kinds is None else [e for e in events if e.kind in sub.kinds]
                messages[sub.kinds] = encode(chosen) if chosen else None
            message = messages[sub.kinds]
            if message is not None:
                _put(sub, message)


def _put(sub: Subscriber, message: bytes | None) -> None:
    """Queue a message; a full queue is emptied and replaced by one ``overflow`` message."""
    if sub.queue.full():
        while not sub.queue.empty():
            if sub.queue.get_nowait() is not OVERFLOW:
                sub.dropped += 1
        sub.queue.put_nowait(OVERFLOW)
    sub.queue.put_nowait(message)
