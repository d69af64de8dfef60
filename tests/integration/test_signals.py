"""Signals, the inbox and the shared memo, through engram's runtime on a real SQLite ledger."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import engram
from engram.agents import SignalAckedError, SignalRecipientError, UnknownSignalError
from engram.cli import main
from engram.ledger import EnvelopeError, Ledger, NewEvent, PayloadError, default_registry
from engram.ledger.catalog import MemoPosted, MemoryObserved
from engram.projections import ProjectionEngine, memo
from engram.runtime import Memory

WORKER = Path(__file__).parent / "_workers" / "signal_worker.py"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with engram.open_memory(str(tmp_path / "ledger.db")) as opened:
        yield opened


def topics(signals: list) -> list[str]:  # type: ignore[type-arg]
    return [s.topic for s in signals]


def test_a_signal_waits_in_its_recipient_s_inbox_only(memory: Memory) -> None:
    ana, bob, cy = memory.mailbox("ana"), memory.mailbox("bob"), memory.mailbox("cy")
    ana.send("bob", "review", "the Q3 report")
    ana.send("*", "standup")
    bob.send("*", "lunch")
    assert topics(bob.inbox()) == ["review", "standup"]
    assert topics(cy.inbox()) == ["standup", "lunch"]
    assert topics(ana.inbox()) == ["lunch"]  # never its own broadcast
    first = bob.inbox()[0]
    assert (first.sender, first.to, first.body) == ("ana", "bob", "the Q3 report")


def test_ack_takes_a_signal_out_once(memory: Memory) -> None:
    ana, bob, cy = memory.mailbox("ana"), memory.mailbox("bob"), memory.mailbox("cy")
    ana.send("*", "standup")
    standup = bob.inbox()[0]
    position = bob.ack(standup.id)
    head = memory.ledger.head()
    assert bob.ack(standup.id) == position  # idempotent: nothing appended
    assert memory.ledger.head() == head
    assert bob.inbox() == []
    assert topics(cy.inbox()) == ["standup"]  # a broadcast is taken per agent


def test_bad_acks_are_refused_and_append_nothing(memory: Memory) -> None:
    ana, bob = memory.mailbox("ana"), memory.mailbox("bob")
    ana.send("bob", "review")
    review = bob.inbox()[0]
    head = memory.ledger.head()
    with pytest.raises(UnknownSignalError, match="no signal with id"):
        bob.ack("0196a3c0-0000-7000-8000-000000000001")
    with pytest.raises(SignalRecipientError, match="is for 'bob' from 'ana', not for 'ana'"):
        ana.ack(review.id)
    with pytest.raises(EnvelopeError):
        bob.ack("not-an-id")
    with pytest.raises(PayloadError):
        ana.send("", "empty recipient")
    assert memory.ledger.head() == head


def test_effects_and_ack_are_one_batch(memory: Memory) -> None:
    ana, bob = memory.mailbox("ana"), memory.mailbox("bob")
    ana.send("bob", "review")
    review = bob.inbox()[0]
    effect = NewEvent.of(
        MemoryObserved(agent="bob", text="reviewed the Q3 report"), stream="agent:bob", actor="bob"
    )
    position = bob.ack(review.id, [effect])
    events = list(memory.ledger.read(after=position - 2))
    assert [e.kind for e in events] == ["memory.observed", "signal.acked"]
    head = memory.ledger.head()
    with pytest.raises(SignalAckedError, match="effects given were not appended"):
        bob.ack(review.id, [effect])
    assert memory.ledger.head() == head


def test_the_memo_keeps_each_session_s_newest_notes(memory: Memory) -> None:
    standup, retro = memory.memo("standup"), memory.memo("retro")
    for i in range(memo.RING + 12):
        standup.post("ana" if i % 2 else "bob", f"note {i}")
    retro.post("cy", "went well: the rollback")
    notes = standup.read()
    assert [n.text for n in notes] == [f"note {i}" for i in range(12, memo.RING + 12)]
    assert [n.text for n in standup.read(limit=2)] == [
        f"note {memo.RING + 10}",
        f"note {memo.RING + 11}",
    ]
    assert [(n.agent, n.session) for n in retro.read()] == [("cy", "retro")]
    with pytest.raises(Exception, match=r"limit must be an int in 1\.\.50"):
        standup.read(limit=51)


def test_memo_trimming_is_the_same_in_any_batch_sizes(tmp_path: Path) -> None:
    rng = random.Random(7)
    events = [
        NewEvent.of(
            MemoPosted(agent="a", session=rng.choice(["s1", "s2", "s3"]), text=f"n{i}"),
            stream="memo:x",
        )
        for i in range(400)
    ]
    with Ledger.open(str(tmp_path / "l.db"), default_registry()) as ledger:
        ledger.append(events)
    digests = []
    with Ledger.open(str(tmp_path / "l.db"), default_registry()) as ledger:
        for batch in (1, 7, 50, 1000):
            store = tmp_path / f"p{batch}"
            with ProjectionEngine(ledger, store, [memo.Memo()], batch_size=batch) as engine:
                engine.catch_up()
                digests.append(engine.status(digest=True)[0].digest)
                with engine.read() as conn:
                    assert [n for _, n in memo.sessions(conn)] == [memo.RING] * 3
    assert all(d == digests[0] for d in digests)


def _head(path: str) -> int:
    with Ledger.open(path, default_registry(), readonly=True) as led:
        return led.head()


def test_no_signal_is_lost_or_handled_twice_across_sigkills(tmp_path: Path) -> None:
    ledger = str(tmp_path / "ledger.db")
    with engram.open_memory(ledger) as m:
        sender = m.mailbox("boss")
        for i in range(300):
            sender.send("worker" if i % 3 else "*", f"task-{i}")
    rng = random.Random(random.randrange(2**31))
    kills = 0
    for _ in range(6):  # killed after a random amount of progress, each run
        before = _head(ledger)
        proc = subprocess.Popen([sys.executable, str(WORKER), ledger, "worker"], env=os.environ)
        target = before + rng.randint(2, 40)
        deadline = time.monotonic() + 60
        while proc.poll() is None and _head(ledger) < target and time.monotonic() < deadline:
            time.sleep(0.005)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
    assert kills >= 1, "the worker finished before any kill: make the test's inbox longer"
    finish = subprocess.run(
        [sys.executable, str(WORKER), ledger, "worker"], timeout=300, check=False
    )
    assert finish.returncode == 0
    with Ledger.open(ledger, default_registry(), readonly=True) as led:
        events = list(led.read())
    handled = Counter(e.payload.text for e in events if e.kind == "memory.observed")
    acks = Counter(e.payload.signal for e in events if e.kind == "signal.acked")
    sent = [e.id for e in events if e.kind == "signal.sent"]
    assert sorted(acks) == sorted(sent)
    assert set(acks.values()) == {1}
    assert len(handled) == 300
    assert set(handled.values()) == {1}


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue(), capsys.readouterr().err


def test_the_command_line_sends_lists_and_acks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--ledger", str(tmp_path / "cli.db")]
    assert cli(capsys, *db, "signals", "send", "ana", "bob", "review", "--body", "Q3")[0] == 0
    code, out, _ = cli(capsys, *db, "signals", "list", "bob", "--format", "json")
    (item,) = json.loads(out)
    assert (code, item["sender"], item["topic"], item["body"]) == (0, "ana", "review", "Q3")
    code, out, _ = cli(capsys, *db, "signals", "ack", "bob", item["id"])
    assert code == 0
    assert out.startswith(f"acknowledged {item['id']} at position 2")
    assert json.loads(cli(capsys, *db, "signals", "list", "bob", "--format", "json")[1]) == []
    code, _, err = cli(capsys, *db, "signals", "ack", "ana", item["id"])
    assert code == 1
    assert "not for 'ana'" in err
    assert cli(capsys, *db, "memo", "post", "standup", "ana", "draft ready")[0] == 0
    code, out, _ = cli(capsys, *db, "memo", "read", "standup", "--format", "jsonl")
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["draft ready"]
    code, _, err = cli(capsys, "--ledger", str(tmp_path / "none.db"), "signals", "list", "bob")
    assert code == 1
    assert "no ledger at" in err
    assert not (tmp_path / "none.db").exists()
