"""The projection engine: catch-up, rebuild, follow, read-your-writes, status.

The engine feeds each registered projection the ledger's events after its checkpoint, in
position order and in batches. One read of the ledger serves every projection that is behind;
each batch commits every projection's state and checkpoint in one store transaction, each
projection inside its own savepoint so a failing handler stops only its projection (ADR 0011).

Two processes may run engines over the same store: every batch holds the store's write lock
and re-reads the checkpoints inside it, so no event is applied twice.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from engram.ledger import Event, Ledger
from engram.ledger.collector import collector_paused
from engram.projections.base import Projection, check_projection, kind_names
from engram.projections.errors import (
    CatchUpError,
    HandlerError,
    ProjectionConfigError,
    ProjectionStoreError,
    UnknownProjectionError,
    WaitTimeoutError,
)
from engram.projections.store import Generation, ProjectionStore

#: Called as ``progress(label, done, total)`` while a long catch-up or rebuild runs.
Progress = Callable[[str, int, int], None]

_log = logging.getLogger(__name__)

#: The store-level setting recording the newest event the store has read: its position, its
#: hash and the ledger's id (ADR 0124).
LINEAGE = "ledger_lineage"
DEFAULT_BATCH = 5000
#: A rebuild reads at least this many events per batch. The generation it builds is invisible
#: until the swap, so fewer, larger transactions cost only memory, and each batch loads and
#: writes back the rows it touches once.
REBUILD_BATCH = 200_000


class ProjectionStatus(NamedTuple):
    """Where one projection stands against the ledger."""

    name: str
    version: int
    identity: str
    stored_identity: str | None
    generation: int | None
    checkpoint: int
    head: int
    lag: int
    state: str  # live | stale (code changed; rebuild pending) | failed | rebuilding
    error: str | None
    digest: str | None


class _Target(NamedTuple):
    generation: int
    checkpoint: int
    projection: Projection


class ProjectionEngine:
    """Keeps a set of projections in a local store caught up with a ledger.

    Thread-safe: one engine may be shared by the threads of a process.
    """

    def __init__(
        self,
        ledger: Ledger,
        store: str | Path | ProjectionStore,
        projections: Sequence[Projection],
        *,
        batch_size: int = DEFAULT_BATCH,
        busy_timeout: float = 30.0,
    ) -> None:
        if not isinstance(ledger, Ledger):
            raise ProjectionConfigError(f"ledger must be a Ledger, got {ledger!r}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ProjectionConfigError(f"batch_size must be a positive int, got {batch_size!r}")
        checked = [check_projection(p) for p in projections]
        self._check_unique(checked)
        self.ledger = ledger
        self.batch_size = batch_size
        self.projections = {p.name: p for p in checked}
        #: Each projection's kinds as stored names, checked against the ledger's registry.
        self._kinds = {p.name: self._known_kinds(p, ledger) for p in checked}
        self.store = (
            store
            if isinstance(store, ProjectionStore)
            else ProjectionStore(store, busy_timeout=busy_timeout)
        )
        with self.store.transaction() as conn:
            live = {g.name for g in self.store.generations(conn) if g.state == "live"}
            for projection in checked:
                if projection.name not in live:
                    self.store.create_generation(conn, projection, "live")
        self._ledger_id = ledger.identity()[0]
        #: Why the store was emptied when this engine opened it (None: it was not): it had
        #: been built from another ledger, or from another history of this one (ADR 0124).
        self.reset: str | None = self._check_lineage()

    @staticmethod
    def _known_kinds(projection: Projection, ledger: Ledger) -> frozenset[str]:
        """Return the kinds ``projection`` consumes, refusing any the registry lacks.

        A misspelt kind would otherwise consume nothing, silently, forever.
        """
        names = kind_names(projection)
        registered = [spec.name for spec in ledger.registry]
        for name in names:
            if name not in ledger.registry:
                close = difflib.get_close_matches(name, registered, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ProjectionConfigError(
                    f"projection {projection.name!r} consumes kind {name!r}, which the "
                    f"ledger's registry does not know{hint} (register its payload type "
                    "before opening the engine)"
                )
        return frozenset(names)

    @staticmethod
    def _check_unique(projections: list[Projection]) -> None:
        names: set[str] = set()
        tables: dict[str, str] = {}
        for p in projections:
            if p.name in names:
                raise ProjectionConfigError(f"two projections are named {p.name!r}")
            names.add(p.name)
            for table in p.tables:
                if table in tables:
                    raise ProjectionConfigError(
                        f"table {table!r} is declared by both {tables[table]!r} and {p.name!r}"
                    )
                tables[table] = p.name

    # -- lineage ---------------------------------------------------------------------------

    def _check_lineage(self) -> str | None:
        """Empty the store when the ledger is not the one it was built from, or not the
        history it read (a ledger file replaced, an older backup restored, a PostgreSQL schema
        dropped and made again): its checkpoints would skip the new events at the positions it
        has read and serve the old ones' rows (ADR 0124). Every projection then starts again
        from position 0 on the next catch-up. Return why, or None."""
        with self.store.transaction() as conn:
            kept = self.store.get(conn, LINEAGE)
            why = self._diverged(kept) if kept else None
            if why is None:
                return None
            for generation in self.store.generations(conn):
                self.store.drop_generation(conn, generation.generation)
            self.store.put(conn, LINEAGE, "")
            for projection in self.projections.values():
                self.store.create_generation(conn, projection, "live")
        _log.warning("projection store %s emptied, to be built again: %s", self.store.path, why)
        return why

    def _recheck_lineage(self) -> None:
        """Check the store's record against the ledger again, as an open does, before a
        catch-up: a ledger restored from a backup under a running process (a server, the
        daemon) would otherwise have its new events applied on top of the old history's rows,
        and the record moved on past the evidence (ADR 0124). One read of one event."""
        with self.store.snapshot() as conn:
            kept = self.store.get(conn, LINEAGE)
        if kept and self._diverged(kept) is not None:
            self.reset = self._check_lineage()

    def _diverged(self, kept: str) -> str | None:
        """Say how the ledger differs from the one whose newest read event ``kept`` records
        (``position hash ledger-id``); None when it holds that very event."""
        try:
            said, digest, ledger_id = kept.split(" ", 2)
            position = int(said)
        except ValueError:
            return f"its record of the ledger it read is malformed ({kept[:80]!r})"
        if ledger_id and self._ledger_id and ledger_id != self._ledger_id:
            return f"it was built from ledger {ledger_id}, not from this one ({self._ledger_id})"
        head = self.ledger.head()
        if position > head:
            return f"it read position {position}, past this ledger's head ({head})"
        (event,) = self.ledger.get([position])
        if event.hash.hex() != digest:
            return f"the event at position {position} is not the one it read"
        return None

    def _read_up_to(self, conn: sqlite3.Connection, event: Event) -> None:
        """Record ``event`` as the newest the store has read, where it is newer."""
        kept = self.store.get(conn, LINEAGE)
        if kept:
            said = kept.split(" ", 1)[0]
            if said.isdigit() and int(said) >= event.position:
                return
        self.store.put(conn, LINEAGE, f"{event.position} {event.hash.hex()} {self._ledger_id}")

    # -- catch-up --------------------------------------------------------------------------

    def catch_up(
        self,
        *,
        upto: int | None = None,
        names: Sequence[str] | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Apply the events committed since each projection's checkpoint; return the head.

        Projections whose code identity differs from their stored generation, or whose
        rebuild was interrupted, are rebuilt first (beside the live one, then swapped). A
        projection whose handler raises stops at the failing event; the others still reach
        the head, then :class:`CatchUpError` reports every failure.
        """
        self._recheck_lineage()
        selected = self._select(names)
        head = self._head(upto)
        stale = self._needing_rebuild(selected)
        failures: list[HandlerError] = []
        if stale:
            failures.extend(self._rebuild(stale, progress))
        failed = {f.projection for f in failures}
        live = [p for p in selected if p.name not in failed and p.name not in stale]
        failures.extend(self._advance(live, "live", head, progress))
        if failures:
            raise CatchUpError(failures)
        return head

    def rebuild(
        self, names: Sequence[str] | None = None, *, progress: Progress | None = None
    ) -> None:
        """Rebuild projections from position 0 beside the live ones and swap atomically.

        Readers see the old state until the swap. A rebuild interrupted by a crash resumes
        from its own checkpoint on the next catch-up; an explicit rebuild starts over. It
        reads batches of at least :data:`REBUILD_BATCH` events (``batch_size`` if larger).
        """
        selected = [p.name for p in self._select(names)]
        failures = self._rebuild(selected, progress, fresh=True)
        if failures:
            raise CatchUpError(failures)

    def _rebuild(
        self, names: list[str], progress: Progress | None, *, fresh: bool = False
    ) -> list[HandlerError]:
        projections = [self.projections[n] for n in names]
        with self.store.transaction() as conn:
            building = {g.name: g for g in self.store.generations(conn) if g.state == "building"}
            for p in projections:
                old = building.get(p.name)
                if old is not None and (fresh or old.identity != p.identity()):
                    self.store.drop_generation(conn, old.generation)
                    old = None
                if old is None:
                    self.store.create_generation(conn, p, "building")
        failures = self._advance(projections, "building", self._head(None), progress)
        failed = {f.projection for f in failures}
        with self.store.transaction() as conn:
            for p in projections:
                if p.name in failed:
                    continue
                gen = self._generation(conn, p.name, "building")
                if gen is None:  # another process swapped it in already
                    continue
                head = self.ledger.head()
                target = _Target(generation=gen.generation, checkpoint=gen.checkpoint, projection=p)
                size = self._rebuild_batch
                while target.checkpoint < head:
                    ((target, failure),) = self._apply_batch(conn, [target], head, size)
                    if failure is not None:
                        failures.append(failure)
                        break
                else:
                    self.store.promote(conn, p, gen.generation)
        return failures

    def _advance(
        self, projections: list[Projection], state: str, head: int, progress: Progress | None
    ) -> list[HandlerError]:
        """Run batches until every generation in ``state`` of ``projections`` reaches head."""
        # A projection that reports within a batch (the semantic index, per slice) does so
        # through the same callback while this runs.
        hooked = [p for p in projections if hasattr(p, "progress")] if progress else []
        for p in hooked:
            p.progress = progress
        try:
            return self._run_batches(projections, state, head, progress)
        finally:
            for p in hooked:
                p.progress = None

    def _run_batches(
        self, projections: list[Projection], state: str, head: int, progress: Progress | None
    ) -> list[HandlerError]:
        failures: list[HandlerError] = []
        active = {p.name: p for p in projections}
        label = "rebuild" if state == "building" else "catch-up"
        start: int | None = None
        while active:
            with self.store.transaction() as conn:
                targets = []
                for g in self.store.generations(conn):
                    p = active.get(g.name)
                    if p is None or g.state != state:
                        continue
                    if g.identity != p.identity():
                        continue
                    if g.checkpoint > head and g.checkpoint > self.ledger.head():
                        raise ProjectionStoreError(
                            f"projection {g.name!r} is at position {g.checkpoint} but the"
                            f" ledger's head is {self.ledger.head()}: the store {self.store.path}"
                            " was built from another ledger; delete it and rebuild"
                        )
                    if g.checkpoint < head:
                        targets.append(
                            _Target(generation=g.generation, checkpoint=g.checkpoint, projection=p)
                        )
                if not targets:
                    break
                if start is None:
                    start = min(t.checkpoint for t in targets)
                done = head
                size = self._rebuild_batch if state == "building" else self.batch_size
                for target, failure in self._apply_batch(conn, targets, head, size):
                    done = min(done, target.checkpoint)
                    if failure is not None:
                        failures.append(failure)
                        del active[target.projection.name]
            if progress is not None:
                progress(label, done - start, head - start)
        return failures

    @property
    def _rebuild_batch(self) -> int:
        return max(self.batch_size, REBUILD_BATCH)

    def _apply_batch(
        self, conn: sqlite3.Connection, targets: list[_Target], head: int, size: int
    ) -> list[tuple[_Target, HandlerError | None]]:
        """Apply one batch of at most ``size`` events to each target in the open transaction."""
        with collector_paused():
            return self._apply_events(conn, targets, head, size)

    def _apply_events(
        self, conn: sqlite3.Connection, targets: list[_Target], head: int, size: int
    ) -> list[tuple[_Target, HandlerError | None]]:
        low = min(t.checkpoint for t in targets)
        consumed = {t.projection.name: self._kinds[t.projection.name] for t in targets}
        kinds = sorted(frozenset[str]().union(*consumed.values()))
        events = list(self.ledger.read(low, kinds=kinds, upto=head, limit=size))
        covered = events[-1].position if len(events) == size else head
        if events:
            self._read_up_to(conn, events[-1])
        read = frozenset(kinds)
        results = []
        for target in targets:
            p = target.projection
            wanted = consumed[p.name]
            if target.checkpoint > low:
                sub = [e for e in events if e.position > target.checkpoint and e.kind in wanted]
            elif wanted == read:  # every event read is this target's (a lone projection)
                sub = events
            else:
                sub = [e for e in events if e.kind in wanted]
            checkpoint = max(target.checkpoint, covered)
            failure = None
            if sub:
                tables = self.store.tables(conn, p, target.generation)
                conn.execute("SAVEPOINT batch")
                try:
                    p.apply(tables, sub)
                except Exception:
                    conn.execute("ROLLBACK TO batch")
                    checkpoint, failure = self._apply_one_by_one(conn, target, sub, checkpoint)
                conn.execute("RELEASE batch")
            if failure is None:
                self.store.set_checkpoint(conn, target.generation, checkpoint)
            else:
                self.store.set_failure(
                    conn,
                    target.generation,
                    checkpoint,
                    failure.position,
                    failure.kind,
                    failure.cause,
                )
            results.append((target._replace(checkpoint=checkpoint), failure))
        return results

    def _apply_one_by_one(
        self, conn: sqlite3.Connection, target: _Target, events: list[Event], covered: int
    ) -> tuple[int, HandlerError | None]:
        """Find the failing event of a batch; keep everything before it."""
        p = target.projection
        tables = self.store.tables(conn, p, target.generation)
        for event in events:
            conn.execute("SAVEPOINT one")
            try:
                p.apply(tables, [event])
            except Exception as exc:
                conn.execute("ROLLBACK TO one")
                conn.execute("RELEASE one")
                cause = f"{type(exc).__name__}: {exc}"
                return event.position - 1, HandlerError(p.name, event.position, event.kind, cause)
            conn.execute("RELEASE one")
        return covered, None

    # -- following -------------------------------------------------------------------------

    def follow(
        self,
        *,
        stop: threading.Event | None = None,
        idle_timeout: float | None = None,
        on_error: Callable[[CatchUpError], None] | None = None,
    ) -> None:
        """Keep the projections caught up as events are appended, until ``stop`` is set.

        Returns after ``idle_timeout`` seconds without new events (None: never). A handler
        failure is passed to ``on_error`` (default: raised) and the failed projection is
        retried on the next event.
        """
        seen = -1
        idle_since = time.monotonic()
        while stop is None or not stop.is_set():
            head = self.ledger.head()
            if head != seen:
                try:
                    seen = self.catch_up(upto=head)
                except CatchUpError as exc:
                    if on_error is None:
                        raise
                    on_error(exc)
                    seen = head
                idle_since = time.monotonic()
                continue
            if idle_timeout is not None and time.monotonic() - idle_since >= idle_timeout:
                return
            self.ledger.wait(seen, 0.5)

    def wait_for(self, position: int, timeout: float = 10.0) -> None:
        """Return once every projection has applied ``position`` (read-your-writes).

        Catches up in this thread if needed. Raises :class:`WaitTimeoutError` when the ledger
        has not reached ``position`` in time, and :class:`CatchUpError` if a projection
        stops before it.
        """
        if not isinstance(position, int) or isinstance(position, bool) or position < 0:
            raise ProjectionConfigError(f"position must be an int >= 0, got {position!r}")
        deadline = time.monotonic() + timeout
        while (head := self.ledger.head()) < position:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeoutError(
                    f"the ledger has not reached position {position} within {timeout}s"
                    f" (head {head})"
                )
            self.ledger.wait(position - 1, min(remaining, 0.5))
        with self.store.snapshot() as conn:
            live = {g.name: g.checkpoint for g in self.store.generations(conn) if g.state == "live"}
        if live and max(live.values()) > head:
            self._recheck_lineage()  # a store past the head: the ledger was restored under it
            with self.store.snapshot() as conn:
                live = {
                    g.name: g.checkpoint for g in self.store.generations(conn) if g.state == "live"
                }
        if min(live.get(name, 0) for name in self.projections) < position:
            self.catch_up(upto=position)

    # -- reading ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """Yield a read-only connection on the live views, inside one snapshot."""
        with self.store.snapshot() as conn:
            yield conn

    def status(self, *, digest: bool = False) -> list[ProjectionStatus]:
        """Return each projection's version, checkpoint, lag and (optionally) digest."""
        head = self.ledger.head()
        with self.store.snapshot() as conn:
            gens = self.store.generations(conn)
            out = []
            for name, p in self.projections.items():
                live = next((g for g in gens if g.name == name and g.state == "live"), None)
                building = any(g.name == name and g.state == "building" for g in gens)
                checkpoint = 0 if live is None else live.checkpoint
                if live is not None and live.error is not None:
                    state, error = "failed", live.error
                    error = (
                        f"stopped at position {live.failed_position} ({live.failed_kind}): {error}"
                    )
                elif live is None or live.identity != p.identity():
                    state, error = "stale", None
                else:
                    state, error = ("rebuilding" if building else "live"), None
                value = None
                if digest and live is not None:
                    value = p.digest(self.store.tables(conn, p, live.generation))
                out.append(
                    ProjectionStatus(
                        name=name,
                        version=p.version,
                        identity=p.identity(),
                        stored_identity=None if live is None else live.identity,
                        generation=None if live is None else live.generation,
                        checkpoint=checkpoint,
                        head=head,
                        lag=max(head - checkpoint, 0),
                        state=state,
                        error=error,
                        digest=value,
                    )
                )
            return out

    def digest(self, name: str) -> str:
        """Return the sha256 digest of a projection's live state."""
        self._select([name])
        status = next(s for s in self.status(digest=True) if s.name == name)
        assert status.digest is not None
        return status.digest

    def close(self) -> None:
        """Close the projection store (the ledger stays open: it belongs to the caller)."""
        self.store.close()

    def __enter__(self) -> ProjectionEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------

    def _select(self, names: Sequence[str] | None) -> list[Projection]:
        if names is None:
            return list(self.projections.values())
        if isinstance(names, str):
            names = [names]
        unknown = [n for n in names if n not in self.projections]
        if unknown:
            raise UnknownProjectionError(
                f"unknown projection(s) {', '.join(map(repr, unknown))}"
                f" (registered: {', '.join(sorted(self.projections))})"
            )
        return [self.projections[n] for n in dict.fromkeys(names)]

    def _head(self, upto: int | None) -> int:
        head = self.ledger.head()
        if upto is None:
            return head
        if not isinstance(upto, int) or isinstance(upto, bool) or upto < 0:
            raise ProjectionConfigError(f"upto must be an int >= 0, got {upto!r}")
        return min(upto, head)

    def _needing_rebuild(self, projections: list[Projection]) -> list[str]:
        """Names with a stale or missing live generation, or an interrupted rebuild to resume."""
        with self.store.snapshot() as conn:
            gens = {(g.name, g.state): g.identity for g in self.store.generations(conn)}
        return [
            p.name
            for p in projections
            if gens.get((p.name, "live")) != p.identity()
            or gens.get((p.name, "building")) == p.identity()
        ]

    def _generation(self, conn: sqlite3.Connection, name: str, state: str) -> Generation | None:
        return next(
            (g for g in self.store.generations(conn) if g.name == name and g.state == state), None
        )
