"""A child process that opens engram's memory, observes and recalls, then closes (a script).

    memory_worker.py LEDGER AGENT N    observe N notes as AGENT and recall after each

Closing saves the semantic index file; many of these at once on one store is the test.
Exits 0 when every call succeeded, whatever happened to the derived index file.
"""

from __future__ import annotations

import sys

import engram


def main(ledger: str, agent: str, count: int) -> None:
    with engram.open_memory(ledger, actor=agent) as memory:
        me = memory.agent(agent)
        for i in range(count):
            me.observe(f"{agent} note {i}: the deploy of service {i % 3} went fine")
            me.recall(f"service {i % 3} deploy", k=3)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
