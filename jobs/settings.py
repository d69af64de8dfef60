"""Build the daemon's jobs from the config file's ``[jobs.<name>]`` tables.

Jobs: ``sleep``, ``archive``, ``dream``, ``hygiene``, ``skills``, ``postproject`` and
``reflect``. Durations are a number
of seconds or a string: ``90s``, ``15m``, ``1h``, ``7d``. Errors name the table and key. The
reflection job needs each agent's memory, which only the composition root can open: it is
built when ``memory_for`` is given, and left out otherwise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from engram.agents.completion import Completer
from engram.agents.memory import AgentMemory
from engram.jobs.archival import ArchiveJob, ArchiveSettings
from engram.jobs.base import Job
from engram.jobs.consolidation import SleepJob, SleepSettings
from engram.jobs.dream import DreamJob, DreamSettings
from engram.jobs.errors import JobConfigError
from engram.jobs.hygiene import HygieneJob, HygieneSettings
from engram.jobs.postproject import PostProjectJob, PostProjectSettings
from engram.jobs.reflection import ReflectJob, ReflectSettings
from engram.jobs.skills import SkillJob, SkillSettings

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\A\s*(\d+(?:\.\d+)?)\s*([smhd])\s*\Z")
_KEYS = {
    "sleep": {"every", "threshold", "boost", "after_actions", "saturation"},
    "archive": {"every", "min_activations", "neuron_age", "memory_age", "scar_age"},
    "dream": {"every", "threshold", "cosine", "overlap", "min_size"},
    "hygiene": {"every", "unused"},
    "skills": {"every", "threshold", "min_tasks"},
    "postproject": {"every"},
    "reflect": {"every", "after", "importance", "agents"},
}
_DURATIONS = {"every", "neuron_age", "memory_age", "scar_age", "unused"}
#: The jobs, in the order the daemon lists them.
JOBS = tuple(_KEYS)


#: The longest duration a job's settings take: a hundred years (36,500 days). A longer one
#: overflowed the date arithmetic of the schedule and crashed the daemon (ADR 0160).
MAX_DURATION = 36_500 * 86_400


def duration(value: object, where: str) -> timedelta:
    """Return a number of seconds or a ``<n><s|m|h|d>`` string as a timedelta, of at most
    :data:`MAX_DURATION` seconds."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        seconds = float(value) if value < 2 * MAX_DURATION else math.inf
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match[1]) * _UNITS[match[2]]
    if seconds is None or not 0 < seconds <= MAX_DURATION:
        raise JobConfigError(
            f"{where} must be a positive number of seconds or a duration like 90s, 15m, 1h,"
            f" 7d, at most 36500d; got {value!r}"
        )
    return timedelta(seconds=seconds)


def _table(config: Mapping[str, Any], name: str) -> dict[str, Any]:
    keys = _KEYS[name]
    table = config.get(name, {})
    if not isinstance(table, Mapping):
        raise JobConfigError(f"[jobs.{name}] must be a table, got {table!r}")
    unknown = sorted(set(table) - keys)
    if unknown:
        raise JobConfigError(f"[jobs.{name}]: unknown key(s) {unknown} (known: {sorted(keys)})")
    out: dict[str, Any] = {
        key: duration(value, f"[jobs.{name}] {key}") if key in _DURATIONS else value
        for key, value in table.items()
    }
    agents = out.get("agents")
    if isinstance(agents, list):
        out["agents"] = tuple(agents)
    return out


def jobs_from_config(
    config: Mapping[str, Any],
    *,
    memory_for: Callable[[str], AgentMemory] | None = None,
    completer: Completer | None = None,
) -> list[Job]:
    """Return the jobs configured by ``config`` (the ``[jobs]`` table).

    ``reflect`` is among them only when ``memory_for`` (an agent's memory by name) is given;
    ``completer`` words its reflections (offline when None).
    """
    if not isinstance(config, Mapping):
        raise JobConfigError(f"[jobs] must be a table, got {config!r}")
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        raise JobConfigError(f"[jobs]: unknown job(s) {unknown} (known: {sorted(_KEYS)})")
    jobs: list[Job] = [
        SleepJob(SleepSettings(**_table(config, "sleep"))),
        ArchiveJob(ArchiveSettings(**_table(config, "archive"))),
        DreamJob(DreamSettings(**_table(config, "dream"))),
        HygieneJob(HygieneSettings(**_table(config, "hygiene"))),
        SkillJob(SkillSettings(**_table(config, "skills"))),
        PostProjectJob(PostProjectSettings(**_table(config, "postproject"))),
    ]
    reflect = ReflectSettings(**_table(config, "reflect"))
    if memory_for is not None:
        jobs.append(ReflectJob(memory_for, reflect, completer=completer))
    return jobs
