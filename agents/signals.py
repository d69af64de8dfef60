"""Signals and the shared memo: how agents talk through the ledger (no orchestrator).

:class:`Mailbox` sends an agent's signals, lists its inbox and acknowledges what it has
taken; :class:`SharedMemo` posts to and reads a session's memo. Every change is an event;
every read waits until the projections hold the ledger's head (read-your-writes).

An acknowledgement's id is derived from (agent, signal), so acknowledging twice — a retry
after a crash, two threads of one agent — stores one ``signal.acked``: a signal leaves an
inbox once and is never delivered again to the agent that took it. Handling a signal
exactly once: give :meth:`Mailbox.ack` the events the handling produced; they and the
acknowledgement are appended as one atomic batch, so after a crash either both are stored
(the signal is gone from the inbox) or neither is (it is still there).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from engram.agents.arguments import check_key
from engram.agents.errors import SignalAckedError, SignalRecipientError, UnknownSignalError
from engram.ledger import IdempotencyError, Ledger, NewEvent
from engram.ledger.catalog import (
    MemoAddressed,
    MemoPosted,
    MemoType,
    PlanProposed,
    PlanStatus,
    PlanUpdated,
    SignalAcked,
    SignalSent,
)
from engram.ledger.ids import normalize_id
from engram.projections import inbox, memo
from engram.projections.engine import ProjectionEngine
from engram.projections.errors import QueryError
from engram.projections.inbox import Signal
from engram.projections.memo import Note, PlanState

#: The namespace of acknowledgement ids (uuid5 of ``agent\nsignal id``).
ACK_NAMESPACE = uuid.UUID("6f1d2c1e-5b7a-4f5e-9a43-2d1f0c8e7b61")


def ack_id(agent: str, signal_id: str) -> str:
    """Return the id ``agent``'s acknowledgement of ``signal_id`` is stored under."""
    return str(uuid.uuid5(ACK_NAMESPACE, f"{agent}\n{signal_id}"))


def ack_event(agent: str, signal_id: str) -> NewEvent:
    """Return ``agent``'s acknowledgement of ``signal_id`` as an event (its id derived)."""
    signal_id = normalize_id(signal_id, field="signal")
    return NewEvent.of(
        SignalAcked(agent=agent, signal=signal_id),
        stream=f"agent:{agent}",
        actor=agent,
        id=ack_id(agent, signal_id),
        causation_id=signal_id,
    )


class Mailbox:
    """One agent's signals: send, read the inbox, acknowledge."""

    def __init__(self, agent: str, ledger: Ledger, engine: ProjectionEngine) -> None:
        if not isinstance(agent, str) or not agent:
            raise QueryError(f"agent must be a non-empty string, got {agent!r}")
        self.agent = agent
        self.ledger = ledger
        self.engine = engine

    def send(
        self, to: str, topic: str, body: str = "", *, correlation_id: str | None = None
    ) -> int:
        """Signal agent ``to`` (``"*"``: every other agent) about ``topic``; return the position.

        The ledger refuses an empty recipient or topic with an error naming the field.
        """
        event = NewEvent.of(
            SignalSent(to=to, topic=topic, body=body),
            stream=f"agent:{self.agent}",
            actor=self.agent,
            correlation_id=correlation_id,
        )
        return self.ledger.append(event)[0]

    def inbox(self, limit: int = 100) -> list[Signal]:
        """Return the signals waiting for this agent, oldest first."""
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            return inbox.pending(conn, self.agent, limit=limit)

    def ack(self, signal_id: str, effects: Sequence[NewEvent] = ()) -> int:
        """Take a signal out of this agent's inbox; return the acknowledgement's position.

        ``effects`` (events the handling of the signal produced) are appended in the same
        atomic batch, before the acknowledgement. Acknowledging a signal again without
        effects returns the first acknowledgement's position and appends nothing.

        Raises:
            UnknownSignalError: no ``signal.sent`` event has this id.
            SignalRecipientError: the signal is neither to this agent nor broadcast by another.
            SignalAckedError: effects were given for a signal already acknowledged (by a
                retry or a concurrent call); nothing was appended.
        """
        signal_id = normalize_id(signal_id, field="signal")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            found = inbox.signal(conn, signal_id)
            if found is None:
                raise UnknownSignalError(f"no signal with id {signal_id}")
            if not inbox.addressed_to(found, self.agent):
                raise SignalRecipientError(
                    f"signal {signal_id} is for {found.to!r} from {found.sender!r}, "
                    f"not for {self.agent!r}"
                )
            done = inbox.acknowledged(conn, found.position, self.agent)
        if done is not None and not effects:
            return done
        if done is not None:
            raise _acked(signal_id, done)
        try:
            return self.ledger.append([*effects, ack_event(self.agent, signal_id)])[-1]
        except IdempotencyError:  # acknowledged meanwhile, by a retry or a concurrent call
            if effects:
                raise _acked(signal_id, None) from None
            raise


def _acked(signal_id: str, position: int | None) -> SignalAckedError:
    where = "" if position is None else f" at position {position}"
    return SignalAckedError(
        f"signal {signal_id} was acknowledged already{where}; the effects given were not appended"
    )


class SharedMemo:
    """A session's shared memo: its agents post notes, addressed and typed, and keep plans.

    A note goes from an agent to an agent (``*``: everyone) as a type (``note``, ``request``,
    ``answer``, ``proposal``, ``critique``, ``reflection``). A plan is a goal and its steps
    with a status (``PROPOSED``, ``IN_PROGRESS``, ``DONE``, ``ABANDONED``) that agents move on
    by events (ADR 0066).
    """

    def __init__(self, session: str, ledger: Ledger, engine: ProjectionEngine) -> None:
        if not isinstance(session, str) or not session:
            raise QueryError(f"session must be a non-empty string, got {session!r}")
        self.session = check_key(session, "session")
        self.ledger = ledger
        self.engine = engine

    def post(self, agent: str, text: str, *, to: str = "*", type: MemoType = "note") -> int:
        """Post ``text`` from ``agent`` to ``to`` as ``type``; return the note's position."""
        return self.ledger.append(self.note(agent, text, to=to, type=type))[0]

    def note(self, agent: str, text: str, *, to: str = "*", type: MemoType = "note") -> NewEvent:
        """Return a note as an event, for a plan to commit (a plain note to everyone as before)."""
        payload: MemoPosted | MemoAddressed
        if to == "*" and type == "note":
            payload = MemoPosted(agent=agent, session=self.session, text=text)
        else:
            payload = MemoAddressed(agent=agent, session=self.session, text=text, to=to, type=type)
        return NewEvent.of(payload, stream=f"memo:{self.session}", actor=agent)

    def read(self, limit: int = memo.RING, *, to: str | None = None) -> list[Note]:
        """Return the memo's newest notes, oldest first (with ``to``: for that agent or all)."""
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            return memo.recent(conn, self.session, limit=limit, to=to)

    def propose(self, agent: str, goal: str, steps: Sequence[str], *, plan: str = "") -> str:
        """Propose a plan (status PROPOSED); return its id (a new one unless ``plan`` is given)."""
        plan = plan or f"plan-{uuid.uuid4().hex[:12]}"
        self.ledger.append(self.proposal(agent, goal, steps, plan=plan))
        return plan

    def proposal(self, agent: str, goal: str, steps: Sequence[str], *, plan: str) -> NewEvent:
        """Return a plan's proposal as an event, for a plan to commit."""
        payload = PlanProposed(
            plan=plan, agent=agent, session=self.session, goal=goal, steps=list(steps)
        )
        return NewEvent.of(payload, stream=f"plan:{plan}", actor=agent)

    def update(
        self, agent: str, plan: str, status: PlanStatus, *, done: int | None = None, note: str = ""
    ) -> int:
        """Move a plan on; refuse an unknown plan or a move its rules would ignore."""
        current = self.plan(plan)  # checks the plan's id
        if current is None:
            raise QueryError(f"no plan {plan!r} in session {self.session!r}")
        if current.status in ("DONE", "ABANDONED"):
            raise QueryError(f"plan {plan!r} is {current.status} already")
        if done is not None and not 0 <= done <= len(current.steps):
            raise QueryError(f"done must be in 0..{len(current.steps)}, got {done!r}")
        return self.ledger.append(self.progress(agent, plan, status, done=done, note=note))[0]

    @staticmethod
    def progress(
        agent: str, plan: str, status: PlanStatus, *, done: int | None = None, note: str = ""
    ) -> NewEvent:
        """Return a plan's update as an event, for a plan to commit."""
        payload = PlanUpdated(plan=plan, agent=agent, status=status, done=done, note=note)
        return NewEvent.of(payload, stream=f"plan:{plan}", actor=agent)

    def plan(self, plan: str) -> PlanState | None:
        """Return a plan of this session as it stands (None if there is none)."""
        check_key(plan, "plan")
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            found = memo.plan(conn, plan)
        return found if found is not None and found.session == self.session else None

    def plans(self) -> list[PlanState]:
        """Return this session's plans, in the order they were proposed."""
        self.engine.wait_for(self.ledger.head())
        with self.engine.read() as conn:
            return memo.plans(conn, self.session)
