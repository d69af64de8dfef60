"""The hub's live feed shows another subject's private fields as [private] (ADR 0135)."""

from __future__ import annotations

from pathlib import Path

import engram
from engram.hub.live import encode, summary


def test_the_live_feed_masks_private_text_as_the_ledger_pages_do(tmp_path: Path) -> None:
    # The follower opens the ledger with the key store: a private memory's text and a
    # recall's query reached every viewer of /api/events in the clear.
    with engram.open_memory(str(tmp_path / "l.db")) as memory:
        alice = memory.agent("alice")
        alice.observe("the door code is 4711", visibility="private")
        alice.observe("the lobby opens at eight")
        alice.recall("what is the door code", 3)
        events = list(memory.ledger.read(0))
    assert any("4711" in str(e.payload) for e in events)  # opened by the key store
    shown = [summary(e) for e in events]
    texts = [s["payload"].get("text") for s in shown if s["kind"] == "memory.observed"]
    assert texts == ["[private]", "the lobby opens at eight"]
    (query,) = [s["payload"]["query"] for s in shown if s["kind"] == "memory.recalled"]
    assert query == "[private]"
    assert b"4711" not in encode(events)
