"""The hub's live fan-out and its door's small parts, against a real SQLite ledger."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("starlette")

import engram
from engram.hub.live import OVERFLOW, QUEUE, Broadcaster, Subscriber, _put
from engram.hub.security import host_name
from engram.ledger import NewEvent
from engram.ledger.catalog import MemoPosted, NeuronActivated
from engram.netguard import check_token


def _messages(queue: asyncio.Queue[bytes | None]) -> list[bytes | None]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def test_a_viewer_that_does_not_drain_is_told_it_overflowed_and_never_grows() -> None:
    async def run() -> tuple[int, list[bytes | None], int]:
        sub = Subscriber(None)
        for i in range(QUEUE * 3 + 5):
            _put(sub, f"m{i}".encode())
            assert sub.queue.qsize() <= QUEUE
        return sub.dropped, _messages(sub.queue), sub.queue.qsize()

    dropped, messages, left = asyncio.run(run())
    assert left == 0
    assert messages[0] == OVERFLOW
    assert messages[-1] == f"m{QUEUE * 3 + 4}".encode()
    assert dropped + len(messages) - messages.count(OVERFLOW) == QUEUE * 3 + 5


def test_one_follower_sends_each_viewer_the_kinds_it_asked_for(tmp_path: Path) -> None:
    path = str(tmp_path / "ledger.db")
    with engram.open(path):
        pass

    async def run() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
        broadcaster = Broadcaster(lambda: engram.open(path), wait=0.05)
        broadcaster.start()
        every = broadcaster.subscribe()
        waves = broadcaster.subscribe(["neuron.activated"])
        with engram.open(path) as led:
            led.append(
                [
                    NewEvent.of(NeuronActivated(id="n1", strength=0.5), stream="neuron:n1"),
                    NewEvent.of(
                        MemoPosted(agent="a", session="s", text="<b>x</b>" * 100), stream="memo:s"
                    ),
                ]
            )
        first = await asyncio.wait_for(every.queue.get(), 10)
        second = await asyncio.wait_for(waves.queue.get(), 10)
        broadcaster.stop()
        assert broadcaster.viewers == 2
        assert await every.queue.get() is None  # stop ends every stream
        return _data(first), _data(second)

    every, waves = asyncio.run(run())
    assert [e["kind"] for e in every] == ["neuron.activated", "memo.posted"]
    assert [e["kind"] for e in waves] == ["neuron.activated"]
    text = every[1]["payload"]["text"]  # type: ignore[index]
    assert text.endswith("…")
    assert len(text) == 201  # clipped live; the event page shows all of it


def _data(message: bytes | None) -> list[dict[str, object]]:
    assert message is not None
    lines = message.decode().splitlines()
    assert lines[1] == "event: events"
    return list(json.loads(lines[2].removeprefix("data: ")))


@pytest.mark.parametrize(
    ("header", "host"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LOCALHOST", "localhost"),
        ("[::1]:8765", "::1"),
        ("evil.example:80", "evil.example"),
        ("", ""),
    ],
)
def test_host_name_takes_the_host_out_of_a_host_header(header: str, host: str) -> None:
    assert host_name(header) == host


@pytest.mark.parametrize(
    "token", ["short", "a" * 15, "with space " * 3, "semi;colon" * 3, "é" * 20]
)
def test_a_weak_or_unsafe_token_is_refused(token: str) -> None:
    with pytest.raises(ValueError, match="token"):
        check_token(token)
