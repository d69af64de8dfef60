"""Child process of the projection contract's crash test (run as a script).

    projection_contract_worker.py CONFIG_JSON

Catches one of the runtime's default projections up from a SQLite ledger into a store, in
batches of ``batch_size`` events, then prints one JSON line: the head it reached and the
projection's digest. The projection comes from ``engram.runtime.default_projections`` with
the hash embedder, as the parent builds its reference.

With ``stall_at`` (a position), the worker stops in the first batch that reaches that
position, prints ``{"stalled": [first, last]}`` (the batch's first and last positions) and
waits there for the parent's SIGKILL. ``stall`` says where: ``"handler"``, right after the
projection's handler has written the batch's rows; ``"commit"``, once the engine has also
written the checkpoint, just before the transaction's COMMIT runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from engram.config import resolve_settings
from engram.ledger import Event, Ledger
from engram.projections.base import Tables
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.runtime import default_projections


def stall(span: list[int]) -> None:
    """Say where the worker stopped, then wait for the parent's SIGKILL."""
    print(json.dumps({"stalled": span}), flush=True)
    time.sleep(600)


def main(cfg: dict[str, Any]) -> None:
    """Catch the store up (or stall mid-batch), then report the head and the digest."""
    # config=os.devnull: the parent and the child must not read this machine's config files.
    settings = resolve_settings(cfg["ledger"], config=os.devnull, projections=cfg["store"])
    (projection,) = [
        p for p in default_projections(settings, HashEmbedder()) if p.name == cfg["name"]
    ]
    stall_at = cfg.get("stall_at")
    if stall_at is not None:
        handler = projection.apply

        def apply(db: Tables, events: Sequence[Event]) -> None:
            handler(db, events)
            if events[-1].position < stall_at:
                return
            span = [events[0].position, events[-1].position]
            if cfg["stall"] == "handler":
                stall(span)
            checkpointed = False

            def trace(statement: str) -> None:
                nonlocal checkpointed
                if statement.startswith("UPDATE engram_generations"):  # the checkpoint
                    checkpointed = True
                elif statement == "COMMIT" and checkpointed:
                    stall(span)

            db.conn.set_trace_callback(trace)

        projection.apply = apply  # type: ignore[method-assign]
    with (
        Ledger.open(settings.ledger) as ledger,
        ProjectionEngine(
            ledger, settings.projection_store, [projection], batch_size=cfg["batch_size"]
        ) as engine,
    ):
        head = engine.catch_up()
        print(json.dumps({"head": head, "digest": engine.digest(projection.name)}), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
