"""Read, verify and audit a ledger opened read-only, then try to append (a script).

    readonly_worker.py LEDGER

Run by the tests on read-only media. Prints one JSON line with what each step gave.
"""

from __future__ import annotations

import json
import sys

from engram.ledger import Ledger, NewEvent, ReadOnlyLedgerError, default_registry, open_audit
from engram.ledger.catalog import SignalSent


def main(path: str) -> None:
    out: dict[str, object] = {}
    with Ledger.open(path, readonly=True) as ledger:
        out["events"] = sum(1 for _ in ledger.read())
        out["verify"] = ledger.verify().ok
        out["head"] = ledger.head()
        try:
            ledger.append(
                NewEvent(
                    stream="agent:x", kind="signal.sent", payload=SignalSent(to="y", topic="t")
                )
            )
            out["append"] = "accepted"
        except ReadOnlyLedgerError as exc:
            out["append"] = f"refused: {exc}"
        kinds = {spec.name: spec.type for spec in default_registry()}
        with open_audit(ledger.audit_target(), kinds) as audit:
            out["sql"] = audit.query("SELECT count(*) FROM events").rows[0][0]
            out["signals"] = audit.query("SELECT count(*) FROM signal_sent").rows[0][0]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
