"""The agent runner: spawn → cognition → commit → sleep, for a set of agents (ADR 0035).

Each agent is an :class:`AgentSpec`: a **trigger** (a predicate over projection state, read
through a :class:`Probe`: its inbox, a neuron's salience, the memo), a **cognition** callable
(the user's: an LLM call, a rule — engram provides everything around it) that turns a
:class:`Situation` into a :class:`Plan`, and the streams it **watches**. A cycle:

1. **spawn** — the trigger holds on the projections caught up to the ledger's head;
2. **cognition** — the callable runs on an immutable :class:`Situation` (the watched
   streams' versions, read *before* the projections, the inbox, the memo);
3. **commit** — the plan's events and the acknowledgements of the signals it handled are
   appended as one atomic batch, expecting every watched stream it writes at the version
   read. A writer that got in between makes it a conflict: the runner reads again and asks
   cognition again, up to :class:`RetryPolicy` attempts with backoff; the caller sees the
   final :class:`CycleResult`;
4. **sleep** — until the ledger moves (:meth:`Runner.run` waits on the ledger's head).

A commit activates the neurons it touches (ADR 0066): every event of the plan on a
``neuron:<id>`` stream makes ``<id>`` a seed (at the strength the plan activated it with, or
:data:`COMMIT_STRENGTH` for another write), and the wave they start is appended in the same
atomic batch, so the next agents spawn from what changed. A commit that touches neurons a
recent commit's wave reached is the next pass of a reentrant chain (ADR 0065): its force
halves past ``PASS_LIMIT`` passes.

Cognition runs in a pool of threads (``workers``), so slow model calls overlap; reads and
commits stay on the runner's thread, in agent order, so one process's agents commit in a
fixed order and a run with one worker is deterministic.
"""

from __future__ import annotations

import logging
import math
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Literal

from engram.agents.network import NeuronNetwork
from engram.agents.signals import ack_event
from engram.ledger import (
    ANY,
    NO_STREAM,
    ConcurrencyError,
    EventError,
    Expectation,
    IdempotencyError,
    Ledger,
    NewEvent,
)
from engram.ledger.catalog import NeuronActivated
from engram.projections import activation, inbox, memo, salience
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.inbox import Signal
from engram.projections.memo import Note, PlanState
from engram.projections.salience import DEFAULT_RATE

log = logging.getLogger("engram.agents.runner")

#: The seed strength of a neuron a commit writes without activating it (ADR 0066).
COMMIT_STRENGTH = 0.5
#: Seconds within which a commit wave continues the reentrant chain of an earlier one.
PASS_WINDOW = 60.0

Outcome = Literal["idle", "nothing", "committed", "conflict", "failed"]


@dataclass(frozen=True)
class Situation:
    """What cognition sees: the ledger's head, watched streams' versions, inbox and memo."""

    agent: str
    head: int
    at: datetime
    versions: Mapping[str, int]
    inbox: tuple[Signal, ...]
    memo: tuple[Note, ...]
    attempt: int = 1
    reason: str = ""


@dataclass(frozen=True)
class Plan:
    """What a cycle commits: events, and the ids of the signals it handled.

    ``expect`` adds or overrides expectations; by default every watched stream the events
    write is expected at the version the situation read.
    """

    events: Sequence[NewEvent] = ()
    handled: Sequence[str] = ()
    expect: Mapping[str, Expectation] = field(default_factory=dict)


class Probe:
    """Projection state a trigger reads, inside one snapshot of the store."""

    def __init__(
        self,
        agent: str,
        conn: sqlite3.Connection,
        now: datetime,
        rate: float,
        session: str | None,
        head: int = 0,
        versions: Mapping[str, int] | None = None,
    ) -> None:
        self.agent = agent
        self.head = head
        self._versions = versions or {}
        self._conn = conn
        self._now = now
        self._rate = rate
        self._session = session
        self._inbox: list[Signal] | None = None

    @property
    def inbox(self) -> list[Signal]:
        """The agent's unacknowledged signals, oldest first."""
        if self._inbox is None:
            self._inbox = inbox.pending(self._conn, self.agent)
        return self._inbox

    def salience(self, neuron: str) -> int:
        """Return a neuron's salience now (0 if unknown or archived)."""
        item = salience.salience_of(self._conn, "neuron", neuron, self._now, rate=self._rate)
        return 0 if item is None else item.salience

    def version(self, stream: str) -> int:
        """Return a watched stream's version as read for this cycle (0: no such stream)."""
        if stream not in self._versions:
            raise QueryError(f"stream {stream!r} is not watched by agent {self.agent!r}")
        return self._versions[stream]

    def inhibition(self, neuron: str) -> float:
        """Return the pressure inhibiting connections put on ``neuron`` now (0: none)."""
        return activation.inhibition(self._conn, neuron, self._now, rate=self._rate)

    def plans(self) -> list[PlanState]:
        """Return the agent's session plans as they stand (empty without a session)."""
        if self._session is None:
            return []
        return memo.plans(self._conn, self._session)

    def memo(self) -> list[Note]:
        """Return the agent's session memo (empty without a session)."""
        if self._session is None:
            return []
        return memo.recent(self._conn, self._session)


#: A trigger returns its condition: falsy while it does not hold; else a value naming it
#: (a string says why the agent spawns). The runner spawns an agent once per new condition
#: (ADR 0066): a condition that stays the same, cycle after cycle, does not spawn it again.
Trigger = Callable[[Probe], object]


def inbox_waiting(probe: Probe) -> str:
    """Spawn when the agent has signals waiting; each new signal is a new condition."""
    return ", ".join(f"signal #{s.position} {s.topic} from {s.sender}" for s in probe.inbox)


def salience_above(neuron: str, threshold: int) -> Trigger:
    """Spawn when ``neuron``'s salience rises over ``threshold`` (e.g. a stimulus over 40,000).

    The condition holds while the salience stays over; it spawns again only after the
    salience fell back and rose over once more.
    """
    return lambda probe: (
        f"{neuron} salience over {threshold}" if probe.salience(neuron) > threshold else ""
    )


def memo_addressed(probe: Probe) -> str:
    """Spawn on memo notes addressed to the agent by name, posted after its own last note."""
    notes = probe.memo()
    mine = max((n.position for n in notes if n.agent == probe.agent), default=0)
    return ", ".join(
        f"memo #{n.position} {n.type} from {n.agent}"
        for n in notes
        if n.to == probe.agent and n.position > mine
    )


def ledger_moved(probe: Probe) -> str:
    """Spawn whenever the ledger moved since the agent's last spawn (every new head)."""
    return f"the ledger moved to {probe.head}"


def any_of(*triggers: Trigger) -> Trigger:
    """Spawn when any of ``triggers`` holds; the condition is the first that holds."""
    return lambda probe: next((c for t in triggers if (c := t(probe))), "")


@dataclass(frozen=True)
class AgentSpec:
    """One agent of a runner: its name, trigger, cognition, watched streams and memo session.

    ``cooldown`` is the least time, in seconds, between two spawns of the agent: a new
    condition within it waits (it is not lost) until the cooldown is over. Agents of a
    higher ``priority`` go first in a step: they spawn, think and commit before the triggers
    of lower ones are read, so an urgent agent's commit can hold the others back.
    """

    name: str
    cognition: Callable[[Situation], Plan | None]
    trigger: Trigger = inbox_waiting
    watch: Sequence[str] = ()
    session: str | None = None
    cooldown: float = 0.0
    priority: int = 0


@dataclass(frozen=True)
class RetryPolicy:
    """How a conflicting commit is retried: attempts in all, and backoff between them."""

    attempts: int = 5
    backoff: float = 0.01
    factor: float = 2.0
    max_backoff: float = 0.5

    def __post_init__(self) -> None:
        if (
            not isinstance(self.attempts, int)
            or isinstance(self.attempts, bool)
            or self.attempts < 1
        ):
            raise QueryError(f"attempts must be an int >= 1, got {self.attempts!r}")
        for name in ("backoff", "factor", "max_backoff"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
                raise QueryError(f"{name} must be a number >= 0, got {value!r}")

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Return the pause before ``attempt`` (2, 3, ...): exponential, capped, jittered."""
        base = min(self.backoff * self.factor ** (attempt - 2), self.max_backoff)
        return base * (0.5 + rng.random() / 2)


@dataclass(frozen=True)
class CycleResult:
    """How one agent's cycle ended, the positions it committed, the attempts it took and
    ``reason``, the condition that spawned it."""

    agent: str
    outcome: Outcome
    positions: tuple[int, ...] = ()
    attempts: int = 0
    error: str | None = None
    reason: str = ""


class Runner:
    """Runs a set of agents' cycles over one ledger and its projections."""

    def __init__(
        self,
        ledger: Ledger,
        engine: ProjectionEngine,
        agents: Sequence[AgentSpec],
        *,
        policy: RetryPolicy | None = None,
        workers: int = 1,
        rate: float = DEFAULT_RATE,
        seed: int | None = None,
        activate_commits: bool = True,
    ) -> None:
        """``activate_commits=False`` leaves a commit's neurons as the plan wrote them."""
        names = [a.name for a in agents]
        if not agents or not all(isinstance(a, AgentSpec) for a in agents):
            raise QueryError("agents must be a non-empty sequence of AgentSpec")
        if len(set(names)) != len(names) or not all(isinstance(n, str) and n for n in names):
            raise QueryError(f"agent names must be non-empty and distinct, got {names}")
        if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
            raise QueryError(f"workers must be an int >= 1, got {workers!r}")
        self.ledger = ledger
        self.engine = engine
        self.agents = list(agents)
        self.policy = policy or RetryPolicy()
        self.workers = workers
        self.rate = rate
        self._rng = random.Random(seed)
        self.activate_commits = activate_commits
        self._network = NeuronNetwork(ledger, engine, actor="runner", rate=rate)
        self._passes: dict[str, tuple[int, datetime]] = {}  # neuron -> (pass, when) reached
        self._conditions: dict[str, object] = {}  # agent -> the condition it last spawned on
        self._spawned_at: dict[str, float] = {}  # agent -> monotonic time of its last spawn
        for spec in self.agents:
            if not isinstance(spec.priority, int) or isinstance(spec.priority, bool):
                raise QueryError(f"priority of {spec.name!r} must be an int, got {spec.priority!r}")
            cooldown = spec.cooldown
            if not isinstance(cooldown, int | float) or isinstance(cooldown, bool) or cooldown < 0:
                raise QueryError(
                    f"cooldown of {spec.name!r} must be seconds >= 0, got {cooldown!r}"
                )

    # -- one step: every agent whose trigger holds runs one cycle ----------------------------

    def step(self) -> list[CycleResult]:
        """Run one cycle of every agent whose trigger holds; return each agent's result.

        Agents go by priority, highest first; each priority's commits land before the next
        priority's triggers are read.
        """
        results: dict[str, CycleResult] = {}
        for priority in sorted({spec.priority for spec in self.agents}, reverse=True):
            self._step([spec for spec in self.agents if spec.priority == priority], results)
        return [results[spec.name] for spec in self.agents]

    def _step(self, agents: Sequence[AgentSpec], results: dict[str, CycleResult]) -> None:
        spawned: list[tuple[AgentSpec, Situation]] = []
        for spec in agents:
            situation = self._situation(spec, attempt=1, check_trigger=True)
            if situation is None or not self._spawns(spec, situation):
                results[spec.name] = CycleResult(spec.name, "idle")
            else:
                spawned.append((spec, situation))
        if spawned:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                plans = list(pool.map(lambda s: self._think(*s), spawned))
            for (spec, situation), plan in zip(spawned, plans, strict=True):
                result = self._commit(spec, situation, plan)
                results[spec.name] = replace(result, reason=situation.reason)

    def run(
        self,
        *,
        cycles: int | None = None,
        stop: threading.Event | None = None,
        idle_timeout: float = 1.0,
    ) -> list[CycleResult]:
        """Step until ``cycles`` steps ran, ``stop`` is set, or (without either) all are idle.

        When every agent is idle the runner sleeps until the ledger moves, at most
        ``idle_timeout`` seconds at a time. Returns every non-idle result, in order.
        """
        done: list[CycleResult] = []
        steps = 0
        while (cycles is None or steps < cycles) and not (stop is not None and stop.is_set()):
            head = self.ledger.head()
            results = self.step()
            steps += 1
            active = [r for r in results if r.outcome != "idle"]
            done.extend(active)
            if active:
                continue
            if cycles is None and stop is None:
                break
            self.ledger.wait(head, timeout=idle_timeout)
        return done

    # -- the cycle's parts -------------------------------------------------------------------

    def _spawns(self, spec: AgentSpec, situation: Situation) -> bool:
        """Say whether a holding trigger is a new condition past the agent's cooldown."""
        condition = situation.reason
        if self._conditions.get(spec.name) == condition:
            return False  # the same condition as the last spawn: it stays true, no respawn
        since = time.monotonic() - self._spawned_at.get(spec.name, -math.inf)
        if since < spec.cooldown:
            return False  # new, but too soon: it waits for the cooldown
        self._conditions[spec.name] = condition
        self._spawned_at[spec.name] = time.monotonic()
        log.info("agent %s spawned: %s", spec.name, condition)
        return True

    def _situation(self, spec: AgentSpec, *, attempt: int, check_trigger: bool) -> Situation | None:
        versions = self.ledger.versions(list(spec.watch))  # before the state they guard
        head = self.ledger.head()
        self.engine.wait_for(head)
        now = datetime.now(UTC)
        with self.engine.read() as conn:
            probe = Probe(spec.name, conn, now, self.rate, spec.session, head, versions)
            reason = ""
            if check_trigger:
                try:
                    fired = spec.trigger(probe)
                except Exception as exc:  # a user's trigger must not stop the others
                    log.warning("agent %s: trigger failed: %r", spec.name, exc)
                    return None
                if not fired:
                    self._conditions.pop(spec.name, None)  # the condition ended
                    return None
                reason = fired if isinstance(fired, str) else "its trigger holds"
            return Situation(
                spec.name,
                head,
                now,
                versions,
                tuple(probe.inbox),
                tuple(probe.memo()),
                attempt,
                reason,
            )

    def _think(self, spec: AgentSpec, situation: Situation) -> Plan | BaseException | None:
        try:
            return spec.cognition(situation)
        except Exception as exc:  # the caller's cognition failed: this cycle fails, not the runner
            return exc

    def _commit(
        self, spec: AgentSpec, situation: Situation, plan: Plan | BaseException | None
    ) -> CycleResult:
        for attempt in range(1, self.policy.attempts + 1):
            if isinstance(plan, BaseException):
                return CycleResult(spec.name, "failed", (), attempt, f"cognition: {plan!r}")
            if plan is None or (not plan.events and not plan.handled):
                return CycleResult(spec.name, "nothing", (), attempt)
            try:
                passes, wave, reached = self._wave(spec, plan)
                positions = self.ledger.append(*self._batch(spec, situation, plan, wave))
                self._chain(passes, reached)
                return CycleResult(spec.name, "committed", tuple(positions), attempt)
            except (ConcurrencyError, IdempotencyError) as exc:
                # Another writer got in between (or took the same signal): read again, think again.
                log.info("agent %s: conflict on attempt %d: %s", spec.name, attempt, exc)
                last = str(exc)
            except EventError as exc:
                return CycleResult(spec.name, "failed", (), attempt, f"plan: {exc}")
            if attempt == self.policy.attempts:
                break
            time.sleep(self.policy.delay(attempt + 1, self._rng))
            fresh = self._situation(spec, attempt=attempt + 1, check_trigger=True)
            if fresh is None:  # nothing to do any more (the signal was taken meanwhile)
                return CycleResult(spec.name, "nothing", (), attempt + 1)
            situation, plan = fresh, self._think(spec, fresh)
        return CycleResult(spec.name, "conflict", (), self.policy.attempts, last)

    def _wave(self, spec: AgentSpec, plan: Plan) -> tuple[int, list[NewEvent], list[str]]:
        """Return the pass, the activations and the neurons of the wave a plan's writes start."""
        if not self.activate_commits:
            return 0, [], []
        touched: dict[str, float] = {}
        activated: list[str] = []
        for event in plan.events:
            if not event.stream.startswith("neuron:"):
                continue
            neuron = event.stream.removeprefix("neuron:")
            strength = COMMIT_STRENGTH
            if isinstance(event.payload, NeuronActivated):
                strength = event.payload.strength
                activated.append(neuron)
            touched[neuron] = max(touched.get(neuron, 0.0), strength)
        if not touched:
            return 0, [], []
        now = datetime.now(UTC)
        earlier = [self._passes.get(n) for n in touched]
        passes = 1 + max(
            (p for p, when in filter(None, earlier) if (now - when).total_seconds() < PASS_WINDOW),
            default=0,
        )
        wave, events = self._network.commit_wave(
            touched, agent=spec.name, activated=activated, at=now, passes=passes
        )
        reached = [] if wave is None else [n for n, v in wave.levels.items() if v > 0]
        return passes, events, reached

    def _chain(self, passes: int, reached: Sequence[str]) -> None:
        """Remember which neurons a committed wave reached, and at which pass."""
        now = datetime.now(UTC)
        for neuron in reached:
            self._passes[neuron] = (passes, now)

    @staticmethod
    def _batch(
        spec: AgentSpec, situation: Situation, plan: Plan, wave: Sequence[NewEvent] = ()
    ) -> tuple[list[NewEvent], dict[str, Expectation]]:
        events = [*plan.events, *wave, *(ack_event(spec.name, s) for s in plan.handled)]
        expect: dict[str, Expectation] = {}
        for event in plan.events:
            version = situation.versions.get(event.stream)
            if version is not None:
                expect[event.stream] = version or NO_STREAM
        expect.update(plan.expect)
        for event in events:
            expect.setdefault(event.stream, ANY)
        return events, expect
