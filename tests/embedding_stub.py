"""A real OpenAI-compatible embeddings server on 127.0.0.1, for the http provider's tests.

Import with ``from embedding_stub import ...`` (``tests/`` is on ``sys.path``, see
``strategies.py``). By default every request succeeds with hash-provider vectors of the
server's dimension, listed in reverse order (the client must sort by ``index``). Queue
:class:`Reply` objects on ``script`` to answer the next requests otherwise.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engram.projections.embedding import HashEmbedder


@dataclass
class Reply:
    """One scripted answer: a status, a body (JSON-encoded unless bytes), headers, a delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request the server received (header names lowercased)."""

    path: str
    headers: dict[str, str]
    body: Any


class StubServer:
    """The server: ``base_url``, the ``script`` of replies to give, the ``requests`` seen."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.embedder = HashEmbedder(dimension=dimension)
        self.script: list[Reply] = []
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> Reply:
        """Record a request and return the reply to give."""
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        with self._lock:
            self.requests.append(Seen(path, headers, document))
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            return scripted
        if path != "/v1/embeddings" or not isinstance(document, dict):
            return Reply(404, {"error": {"message": f"no route {path}"}})
        texts = document["input"]
        vectors = self.embedder.embed(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": vectors[i].tolist()}
            for i in reversed(range(len(texts)))
        ]
        return Reply(200, {"object": "list", "model": document["model"], "data": data})

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()


def _handler(server: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = server.answer(self.path, headers, body)
            if reply.delay:
                time.sleep(reply.delay)
            payload = (
                reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            )
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (a timeout test): nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def stub_server(dimension: int = 16) -> Iterator[StubServer]:
    """Run a :class:`StubServer` for the duration of the block."""
    server = StubServer(dimension)
    server.start()
    try:
        yield server
    finally:
        server.close()
