"""The HTTP servers' header deadline (ADR 0125), on a real uvicorn server and real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")

from engram import httpguard  # noqa: E402


class _Quick(httpguard.Deadline):
    header_timeout = 0.5
    body_timeout = 2.0


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    answer = b"got " + body
    length = [(b"content-length", str(len(answer)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": length})
    await send({"type": "http.response.body", "body": answer})


@pytest.fixture
def port() -> Iterator[int]:
    config = httpguard.config(_echo, "127.0.0.1", 0, log_level="warning")
    config.http = _Quick
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    (listening,) = [s for srv in server.servers for s in srv.sockets]
    yield listening.getsockname()[1]
    server.should_exit = True
    thread.join(timeout=30)


def _closed_within(conn: socket.socket, seconds: float) -> bool:
    """Say whether the server closes ``conn`` within ``seconds`` (reading what it sends)."""
    conn.settimeout(seconds)
    try:
        while conn.recv(4096):
            pass
    except TimeoutError:
        return False
    return True


def test_a_connection_that_sends_nothing_or_half_its_headers_is_closed(port: int) -> None:
    with (
        socket.create_connection(("127.0.0.1", port)) as silent,
        socket.create_connection(("127.0.0.1", port)) as slow,
    ):
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # the blank line never comes
        assert _closed_within(silent, 5)
        assert _closed_within(slow, 5)


def test_a_whole_request_is_served_however_slow_its_body_within_its_deadline(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhe")
        time.sleep(1.0)  # twice the header deadline, half the body's
        conn.sendall(b"llo")
        conn.settimeout(5)
        answer = chunk = conn.recv(4096)
        while chunk and not answer.endswith(b"got hello"):
            chunk = conn.recv(4096)
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 200")
    assert answer.endswith(b"got hello")


def test_a_body_that_never_completes_is_cut_at_its_deadline(port: int) -> None:
    # ADR 0140: a body sent a byte at a time held the connection, and the application's
    # task, for as long as the client liked.
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
        started = time.monotonic()
        conn.settimeout(0.4)
        closed = False
        while time.monotonic() - started < 10 and not closed:
            try:
                conn.sendall(b" ")
                closed = conn.recv(4096) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed
        assert 1.5 < time.monotonic() - started < 10


def test_plain_logs_replace_a_rich_handler_on_the_root_logger() -> None:
    import logging

    rich_logging = pytest.importorskip("rich.logging")
    root = logging.getLogger()
    before = list(root.handlers)
    fancy = rich_logging.RichHandler(rich_tracebacks=True)
    root.addHandler(fancy)
    try:
        httpguard.plain_logs()
        assert fancy not in root.handlers
        assert not [h for h in root.handlers if type(h).__name__ == "RichHandler"]
        assert len(root.handlers) == len(before) + 1  # a plain one in its place
    finally:
        root.handlers[:] = before


def test_the_next_request_on_a_kept_connection_has_its_own_deadline(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(5)
        assert conn.recv(4096).startswith(b"HTTP/1.1 200")
        conn.sendall(b"GET / HTTP/1.1\r\n")  # a second request, left half told
        assert _closed_within(conn, 5)


def test_the_servers_settings_carry_the_deadline_and_the_cap() -> None:
    config = httpguard.config(_echo, "127.0.0.1", 8765)
    assert config.http is httpguard.Deadline
    assert config.limit_concurrency == httpguard.MAX_CONNECTIONS
