"""Open engram's memory on LEDGER, observe once and report how it went (a script).

    observe_worker.py LEDGER

Prints one JSON line: ``{"outcome": "ok"}``, or the raised exception's module, name and
message. Exits 0 either way; the test judges the outcome.
"""

from __future__ import annotations

import json
import sys
import warnings

import engram


def main(ledger: str) -> None:
    warnings.simplefilter("ignore")  # a cache that falls back says so; the test judges that
    try:
        with engram.open_memory(ledger) as memory:
            memory.agent("alice").observe("the disk is full")
    except Exception as exc:
        kind = type(exc)
        print(json.dumps({"module": kind.__module__, "name": kind.__name__, "message": str(exc)}))
        return
    print(json.dumps({"outcome": "ok"}))


if __name__ == "__main__":
    main(sys.argv[1])
