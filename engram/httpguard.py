"""How long a client of engram's HTTP servers (the hub, MCP over HTTP) may take to say what
it wants, and how many may hold a connection at once (ADR 0125).

uvicorn closes a connection left idle *after* a response (its keep-alive timeout), but
waits for ever on one that has sent nothing, or half a request's headers: a few hundred
such connections ("slowloris") hold the server's file descriptors, and the bearer token is
read only once the headers are whole, so guarding the server with one does not help.
:class:`Deadline` closes a connection whose request line and headers are not whole within
:data:`HEADER_TIMEOUT` seconds of its first byte, or of the connection, and one whose body
is not whole within :data:`BODY_TIMEOUT` seconds of its headers (ADR 0140); :func:`config`
builds a server's settings with it and a cap on the connections served at once
(:data:`MAX_CONNECTIONS`; a request beyond it gets 503)."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BODY_TIMEOUT", "HEADER_TIMEOUT", "MAX_CONNECTIONS", "Deadline", "config", "plain_logs"]

#: Seconds a client has to send a whole request line and headers.
HEADER_TIMEOUT = 10.0
#: Seconds a client has to send a request's whole body once its headers are in (ADR 0140):
#: engram's requests are small (MCP calls, the hub's forms), bounded by the payload limit.
BODY_TIMEOUT = 60.0
#: Connections served at once; a request beyond them is answered 503.
MAX_CONNECTIONS = 256


class Deadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose headers are not whole within
    ``header_timeout`` seconds (the class attribute; :data:`HEADER_TIMEOUT`), or whose body
    is not whole within ``body_timeout`` seconds of them (:data:`BODY_TIMEOUT`)."""

    header_timeout = HEADER_TIMEOUT
    body_timeout = BODY_TIMEOUT
    _deadline: asyncio.TimerHandle | None = None
    _body: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.cycle is None or self.cycle.response_complete:
            self._arm()  # bytes of a request whose headers are not yet whole
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self._disarm()  # the headers are whole: the application reads the rest
            if self.cycle.more_body and self._body is None:
                # ... within its own deadline: a body sent a byte at a time held a
                # connection, and a task of the application, for as long as it liked.
                self._body = self.loop.call_later(self.body_timeout, self._body_expired)
            elif not self.cycle.more_body:
                self._body_done()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._body_done()
        super().connection_lost(exc)

    def _body_done(self) -> None:
        if self._body is not None:
            self._body.cancel()
            self._body = None

    def _body_expired(self) -> None:
        self._body = None
        if self.cycle is not None and self.cycle.more_body:
            self.transport.close()

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()


def config(app: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    """Return uvicorn's settings for ``app`` at ``host``:``port`` with the header deadline
    and the connection cap; ``options`` are uvicorn's own (a log level, ...)."""
    options.setdefault("limit_concurrency", MAX_CONNECTIONS)
    return uvicorn.Config(app, host=host, port=port, http=Deadline, **options)


def plain_logs() -> None:
    """Log with a plain handler where a rich one is installed (the MCP SDK installs one on
    the root logger): a rich traceback is rendered with syntax highlighting, about 60 ms of
    CPU each, so a few hundred clients disconnecting mid-request held the event loop for
    tens of seconds, answering nobody (ADR 0140)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if type(handler).__name__ == "RichHandler":
            root.removeHandler(handler)
            plain = logging.StreamHandler(sys.stderr)
            plain.setLevel(handler.level)
            plain.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
            root.addHandler(plain)
