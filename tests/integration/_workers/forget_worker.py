"""Forget a subject and be killed (SIGKILL) at one step of it: the test's crash.

``argv``: the ledger path, the projection store, the subject, and the step to die at:
``append`` (the keys are destroyed, ``subject.forgotten`` is being appended) or ``done``
(the event is appended, the key store is being told so).
"""

from __future__ import annotations

import os
import signal
import sys

import engram
from engram.ledger import KeyStore, Ledger


def die(*args: object, **kwargs: object) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    ledger, store, subject, step = sys.argv[1:5]
    if step == "append":
        real = Ledger.append

        def append(self: Ledger, events: object, *args: object, **kwargs: object) -> object:
            kinds = [e.kind for e in (events if isinstance(events, list) else [events])]
            if "subject.forgotten" in kinds:
                die()
            return real(self, events, *args, **kwargs)

        Ledger.append = append  # type: ignore[method-assign,assignment]
    else:
        KeyStore.forgetting_done = die  # type: ignore[method-assign,assignment]
    with engram.open_memory(ledger, config=os.devnull, projections=store) as memory:
        memory.forget(subject, reason="erasure request")
    raise SystemExit("not killed")


if __name__ == "__main__":
    main()
