"""A child process that handles an agent's inbox one signal at a time (a script).

    signal_worker.py LEDGER AGENT

Each signal is handled by appending a memory ("handled <topic>") in the same batch as its
acknowledgement; the test SIGKILLs this process at random moments. Exits 0 once the inbox
is empty.
"""

from __future__ import annotations

import sys
import time

import engram
from engram.ledger import NewEvent
from engram.ledger.catalog import MemoryObserved


def main(ledger: str, agent: str) -> None:
    with engram.open_memory(ledger, actor=agent) as memory:
        box = memory.mailbox(agent)
        while pending := box.inbox(limit=5):
            for signal in pending:
                time.sleep(0.01)  # the work a real agent would do
                effect = NewEvent.of(
                    MemoryObserved(agent=agent, text=f"handled {signal.topic}"),
                    stream=f"agent:{agent}",
                    actor=agent,
                )
                box.ack(signal.id, [effect])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
