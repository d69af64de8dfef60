"""What each hub page shows, read from the projections and the ledger of an opened engram.

Every function takes a :class:`~engram.runtime.Memory` and returns plain data for a
template; none writes. They read through the same API as every other interface
(:class:`~engram.agents.network.NeuronNetwork`, :class:`~engram.agents.lessons.Lessons`,
:class:`~engram.agents.memory.AgentMemory`, the projections' query functions, the ledger).
"""

from __future__ import annotations

import difflib
import json
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from engram.agents import scopes
from engram.agents.lessons import DESTINATIONS
from engram.ledger import Event, Ledger
from engram.ledger.personal import masked, retracted, retracted_positions
from engram.ledger.shred import PRIVATE
from engram.projections import doctrine, memo, reflections, scars, supersession
from engram.projections.lexical.memories import memory_authors
from engram.runtime import Memory

#: Events the ledger page lists at most per request.
MAX_EVENTS = 500
#: The newest events read to plot the append rate.
RATE_WINDOW = 5_000


def fresh(memory: Memory) -> None:
    """Bring the projections up to the ledger's head before a page reads them."""
    memory.engine.wait_for(memory.ledger.head())


def first_time(ledger: Ledger) -> datetime | None:
    """Return the time of the ledger's first event (None when it is empty)."""
    first = next(ledger.read(limit=1), None)
    return None if first is None else first.at


def graph(memory: Memory, as_of: datetime | None) -> dict[str, Any]:
    """Return the live neuron graph (salience as of a time) and the ledger's time span."""
    exported = memory.network.export(as_of=as_of)
    start = first_time(memory.ledger)
    exported["span"] = {
        "start": None if start is None else start.isoformat(),
        "now": datetime.now(UTC).isoformat(),
    }
    return exported


def shown(event: Event, gone: set[int]) -> Event:
    """Return ``event`` as the hub shows it, as ``engram log`` does by default: another
    subject's private fields as ``[private]``, a retracted reflection as ``[forgotten]``."""
    return retracted(masked(event, None), gone)


def payload_json(event: Event, indent: int | None = 2) -> str:
    """Return an event's payload as JSON text (to be escaped by the template)."""
    return json.dumps(msgspec.to_builtins(event.payload), indent=indent, ensure_ascii=False)


def events(
    ledger: Ledger,
    *,
    kinds: list[str] | None = None,
    streams: list[str] | None = None,
    after: int = 0,
    limit: int = 100,
    newest: bool = False,
) -> list[dict[str, Any]]:
    """Return up to ``limit`` events after ``after`` (or the newest ``limit``) as rows."""
    limit = max(1, min(limit, MAX_EVENTS))
    if newest and kinds is None and streams is None:
        # The last ``limit`` positions hold the newest events: read them, not the ledger.
        start = max(after, ledger.head() - limit)
        chosen = list(ledger.read(start, limit=limit))[::-1]
    elif newest and kinds is None and streams is not None and len(streams) == 1:
        # One stream: its last ``limit`` versions, not every event before them.
        (name,) = streams
        last = ledger.versions([name])[name]
        tail = ledger.read_stream(name, after_version=max(0, last - limit))
        chosen = [e for e in tail if e.position > after][::-1]
    elif newest:
        picked = deque(ledger.read(after, kinds=kinds, streams=streams), maxlen=limit)
        chosen = list(picked)[::-1]
    else:
        chosen = list(ledger.read(after, kinds=kinds, streams=streams, limit=limit))
    gone = (
        retracted_positions(ledger) if any(e.kind == "memory.reflected" for e in chosen) else set()
    )
    return [
        {
            "position": e.position,
            "at": e.at.isoformat(timespec="seconds"),
            "kind": e.kind,
            "stream": e.stream,
            "actor": e.actor,
            "payload": _clipped(payload_json(shown(e, gone), None), 240),
        }
        for e in chosen
    ]


def event(memory: Memory, position: int) -> dict[str, Any]:
    """Return one event in full: envelope, payload, and links to the events it rests on."""
    (found,) = memory.ledger.get([position])
    gone = retracted_positions(memory.ledger) if found.kind == "memory.reflected" else set()
    found = shown(found, gone)
    payload = msgspec.to_builtins(found.payload)
    named: list[tuple[str, str]] = []  # (label, address)
    fresh(memory)
    with memory.engine.read() as conn:
        if found.kind == "memory.reflected":
            for ev in reflections.evidence(conn, found.position):
                where = f"/ledger/event/{ev.position}" if ev.position else ""
                named.append((f"evidence {ev.id}", where))
        if isinstance(payload, dict) and isinstance(payload.get("scars"), list):
            for scar_id in payload["scars"]:
                scar = scars.get(conn, str(scar_id))
                where = f"/ledger/event/{scar.position}" if scar is not None else ""
                named.append((f"scar {scar_id}", where))
    if isinstance(payload, dict) and isinstance(payload.get("suggestion"), str):
        suggestion = payload["suggestion"]
        named.append((f"suggestion {suggestion}", f"/ledger?stream=suggestion:{suggestion}"))
    return {
        "position": found.position,
        "id": found.id,
        "stream": found.stream,
        "version": found.version,
        "kind": found.kind,
        "schema": found.schema,
        "actor": found.actor,
        "at": found.at.isoformat(),
        "causation_id": found.causation_id,
        "correlation_id": found.correlation_id,
        "hash": found.hash.hex(),
        "payload": payload_json(found),
        "named": named,
    }


def review(memory: Memory) -> dict[str, Any]:
    """Return the pending suggestions with their scars and diff, recent reviews, the rules,
    the doctrine's notes and skills, and the destinations a reviewer may send one to."""
    lessons = memory.lessons()
    pending = lessons.suggestions(["pending"])
    done = lessons.suggestions(["applied", "refused", "modified"])[-20:][::-1]
    with memory.engine.read() as conn:
        rows = []
        for s in pending:
            found = [scars.get(conn, scar_id) for scar_id in s.scars]
            rows.append(
                {
                    "suggestion": s,
                    "scars": [x for x in found if x is not None],
                    "diff": _diff(s.diff),
                }
            )
        entries = doctrine.entries(conn)
    return {
        "pending": rows,
        "reviewed": done,
        "rules": lessons.rules(),
        "doctrine": entries,
        "destinations": DESTINATIONS,
        **supersessions(memory),
    }


#: Supersessions in force the review page lists (newest first), to revert.
IN_FORCE = 20


def supersessions(memory: Memory) -> dict[str, Any]:
    """Return the pending supersession proposals (oldest first) and the newest supersessions
    in force, each with the texts of the new memory and of the ones it replaces."""
    fresh(memory)
    with memory.engine.read() as conn:
        proposals = supersession.pending(conn)
        applied = supersession.in_force(conn, limit=IN_FORCE)
    joined = [(p.new, p.replaces) for p in proposals] + [(s.new, s.replaces) for s in applied]
    wanted = {p for new, olds in joined for p in (new, *olds)}
    # Another agent's private memory reads [private], as on the ledger pages.
    texts = {
        e.position: scopes.item_text(masked(e, None))
        for e in scopes.held_events(memory.ledger, wanted)
    }

    def quoted(positions: list[int]) -> list[dict[str, Any]]:
        return [{"position": p, "text": texts.get(p, "")} for p in positions]

    def why(new: int, reason: str) -> str:
        """Why it was found: its reason quotes the values, private with the memory."""
        return PRIVATE if texts.get(new) == PRIVATE else reason

    return {
        "proposals": [
            {"proposal": p, "new": quoted([p.new])[0], "replaces": quoted(p.replaces),
             "why": why(p.new, p.why)}
            for p in proposals
        ],
        "superseded": [
            {"supersession": s, "new": quoted([s.new])[0], "replaces": quoted(s.replaces),
             "why": why(s.new, s.why)}
            for s in applied
        ],
    }  # fmt: skip


def _diff(diff: dict[str, str] | None) -> list[tuple[str, str]]:
    if not diff:
        return []
    lines = difflib.unified_diff(
        diff.get("before", "").splitlines(),
        diff.get("after", "").splitlines(),
        fromfile=diff.get("path", ""),
        tofile=diff.get("path", ""),
        lineterm="",
    )
    return [(_line_class(line), line) for line in lines]


def _line_class(line: str) -> str:
    if line.startswith(("+++", "---", "@@")):
        return "meta"
    return {"+": "add", "-": "del"}.get(line[:1], "same")


def agents(memory: Memory) -> list[str]:
    """Return the agents that observed, scarred or reflected, by name."""
    with memory.engine.read() as conn:
        names = {
            *memory_authors(conn),
            *reflections.marked_agents(conn),
            *reflections.agents(conn),
            *scars.agents(conn),
        }
    return sorted(name for name in names if name)


def memories(memory: Memory, agent: str, query: str | None) -> dict[str, Any]:
    """Return an agent's stream, a recall (not recorded) with its scores, its reflections:
    a private memory's, scar's or reflection's text reads ``[private]``, as on the ledger
    pages (the hub is no agent; ADR 0126)."""
    name = f"agent:{agent}"
    # The stream's last 50 events, read from their version on (not the whole stream).
    last = memory.ledger.versions([name])[name]
    stream = list(memory.ledger.read_stream(name, after_version=max(0, last - 50)))
    gone = retracted_positions(memory.ledger) if any(
        e.kind == "memory.reflected" for e in stream
    ) else set()  # fmt: skip
    recalled = None
    if query:
        # Looking is not remembering: a recall from the hub bumps no salience (record=False).
        recalled = memory.agent(agent).recall(query, 10, record=False)
        recalled = recalled._replace(
            items=[i._replace(event=masked(i.event, None)) for i in recalled.items]
        )
    with memory.engine.read() as conn:
        beliefs = [
            {
                "reflection": r if r.visibility != "private" else r._replace(text=PRIVATE),
                "evidence": reflections.evidence(conn, r.position),
            }
            for r in reflections.by_agent(conn, agent, limit=20)
        ]
    return {
        "stream": [
            {
                "position": e.position,
                "at": e.at.isoformat(timespec="seconds"),
                "kind": e.kind,
                "text": _text(shown(e, gone)),
            }
            for e in reversed(stream)
        ],
        "recall": recalled,
        "reflections": beliefs,
    }


def memos(memory: Memory) -> list[dict[str, Any]]:
    """Return each session's shared memo, newest notes last."""
    with memory.engine.read() as conn:
        return [
            {"session": session, "notes": memo.recent(conn, session)}
            for session, _ in memo.sessions(conn)
        ]


def _text(event: Event) -> str:
    payload = msgspec.to_builtins(event.payload)
    if isinstance(payload, dict):
        for key in ("text", "what", "query", "id"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    return _clipped(payload_json(event, None), 240)


def _clipped(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size] + "…"


def vitality(memory: Memory, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the series the vitality page plots, and the signs as of now.

    The recorded measurements (``vitality.measured``), appends per second over the newest
    events' times, job runs per hour (``job.completed``), and the hub's own samples of the
    ledger head and the projections' lag.
    """
    now = memory.network.vitality()
    measured = deque(memory.ledger.read(kinds=["vitality.measured"]), maxlen=500)
    series: dict[str, list[tuple[datetime, float]]] = {
        key: [(e.payload.at, float(getattr(e.payload, key))) for e in measured]
        for key in ("active_neurons", "mean_salience", "density", "inhibition")
    }
    for key in series:
        series[key].append((now.at, float(getattr(now, key))))
    head = memory.ledger.head()
    recent = list(memory.ledger.read(max(head - RATE_WINDOW, 0)))
    series["appends_per_s"] = _rate(recent)
    jobs = deque(memory.ledger.read(kinds=["job.completed"]), maxlen=500)
    series["job_runs_per_h"] = _per_hour(list(jobs))
    series["projection_lag"] = [(s["at"], float(s["lag"])) for s in samples]
    return {
        "now": now,
        "working": memory.network.working_set(),
        "series": series,
        "jobs": [
            {
                "position": e.position,
                "at": e.at.isoformat(timespec="seconds"),
                "job": e.payload.job,
                "duration_ms": e.payload.duration_ms,
            }
            for e in list(jobs)[-10:][::-1]
        ],
        "status": memory.engine.status(),
    }


def _rate(events: list[Event]) -> list[tuple[datetime, float]]:
    """Return appends per second in one-minute buckets of the events' times."""
    buckets: dict[datetime, int] = {}
    for e in events:
        minute = e.at.astimezone(UTC).replace(second=0, microsecond=0)
        buckets[minute] = buckets.get(minute, 0) + 1
    return [(t, n / 60) for t, n in sorted(buckets.items())]


def _per_hour(events: list[Event]) -> list[tuple[datetime, float]]:
    buckets: dict[datetime, int] = {}
    for e in events:
        hour = e.at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        buckets[hour] = buckets.get(hour, 0) + 1
    return [(t, float(n)) for t, n in sorted(buckets.items())]


def sample(memory: Memory) -> dict[str, Any]:
    """Return one sample of the head and the projections' lag, then catch them up."""
    rows = memory.engine.status()
    lag = max((r.lag for r in rows), default=0)
    head = rows[0].head if rows else memory.ledger.head()
    memory.engine.catch_up()
    return {"at": datetime.now(UTC), "head": head, "lag": lag}


def since(samples: list[dict[str, Any]], window: timedelta) -> list[dict[str, Any]]:
    """Return the samples taken within ``window`` of the newest one."""
    if not samples:
        return []
    cut = samples[-1]["at"] - window
    return [s for s in samples if s["at"] >= cut]
