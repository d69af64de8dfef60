"""SIGKILL ``forget`` between destroying the keys and appending ``subject.forgotten``.

The keys were gone (``engram keys`` said so) but no event told the projections: the lexical
index kept the text on disk and recall still matched its words, for good, since nothing
would ever append the event. The key store now keeps the forgetting as unfinished, in the
transaction that destroys the keys, until the event is appended; the next writer to open
the ledger appends it (the same event id, so a crash after the append adds nothing).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import engram
from engram.ledger import FORGOTTEN, NewEvent
from engram.ledger.catalog import MemoryReflected

WORKER = Path(__file__).parent / "_workers" / "forget_worker.py"
SECRET = b"Plumbixa"


def files_holding(root: Path, secret: bytes) -> list[str]:
    return sorted(
        str(Path(folder, name).relative_to(root))
        for folder, _, names in os.walk(root)
        for name in names
        if secret in Path(folder, name).read_bytes()
    )


@pytest.mark.parametrize("step", ["append", "done"])
def test_a_forget_killed_midway_is_finished_by_the_next_writer(tmp_path: Path, step: str) -> None:
    ledger, store = str(tmp_path / "ledger.db"), str(tmp_path / "store")
    with engram.open_memory(ledger, config=os.devnull, projections=store) as memory:
        hers = memory.agent("alice").observe(f"the {SECRET.decode()} vault code is 4711")
        memory.agent("bob").observe("bob keeps his own notes")
        # bob's reflection in alice's words: killed after subject.forgotten was appended, the
        # forget never appended its retraction, and no later writer did (ADR 0138).
        (evidence,) = memory.ledger.get([hers])
        drawn = MemoryReflected(
            agent="bob", text=f"alice's {SECRET.decode()} code", evidence=[evidence.id], depth=1
        )
        reflection = memory.ledger.append(NewEvent.of(drawn, stream="agent:bob", actor="bob"))[0]
        memory.engine.catch_up()
    assert files_holding(tmp_path, SECRET) != []  # the test can fail

    proc = subprocess.run(
        [sys.executable, str(WORKER), ledger, store, "alice", step],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr  # killed where it was meant to be

    with engram.open_memory(ledger, config=os.devnull, projections=store) as memory:
        forgotten = list(memory.ledger.read(kinds=["subject.forgotten"]))
        assert [(e.payload.subject, e.payload.reason) for e in forgotten] == [
            ("alice", "erasure request")
        ]
        memory.engine.catch_up()
        texts = [e.payload.text for e in memory.ledger.read(kinds=["memory.observed"])]
        assert texts == [FORGOTTEN, "bob keeps his own notes"]
        (retracted,) = memory.ledger.read(kinds=["reflection.retracted"])
        assert retracted.payload.positions == [reflection]
        served = memory.agent("carol").recall(SECRET.decode(), 5, scope="reflections", min_score=0)
        assert served.items == []
        hits = memory.agent("bob").recall(SECRET.decode(), 10, record=False, min_score=0)
        assert [h.event.payload.agent for h in hits.items] in ([], ["bob"])
        assert memory.ledger.sealer is not None
        assert memory.ledger.sealer.keys.unfinished_forgets() == {}
    assert files_holding(tmp_path, SECRET) == []
