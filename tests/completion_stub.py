"""A real OpenAI-compatible chat completions server on 127.0.0.1, for the http completer.

Import with ``from completion_stub import ...`` (``tests/`` is on ``sys.path``). Every
request body is recorded (``requests``), raw and decoded, so a test can check what reached
the provider. By default the server answers with ``answer(body)`` — a JSON object it builds
from the request — as the first choice's message content; queue :class:`Reply` objects on
``script`` to answer the next requests otherwise (a status, a raw body, headers, a delay).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status, a body (JSON-encoded unless bytes), headers, a delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request the server received (header names lowercased), raw and decoded."""

    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any


def chat(content: str) -> dict[str, Any]:
    """Return a chat completion whose first choice says ``content``."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
    }


def echo_draft(body: Any) -> dict[str, Any]:
    """Answer a learning prompt with a rule made of the scar's lesson, as a model might."""
    prompt = json.loads(body["messages"][1]["content"])
    return {"destination": "rules", "text": " ".join(prompt["lesson"].split())[:200]}


class StubServer:
    """The server: ``base_url``, the ``script`` of replies to give, the ``requests`` seen."""

    def __init__(self, answer: Callable[[Any], Any]) -> None:
        self.answer_with = answer
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

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Record a request and return the reply to give."""
        try:
            document = json.loads(raw)
        except ValueError:
            document = None
        with self._lock:
            self.requests.append(Seen(path, headers, raw, document))
            scripted = self.script.pop(0) if self.script else None
        if scripted is not None:
            return scripted
        if path != "/v1/chat/completions" or not isinstance(document, dict):
            return Reply(404, {"error": {"message": f"no route {path}"}})
        return Reply(200, chat(json.dumps(self.answer_with(document))))

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
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = server.answer(self.path, headers, raw)
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
def stub_server(answer: Callable[[Any], Any] = echo_draft) -> Iterator[StubServer]:
    """Run a :class:`StubServer` for the duration of the block."""
    server = StubServer(answer)
    server.start()
    try:
        yield server
    finally:
        server.close()
