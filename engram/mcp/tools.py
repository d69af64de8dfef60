"""What the MCP server's tools do, over the same Python API every other interface uses.

:class:`MemoryTools` holds an opened :class:`~engram.runtime.Memory` and the agents the
server acts for. Each method is one tool: it checks its input, calls the agents layer as the
calling agent (so visibility is that agent's and writes are events with that agent as actor)
and returns JSON-ready data. Nothing here imports the MCP SDK: :mod:`engram.mcp.server`
turns these methods into tools, and tests call them directly as well.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import stat
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import msgspec

from engram.agents import scopes
from engram.agents.arguments import refuse_unwritable
from engram.agents.context import ContextWeights, build_context
from engram.agents.frames import saved_frames, split_written
from engram.agents.packs import PackKey, export_pack, import_pack
from engram.agents.recalled import Recalled
from engram.agents.tokens import default_counter
from engram.errors import InterfaceError
from engram.ledger import NewEvent
from engram.ledger.catalog import ConceptUpserted, ContextSaved, MemoryObserved
from engram.ledger.errors import EventError
from engram.projections import concepts as concept_rows
from engram.projections import rules, salience, suggestions
from engram.projections.errors import QueryError
from engram.projections.store import ProjectionStore
from engram.runtime import Memory

#: Where a pack's key is read from unless the call names another variable.
KEY_ENV = "ENGRAM_PACK_KEY"
#: How the name of a variable a call may read a pack key from begins: never any other secret.
KEY_ENV_PREFIX = "ENGRAM_"
#: recall_context's scopes: what the context is built from.
CONTEXT_SCOPES = ("task", "session", "agent")
#: The most observations, and the most concepts, one ``upsert_memory`` call takes: calls run
#: one at a time, so one call of thousands would hold every other for minutes.
MAX_ITEMS = 100
#: What project_snapshot counts: a name and the projection view holding those rows.
#: The projection tables whose row counts a snapshot reports (memories: those not archived).
COUNTED = ("concepts", "scars", "reflections", "suggestions", "rules")


class ToolInputError(InterfaceError, ValueError):
    """A tool was called with arguments it cannot use; the message says which and why."""


class MemoryTools:
    """The server's tools, acting for ``agents`` (the first is the default caller)."""

    def __init__(
        self, memory: Memory, agents: Sequence[str], *, pack_dir: str | None = None,
        reviewers: Sequence[str] = (),
    ) -> None:  # fmt: skip
        names = [a for a in agents if isinstance(a, str) and a.strip()]
        if not names or len(names) != len(agents):
            raise ToolInputError(f"give one or more agent names, got {list(agents)!r}")
        self.memory = memory
        self.agents = list(dict.fromkeys(names))
        strangers = [r for r in reviewers if r not in self.agents]
        if strangers:
            raise ToolInputError(f"reviewers {strangers} are not among the agents {self.agents}")
        #: Who may review suggestions: none by default, a lesson reaching every frame (0183).
        self.reviewers = frozenset(reviewers)
        #: The only folder the pack tools read and write (ADR 0046); None: they refuse.
        self.pack_dir = os.path.realpath(os.path.expanduser(pack_dir)) if pack_dir else None

    def caller(self, agent: str | None) -> str:
        """Return the calling agent: ``agent`` if this server acts for it, else the default."""
        if agent is None or agent == "":
            return self.agents[0]
        if agent not in self.agents:
            raise ToolInputError(
                f"agent {agent!r} is not served by this server; it acts for {self.agents}"
            )
        return agent

    # -- memory ---------------------------------------------------------------------------

    def search_memory(
        self,
        query: str,
        k: int = 10,
        types: Sequence[str] | None = None,
        scope: str = "memories",
        agent: str | None = None,
        min_score: float | None = None,
        valid_at: str | None = None,
    ) -> dict[str, Any]:
        """Recall the ``k`` items best matching ``query`` that the caller may read.

        ``min_score`` (0..1) is the floor on an item's score; None: recall's default floor.
        ``valid_at`` (ISO 8601 with a timezone) asks what was true then (valid time).
        """
        who = self.caller(agent)
        floor = None if min_score is None else _score_floor(min_score)
        result = self.memory.agent(who).recall(
            query, k, types=types or None, scope=scope, min_score=floor,
            valid_at=iso_time(valid_at, "valid_at"),
        )  # fmt: skip
        return {
            "query": query,
            "scope": scope,
            "fallback": result.fallback,
            "recorded_at": result.recorded_at,
            "items": [_recalled(r, self._rule_texts(result.items)) for r in result.items],
        }

    def _rule_texts(self, items: Sequence[Recalled]) -> dict[int, str]:
        """Return the text of each served rule (a review event holds none when applied as
        proposed: the rules projection keeps the final text)."""
        if not any(r.event.kind == "suggestion.reviewed" for r in items):
            return {}
        with self.memory.engine.read() as conn:
            return {rule.position: rule.text for rule in rules.active(conn)}

    def upsert_memory(
        self,
        observations: Sequence[Mapping[str, Any]] = (),
        concepts: Sequence[Mapping[str, Any]] = (),
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Append observations and upsert concepts as the caller; return their positions.

        Every item is checked before anything is appended, so a bad item writes nothing.
        """
        who = self.caller(agent)
        if not observations and not concepts:
            raise ToolInputError("give at least one observation or concept")
        for group, items in (("observations", observations), ("concepts", concepts)):
            if len(items) > MAX_ITEMS:
                raise ToolInputError(
                    f"{group}: at most {MAX_ITEMS} a call (each one is appended and checked for"
                    f" what it replaces while other calls wait), got {len(items)}"
                )
        payloads = _check_items(who, observations, concepts)
        self._check_owners(who, [c["id"] for c in concepts])
        self._check_sizes(who, payloads, len(observations))
        stream = self.memory.agent(who)
        book = self.memory.concepts(who)
        written: dict[str, list[int]] = {"observations": [], "concepts": []}
        for obs in observations:
            written["observations"].append(
                stream.observe(
                    obs["text"],
                    type=obs.get("type", "observation"),
                    importance=obs.get("importance"),
                    visibility=obs.get("visibility", "public"),
                    tags=list(obs.get("tags") or ()),
                )
            )
        for c in concepts:
            written["concepts"].append(
                book.upsert(
                    c["id"],
                    c["type"],
                    c["label"],
                    payload=c.get("payload") or {},
                    links=list(c.get("links") or ()),
                    visibility=c.get("visibility", "public"),
                )
            )
        return {"agent": who, "positions": written}

    def _check_sizes(self, who: str, payloads: Sequence[msgspec.Struct], observed: int) -> None:
        """Check every item as the ledger will append it (its size once sealed included), so
        a batch whose last item is refused writes nothing before it."""
        events = [NewEvent.of(p, stream=f"agent:{who}", actor=who) for p in payloads]
        try:
            self.memory.ledger.check(events)
        except EventError as exc:
            i = exc.index or 0
            group, i = ("observations", i) if i < observed else ("concepts", i - observed)
            message = str(exc).split(": ", 1)[-1]
            raise ToolInputError(f"{group}[{i}]: {message}; nothing was written") from None

    def _check_owners(self, who: str, ids: Sequence[str]) -> None:
        if not ids:
            return
        self.memory.engine.wait_for(self.memory.ledger.head())
        with self.memory.engine.read() as conn:
            for i, cid in enumerate(ids):
                if concept_rows.get(conn, cid, agent=who) is None and concept_rows.exists(
                    conn, cid
                ):
                    raise ToolInputError(
                        f"concepts[{i}].id {cid!r} is private to another agent; choose another id"
                    )

    # -- context --------------------------------------------------------------------------

    def recall_context(
        self,
        query: str,
        scope: str = "task",
        k: int | None = None,
        task: str = "",
        session: str = "",
        budget: int = 2000,
        agent: str | None = None,
        min_score: float = 0.0,
    ) -> dict[str, Any]:
        """Build the caller's context frames for ``query`` (:func:`build_context`) and save them.

        ``scope`` says what steers the ``task`` component of the score: ``task`` the task
        text given; ``session`` the newest notes of the session's shared memo; ``agent``
        nothing but the query. ``k`` is how many items of each node type the frames keep
        (None: each type's own top k, :data:`engram.agents.frames.TOP_K`); ``min_score``
        (0..1) leaves out items less similar to the query than that. ``sections`` gives each
        frame's tokens.
        """
        who = self.caller(agent)
        if scope not in CONTEXT_SCOPES:
            raise ToolInputError(f"scope must be one of {list(CONTEXT_SCOPES)}, got {scope!r}")
        if scope == "session" and not session:
            raise ToolInputError("scope 'session' needs the session's name in `session`")
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 100):
            raise ToolInputError(f"k must be an int in 1..100, got {k!r}")
        if scope == "session":
            # Notes for the caller or for all: one addressed to another is not its task.
            task = " ".join(n.text for n in self.memory.memo(session).read(to=who))
        elif scope == "agent":
            task = ""
        context = build_context(
            self.memory.agent(who), query, task=task, budget=budget,
            weights=ContextWeights(per_type=k), save=True, min_score=_score_floor(min_score),
        )  # fmt: skip
        return {
            "frames": context.frames,
            "items": [
                {
                    "id": i.event_id,
                    "position": i.position,
                    "type": i.type,
                    "frame": i.frame,
                    "score": round(i.score, 6),
                }
                for i in context.items
            ],
            "tokens": context.tokens,
            "sections": context.sections,
            "budget": context.budget,
            "tokenizer": context.tokenizer,
            "event_id": context.event_id,
        }

    def save_context(
        self,
        frames: Mapping[str, object],
        query: str = "",
        task: str = "",
        budget: int = 2000,
        items: Sequence[str] = (),
        agent: str | None = None,
        session: str = "",
    ) -> dict[str, Any]:
        """Append ``context.saved``: the frames the caller was shown or wrote back.

        A number JSON cannot store (NaN, infinity) anywhere in ``frames`` is refused, named.
        Entries quoting the ledger by position keep the position only; everything the
        caller wrote itself goes to ``notes``, sealed under its key like the query and the
        task, so forgetting the caller forgets it too (ADR 0046).
        """
        who = self.caller(agent)
        if not isinstance(frames, Mapping) or not frames:
            raise ToolInputError("frames must be a non-empty object of frame name -> content")
        check_finite(frames, "frames")
        counter = default_counter()
        tokens = counter.count(json.dumps(frames, ensure_ascii=False, default=str))
        quoted, notes = split_written(frames)
        payload = ContextSaved(
            agent=who,
            budget=budget,
            tokens=tokens,
            frames=quoted,
            query=query,
            task=task,
            items=list(items),
            tokenizer=counter.name,
            notes=notes,
            session=session,
        )
        event = NewEvent.of(payload, stream=f"context:{who}", actor=who)
        position = self.memory.ledger.append(event)[0]
        (stored,) = self.memory.ledger.get([position])
        return {"position": position, "event_id": stored.id, "tokens": tokens}

    def saved_context(
        self, session: str = "", task: str = "", agent: str | None = None
    ) -> dict[str, Any] | None:
        """Return the caller's newest context saved for ``session`` and ``task``, or None.

        An empty ``session`` or ``task`` matches any; both empty match nothing. The frames
        come back as saved: ledger quotes by position, and what the caller wrote.
        """
        who = self.caller(agent)
        if not session and not task:
            return None
        found = None
        for event in self.memory.ledger.read_stream(f"context:{who}"):
            p = event.payload
            if event.kind == ContextSaved.__kind__ and (
                (not session or p.session == session) and (not task or p.task == task)
            ):
                found = event
        if found is None:
            return None
        p = found.payload
        return {
            "frames": saved_frames(p.frames, p.notes),
            "items": [{"id": i} for i in p.items],
            "tokens": p.tokens,
            "budget": p.budget,
            "tokenizer": p.tokenizer,
            "event_id": found.id,
            "position": found.position,
            "session": p.session,
            "task": p.task,
            "query": p.query,
            "saved": True,
        }

    # -- state ----------------------------------------------------------------------------

    def project_snapshot(self, agent: str | None = None) -> dict[str, Any]:
        """Return the ledger head and its hash, every projection's digest, and row counts."""
        self.caller(agent)
        memory = self.memory
        memory.engine.wait_for(memory.ledger.head())
        status = memory.engine.status(digest=True)
        head = min(s.checkpoint for s in status) if status else memory.ledger.head()
        last = memory.ledger.get([head])[0].hash.hex() if head else ""
        counts: dict[str, int] = {"events": head}
        with memory.engine.read() as conn:
            with contextlib.suppress(sqlite3.Error):
                counts["memories"] = salience.live_count(conn, "memory")
            for table in COUNTED:
                counts[table] = ProjectionStore.count(conn, table)
        projections = {
            s.name: {"version": s.version, "checkpoint": s.checkpoint, "digest": s.digest}
            for s in status
        }
        body = {"ledger": {"head": head, "hash": last}, "projections": projections}
        snapshot = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return {"snapshot": snapshot, **body, "counts": counts}

    # -- packs ----------------------------------------------------------------------------

    def export_pack(
        self,
        path: str,
        name: str,
        version: str,
        select: str | None = None,
        concepts: str | None = None,
        from_agent: str | None = None,
        domain: Sequence[str] = (),
        limit: int = 1000,
        key_env: str = KEY_ENV,
        agent: str | None = None,
    ) -> dict[str, Any]:
        """Export public knowledge the caller can read to a new pack file on the server's disk.

        The key is read from ``key_env``, an environment variable whose name starts with
        ``ENGRAM_`` (no other variable of the server can be made a key).

        An existing file is never replaced: a model cannot overwrite files through this tool.
        """
        who = self.caller(agent)
        if not (select or concepts or from_agent):
            raise ToolInputError(
                "choose what to export: select (a query), concepts (a concept prefix) or"
                " from_agent (an agent's memories); agent names who exports"
            )
        target = self.pack_path(path, new=True)
        key = _pack_key(key_env)
        manifest = export_pack(
            self.memory.agent(who),
            target,
            key,
            name=name,
            version=version,
            domain=domain,
            select=select,
            concepts_under=concepts,
            agent=from_agent,
            limit=limit,
        )
        return {
            "path": path,
            "id": manifest.id,
            "nodes": manifest.nodes,
            "checksum": manifest.checksum,
        }

    def import_pack(
        self, path: str, key_env: str = KEY_ENV, agent: str | None = None
    ) -> dict[str, Any]:
        """Check and import a pack file as the caller (a second import appends nothing)."""
        who = self.caller(agent)
        source = self.pack_path(path, new=False)
        done = import_pack(self.memory.agent(who), source, _pack_key(key_env))
        m = done.manifest
        return {
            "pack": m.id, "name": m.name, "version": m.version, "nodes": m.nodes,
            "appended": done.appended, "position": done.position, "embeddings": done.embeddings,
        }  # fmt: skip

    def pack_path(self, path: str, *, new: bool) -> str:
        """Return where ``path`` lies inside the pack folder, or refuse it (ADR 0046).

        A relative path is taken from the pack folder. The path is resolved through every
        symbolic link first, so a link cannot lead out; what is read must be a regular file
        (not a device, a FIFO or a folder), and what is written must not exist yet.
        """
        root = self.pack_dir
        if root is None:
            raise ToolInputError(
                "the pack tools are off: the user must name the folder they may use"
                " (engram mcp --pack-dir DIR, or mcp_pack_dir = DIR in the config file)"
            )
        if not isinstance(path, str) or not path.strip() or "\x00" in path:
            raise ToolInputError(f"path must be a file name in the pack folder {root}")
        given = os.path.join(root, path)
        real = os.path.realpath(given)
        if real == root or os.path.commonpath([root, real]) != root:
            raise ToolInputError(f"{path} is outside the pack folder {root}; use a name inside it")
        if new:
            if os.path.lexists(given) or os.path.lexists(real):
                raise ToolInputError(f"{path} exists; export to a new file name")
            if not os.path.isdir(os.path.dirname(real)):
                raise ToolInputError(f"{path}: no such folder in the pack folder {root}")
            return real
        try:
            mode = os.stat(real).st_mode
        except OSError as exc:
            raise ToolInputError(f"{path}: {exc.strerror} (in the pack folder {root})") from None
        if not stat.S_ISREG(mode):
            raise ToolInputError(f"{path} is not a regular file; a pack is a file")
        return real

    # -- learning loop --------------------------------------------------------------------

    def record_scar(
        self,
        outcome: str | None,
        what: str,
        lesson: str,
        importance: int | None = None,
        tags: Sequence[str] = (),
        agent: str | None = None,
        kind: str | None = None,
    ) -> dict[str, Any]:
        """Record a failure or a victory (``outcome``; ``kind`` is its deprecated name) and its
        lesson as the caller."""
        if kind is not None:
            if outcome is not None:
                raise ToolInputError("give outcome only (kind is its deprecated name)")
            outcome = kind
        if outcome is None:
            raise ToolInputError("outcome is required: 'failure' or 'victory'")
        who = self.caller(agent)
        position = self.memory.scars(who).record(
            outcome,  # type: ignore[arg-type]
            what,
            lesson,
            importance=importance,
            tags=list(tags),
        )
        return {"agent": who, "position": position}

    def list_suggestions(
        self, status: Sequence[str] = (), limit: int = 20, agent: str | None = None
    ) -> dict[str, Any]:
        """Return the lessons loop's suggestions, newest last, of ``status`` when given."""
        self.caller(agent)
        memory = self.memory
        memory.engine.wait_for(memory.ledger.head())
        with memory.engine.read() as conn:
            rows = suggestions.listing(conn, list(status) or None, limit)
        return {
            "suggestions": [
                {
                    "id": s.id,
                    "position": s.position,
                    "destination": s.destination,
                    "text": s.final_text or s.text,
                    "status": s.status,
                    "scars": s.scars,
                }
                for s in rows
            ]
        }


def _pack_key(key_env: str) -> PackKey:
    """Read the pack key from ``key_env``, a variable whose name starts with ``ENGRAM_``."""
    if not isinstance(key_env, str) or not key_env.startswith(KEY_ENV_PREFIX):
        raise ToolInputError(
            f"key_env must name an environment variable starting with {KEY_ENV_PREFIX}"
            f" (default {KEY_ENV}), got {key_env!r}"
        )
    return PackKey.from_env(key_env)


def check_finite(value: object, where: str) -> None:
    """Refuse NaN and infinity anywhere in ``value``: JSON cannot store them."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolInputError(f"{where} is NaN or infinity, which JSON cannot store")
    if isinstance(value, Mapping):
        for name, item in value.items():
            check_finite(item, f"{where}.{name}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_finite(item, f"{where}[{i}]")


def _score_floor(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ToolInputError(f"min_score must be a number in 0..1, got {value!r}")
    return float(value)


def _recalled(r: Recalled, rule_texts: Mapping[int, str]) -> dict[str, Any]:
    """Return one recalled item as JSON: a memory, scar, reflection, concept or rule."""
    event = r.event
    if event.kind == "suggestion.reviewed":
        text = rule_texts.get(event.position) or event.payload.text or ""
    else:
        text = scopes.item_text(event, refused=r.refused)
    return {
        "id": event.id,
        "position": event.position,
        "kind": event.kind,
        "type": scopes.item_type(event),
        "agent": scopes.item_author(event),
        "at": event.at.isoformat(),
        "text": text,
        "score": round(float(r.score), 6),
        "match": round(float(r.match), 6),
        "copies": r.copies,
        "copy_positions": list(r.copy_positions or (event.position,)),
        "replaced_by": r.replaced_by,
        "refused": r.refused,
    }


def _check_items(
    who: str, observations: Sequence[Mapping[str, Any]], concepts: Sequence[Mapping[str, Any]]
) -> list[msgspec.Struct]:
    """Check every item against its event's payload type before anything is appended;
    return the payloads, observations first."""
    checks: list[tuple[str, Mapping[str, Any], type[msgspec.Struct]]]
    checks = [("observations", o, MemoryObserved) for o in observations]
    checks += [("concepts", c, ConceptUpserted) for c in concepts]
    counters = {"observations": 0, "concepts": 0}
    payloads: list[msgspec.Struct] = []
    for group, item, payload in checks:
        i = counters[group]
        counters[group] += 1
        if not isinstance(item, Mapping):
            raise ToolInputError(f"{group}[{i}] must be an object")
        try:
            payloads.append(msgspec.convert({**item, "agent": who}, payload))
            if payload is MemoryObserved:
                refuse_unwritable(item.get("text"))  # warned of its length when observed
        except (msgspec.ValidationError, QueryError) as exc:
            raise ToolInputError(f"{group}[{i}]: {exc}") from None
    return payloads


def iso_time(value: str | None, name: str) -> datetime | None:
    """Return the time argument ``name`` (ISO 8601 with a timezone; None or "": none)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolInputError(f"{name} must be an ISO 8601 time string, got {value!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolInputError(f"{name}: not an ISO 8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise ToolInputError(f"{name}: {value!r} has no timezone")
    return parsed
