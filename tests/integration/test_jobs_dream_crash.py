"""The nightly dream as a real process killed with SIGKILL mid-run, then restarted.

After any number of kills, every cluster of repeated scars is proposed exactly once, in the
dream window's batch, right before its ``job.completed``; no scar is cited twice.
"""

from __future__ import annotations

import random
import string
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from test_jobs_processes import _check_windows, _config, _kill_then_finish

from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ScarRecorded

CLUSTERS = 150


def _words(seed: int, n: int) -> str:
    """Return ``n`` made-up words of seven letters, the same for the same seed."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(n))


def _scars(ledger: Ledger, at: datetime) -> dict[str, int]:
    """Append CLUSTERS groups of three identical scars (plus one lone scar each).

    Each group's words are its own (made up, seeded): the dream groups by meaning, and
    numbered variants of one template ("check widget1", "check widget2") read alike.
    """
    events = []
    for k in range(CLUSTERS):
        for copy in range(4):
            what, lesson = _words(2 * k, 3), _words(2 * k + 100_000, 4)
            if copy == 3:  # a lone scar, like no other: no cluster
                what, lesson = _words(2 * k + 1, 3), _words(2 * k + 200_001, 4)
            payload = ScarRecorded(
                agent=f"agent{k % 5}",
                kind="failure",
                what=what,
                lesson=lesson,
                importance=5,
            )
            events.append(NewEvent.of(payload, stream=f"agent:agent{k % 5}", at=at))
    positions = ledger.append(events)
    return {e.id: p for e, p in zip(ledger.get(positions), positions, strict=True)}


def test_sigkill_during_the_dream_then_restart_proposes_each_cluster_once(
    tmp_path: Path,
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    print(f"seed {seed}")
    ledger_path = str(tmp_path / "ledger.db")
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    with Ledger.open(ledger_path, durability="fast") as ledger:
        scars = _scars(ledger, today - timedelta(hours=12))
    config = _config(
        tmp_path / "engram.toml",
        ledger_path,
        tmp_path / "store",
        '[jobs.dream]\nevery = "1d"\n',
    )
    out, events = _kill_then_finish(config, ledger_path, rng, pause=(1.0, 4.0))
    windows = _check_windows(events)
    assert windows["dream"][-1][1] == today, out
    proposed = [e for e in events if e.kind == "suggestion.proposed"]
    assert len(proposed) == CLUSTERS
    cited = Counter(s for e in proposed for s in e.payload.scars)
    assert max(cited.values()) == 1
    assert all(len(e.payload.scars) == 3 for e in proposed)
    assert set(cited) <= set(scars)
    dreams = [e for e in events if e.kind == "job.completed" and e.payload.job == "dream"]
    proposing = [d for d in dreams if d.payload.counts["clusters"]]
    assert len(proposing) == 1
    assert proposing[0].payload.counts["clusters"] == CLUSTERS
    # Atomic: the proposals sit right before their window's job.completed.
    first = min(e.position for e in proposed)
    assert [e.kind for e in events if first <= e.position <= proposing[0].position] == [
        "suggestion.proposed"
    ] * CLUSTERS + ["job.completed"]
