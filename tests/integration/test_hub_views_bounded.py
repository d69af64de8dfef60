"""The hub's newest-first pages read the events they show, not the ledger or the stream
before them: on a long ledger they used to hold the single worker for seconds a request."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import engram
from engram.hub import views
from engram.ledger import Ledger


def test_the_newest_events_and_an_agents_stream_are_read_from_their_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with engram.open_memory(str(tmp_path / "l.db"), config=os.devnull) as memory:
        bob = memory.agent("bob")
        for i in range(120):
            bob.observe(f"note {i}")
        head = memory.ledger.head()
        reads: list[tuple[str, Any]] = []
        read, read_stream = Ledger.read, Ledger.read_stream

        def spy_read(self: Ledger, after: int = 0, **kw: Any) -> Any:
            reads.append(("read", after))
            return read(self, after, **kw)

        def spy_stream(self: Ledger, stream: str, after_version: int = 0) -> Any:
            reads.append(("read_stream", after_version))
            return read_stream(self, stream, after_version)

        monkeypatch.setattr(Ledger, "read", spy_read)
        monkeypatch.setattr(Ledger, "read_stream", spy_stream)
        rows = views.events(memory.ledger, limit=10, newest=True)
        assert [r["position"] for r in rows] == list(range(head, head - 10, -1))
        assert reads == [("read", head - 10)]
        reads.clear()
        rows = views.events(memory.ledger, streams=["agent:bob"], limit=10, newest=True)
        assert "note 119" in rows[0]["payload"]
        assert [r["position"] for r in rows] == list(range(head, head - 10, -1))
        assert reads == [("read_stream", 110)]
        rows = views.events(memory.ledger, streams=["agent:bob"], after=head - 3, newest=True)
        assert [r["position"] for r in rows] == [head, head - 1, head - 2]
        reads.clear()
        page = views.memories(memory, "bob", None)
        assert [r["text"] for r in page["stream"]][:2] == ["note 119", "note 118"]
        assert len(page["stream"]) == 50
        assert ("read_stream", 70) in reads


def test_a_form_whose_body_never_arrives_whole_is_a_bad_request() -> None:
    # ADR 0163: a body cut at its deadline raised ClientDisconnect out of the handler, which
    # the server logged as an application error with its traceback.
    import asyncio

    from starlette.requests import Request

    from engram.hub.app import BadRequestError, _form

    scope = {
        "type": "http", "method": "POST", "path": "/review", "query_string": b"",
        "headers": [(b"content-type", b"application/x-www-form-urlencoded")],
    }  # fmt: skip
    parts = iter([{"type": "http.request", "body": b"decision=app", "more_body": True}])

    async def receive() -> dict[str, object]:
        return next(parts, {"type": "http.disconnect"})

    with pytest.raises(BadRequestError, match="did not arrive whole"):
        asyncio.run(_form(Request(scope, receive)))
