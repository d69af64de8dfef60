"""Build the daemon's jobs from the config file's ``[jobs.sleep]`` and ``[jobs.archive]`` tables.

Durations are a number of seconds or a string: ``90s``, ``15m``, ``1h``, ``7d``. Errors name
the table and key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from engram.jobs.archival import ArchiveJob, ArchiveSettings
from engram.jobs.base import Job
from engram.jobs.consolidation import SleepJob, SleepSettings
from engram.jobs.errors import JobConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\A\s*(\d+(?:\.\d+)?)\s*([smhd])\s*\Z")
_SLEEP_KEYS = {"every", "threshold", "boost", "after_actions", "saturation"}
_ARCHIVE_KEYS = {"every", "min_activations", "neuron_age", "memory_age"}
_DURATIONS = {"every", "neuron_age", "memory_age"}


def duration(value: object, where: str) -> timedelta:
    """Return a number of seconds or a ``<n><s|m|h|d>`` string as a timedelta."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return timedelta(seconds=value)
    if isinstance(value, str) and (match := _DURATION.match(value)):
        return timedelta(seconds=float(match[1]) * _UNITS[match[2]])
    raise JobConfigError(
        f"{where} must be a positive number of seconds or a duration like 90s, 15m, 1h, 7d;"
        f" got {value!r}"
    )


def _table(config: Mapping[str, Any], name: str, keys: set[str]) -> dict[str, Any]:
    table = config.get(name, {})
    if not isinstance(table, Mapping):
        raise JobConfigError(f"[jobs.{name}] must be a table, got {table!r}")
    unknown = sorted(set(table) - keys)
    if unknown:
        raise JobConfigError(f"[jobs.{name}]: unknown key(s) {unknown} (known: {sorted(keys)})")
    return {
        key: duration(value, f"[jobs.{name}] {key}") if key in _DURATIONS else value
        for key, value in table.items()
    }


def jobs_from_config(config: Mapping[str, Any]) -> list[Job]:
    """Return the sleep and archive jobs configured by ``config`` (the ``[jobs]`` table)."""
    if not isinstance(config, Mapping):
        raise JobConfigError(f"[jobs] must be a table, got {config!r}")
    unknown = sorted(set(config) - {"sleep", "archive"})
    if unknown:
        raise JobConfigError(f"[jobs]: unknown job(s) {unknown} (known: ['archive', 'sleep'])")
    sleep = SleepSettings(**_table(config, "sleep", _SLEEP_KEYS))
    archive = ArchiveSettings(**_table(config, "archive", _ARCHIVE_KEYS))
    return [SleepJob(sleep), ArchiveJob(archive)]
