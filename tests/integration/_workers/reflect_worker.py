"""Child process for the reflection crash test (run as a script).

    reflect_worker.py CONFIG_JSON

Opens engram on ``ledger`` and lets agent alice observe memory ``i`` for i from the number
she has observed already up to ``total``, calling ``reflect_if_due`` (every 4 memories)
after each one. Prints one JSON line per outcome that appended, then ``{"done": head}``.
A test SIGKILLs it at a random moment and runs it again to finish.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta

from engram.agents.reflection import Triggers, reflect_if_due
from engram.runtime import open_memory

START = datetime(2030, 1, 1, tzinfo=UTC)
LINES = (
    "The parser failed on the nightly build",
    "Bob fixed the parser tokenizer after the nightly build",
    "The deploy waited for the parser fix",
    "The parser tokenizer failed again on unicode input",
    "Carol moved the deploy schedule to Friday",
    "The deploy schedule slipped after the tokenizer failed",
)


def text(i: int) -> str:
    """Memory ``i``: the story's lines, round after round."""
    return f"{LINES[i % len(LINES)]} in round {i // len(LINES)}"


def main(cfg: dict[str, str | int]) -> None:
    with open_memory(str(cfg["ledger"]), config=os.devnull) as memory:
        alice = memory.agent("alice")
        done = sum(1 for _ in memory.ledger.read(0, kinds=["memory.observed"]))
        for i in range(done, int(cfg["total"])):
            alice.observe(text(i), importance=5, at=START + timedelta(minutes=i))
            outcome = reflect_if_due(alice, Triggers(every=4, importance=0))
            if outcome.status == "reflected":
                positions = [insight.position for insight in outcome.insights]
                print(json.dumps({"reflected": positions}), flush=True)
        print(json.dumps({"done": memory.ledger.head()}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
