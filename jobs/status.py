"""The daemon's liveness record: a small JSON file in the projection store, rewritten atomically.

The daemon rewrites ``jobs.json`` every few seconds (its beat) with its pid, host, the
ledger head and checkpoint it reached, and each job's schedule, next run and last outcome.
Readers (``engram jobs``, ``engram status``) judge liveness from the beat's age and, on the
same host, from whether the pid still runs. What a job *did* is read from the ledger
(``job.completed``); the file only says what the daemon is doing now.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.jobs.errors import DaemonError

STATUS_FILE = "jobs.json"
#: A beat older than this many beat periods means the daemon is gone.
STALE_BEATS = 3


@dataclass(frozen=True)
class Liveness:
    """What the liveness record says of the daemon: ``running``, ``stale`` or ``stopped``."""

    state: str
    pid: int | None = None
    host: str | None = None
    beat_age_s: float | None = None
    detail: str = ""


def status_path(store: str | Path) -> Path:
    """Return the liveness record's path in a projection store directory."""
    return Path(store, STATUS_FILE)


def write_status(path: Path, record: dict[str, Any]) -> None:
    """Replace the liveness record atomically (readers see the old or the new one)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".jobs-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:
        raise DaemonError(f"cannot write the liveness record {path}: {exc.strerror}") from None


def read_status(path: Path) -> dict[str, Any] | None:
    """Return the liveness record, None when there is none or it cannot be read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def liveness(record: dict[str, Any] | None, now: datetime | None = None) -> Liveness:
    """Judge the daemon's liveness from its record."""
    if record is None:
        return Liveness("stopped", detail="no daemon has run on this projection store")
    now = now or datetime.now(UTC)
    pid, host = record.get("pid"), record.get("host")
    if record.get("stopped"):
        return Liveness("stopped", pid, host, None, f"stopped at {record['stopped']}")
    try:
        beat = datetime.fromisoformat(str(record["beat"]))
        every = float(record.get("beat_every", 5.0))
    except (KeyError, ValueError, TypeError):
        return Liveness("stale", pid, host, None, "unreadable beat")
    age = max((now - beat).total_seconds(), 0.0)
    if host == socket.gethostname() and isinstance(pid, int) and not _alive(pid):
        return Liveness("stale", pid, host, age, f"pid {pid} is gone (killed or crashed)")
    if age > STALE_BEATS * every:
        return Liveness("stale", pid, host, age, f"no beat for {age:.0f}s")
    return Liveness("running", pid, host, age, f"pid {pid} on {host}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
