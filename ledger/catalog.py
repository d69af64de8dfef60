"""engram's own event kinds: the vocabulary every layer reads and writes (ADR 0007).

Payloads are frozen msgspec Structs that refuse unknown fields. Weights and saliences are
uint16 (0..65535). Each payload Struct declares its kind's stored name as ``__kind__``
(ADR 0020). Their base and shared field types are in ``payload``; the learning loop's kinds
(scars, suggestions, closed projects) are in ``catalog_learning``, the framework adapters'
in ``catalog_adapters`` and supersession's in ``catalog_supersession``, all gathered here in
:data:`KINDS`. Add a kind only with its schema number; change a kind's
shape only by bumping its schema and registering an upcaster.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, ClassVar, Literal

import msgspec

# Re-exported ("as"): every kind is imported from the catalog, wherever it is declared.
from engram.ledger.catalog_adapters import SessionCleared as SessionCleared
from engram.ledger.catalog_adapters import SessionItemPopped as SessionItemPopped
from engram.ledger.catalog_adapters import SessionItemsAdded as SessionItemsAdded
from engram.ledger.catalog_adapters import StoreDeleted as StoreDeleted
from engram.ledger.catalog_adapters import StorePut as StorePut
from engram.ledger.catalog_learning import Decision as Decision
from engram.ledger.catalog_learning import Destination as Destination
from engram.ledger.catalog_learning import FileDiff as FileDiff
from engram.ledger.catalog_learning import ProjectClosed as ProjectClosed
from engram.ledger.catalog_learning import ScarArchived as ScarArchived
from engram.ledger.catalog_learning import ScarKind as ScarKind
from engram.ledger.catalog_learning import ScarRecorded as ScarRecorded
from engram.ledger.catalog_learning import ScarSources as ScarSources
from engram.ledger.catalog_learning import SuggestionDeferred as SuggestionDeferred
from engram.ledger.catalog_learning import SuggestionJoined as SuggestionJoined
from engram.ledger.catalog_learning import SuggestionProposed as SuggestionProposed
from engram.ledger.catalog_learning import SuggestionReviewed as SuggestionReviewed
from engram.ledger.catalog_learning import SuggestionWritten as SuggestionWritten
from engram.ledger.catalog_learning import WriteMode as WriteMode
from engram.ledger.catalog_supersession import MemorySuperseded as MemorySuperseded
from engram.ledger.catalog_supersession import SupersessionProposed as SupersessionProposed
from engram.ledger.catalog_supersession import SupersessionReverted as SupersessionReverted
from engram.ledger.catalog_supersession import SupersessionReviewed as SupersessionReviewed
from engram.ledger.kinds import KindRegistry
from engram.ledger.payload import (
    EventId,
    Importance,
    Payload,
    Position,
    Strength,
    UInt16,
    check_distinct,
)
from engram.ledger.payload import Name as Name
from engram.ledger.payload import Text as Text
from engram.ledger.payload import Visibility as Visibility

#: The framework adapters' kinds (ADR 0062, ADR 0063), in ``catalog_adapters``.
ADAPTER_KINDS = (StorePut, StoreDeleted, SessionItemsAdded, SessionItemPopped, SessionCleared)
#: Supersession's kinds (ADR 0052), in ``catalog_supersession``.
SUPERSESSION_KINDS = (
    MemorySuperseded,
    SupersessionProposed,
    SupersessionReviewed,
    SupersessionReverted,
)

NeuronType = Literal["core", "contextual", "episodic", "semantic"]
ConnectionType = Literal["feeds_into", "influences", "inhibits", "recalls", "triggers"]
MemoryType = Literal["observation", "plan", "thought"]
#: A concept's path-like id: dot-separated lowercase segments (``skill.cpp.templates.sfinae``).
ConceptId = Annotated[
    str, msgspec.Meta(pattern=r"^[a-z0-9_-]+(\.[a-z0-9_-]+)*$", min_length=1, max_length=512)
]
ConceptType = Literal[
    "concept", "skill", "fact", "snippet", "pattern", "episode", "tool", "persona", "task"
]


class NeuronCreated(Payload, frozen=True):
    """A neuron came into being."""

    __kind__: ClassVar[str] = "neuron.created"

    id: Name
    concept: Text
    type: NeuronType


class NeuronActivated(Payload, frozen=True):
    """A neuron fired with some strength, for a cause (a stimulus, a propagation wave)."""

    __kind__: ClassVar[str] = "neuron.activated"

    id: Name
    strength: Strength
    cause: str = ""


class NeuronArchived(Payload, frozen=True):
    """A neuron was retired from the live network."""

    __kind__: ClassVar[str] = "neuron.archived"

    id: Name
    reason: str = ""


class ConnectionCreated(Payload, frozen=True):
    """A typed, weighted connection between two neurons was made."""

    __kind__: ClassVar[str] = "connection.created"

    source: Name
    target: Name
    type: ConnectionType
    weight: UInt16
    reason: str = ""


class ConnectionReweighted(Payload, frozen=True):
    """A connection's weight changed."""

    __kind__: ClassVar[str] = "connection.reweighted"

    source: Name
    target: Name
    type: ConnectionType
    weight: UInt16
    reason: str = ""


class MemoryObserved(Payload, frozen=True):
    """An agent recorded an observation, a plan or a thought.

    ``supersedes`` names earlier memories of the agent this one replaces, said as it is
    observed, no longer true from ``valid_from`` (unset: from this memory's own time): one
    event, so a process killed while it is written leaves both or neither (ADR 0121). Both
    are unset in most memories, and an unset field is not written.
    """

    __kind__: ClassVar[str] = "memory.observed"

    agent: Name
    text: Text
    type: MemoryType = "observation"
    importance: Importance | None = None
    visibility: Visibility = "public"
    source: str | None = None
    tags: list[Name] = []
    supersedes: Annotated[list[Position], msgspec.Meta(min_length=1)] | msgspec.UnsetType = (
        msgspec.UNSET
    )
    valid_from: datetime | msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.supersedes is not msgspec.UNSET:
            check_distinct(self.supersedes, "supersedes")
        elif self.valid_from is not msgspec.UNSET:
            raise ValueError("valid_from says when what it supersedes stopped being true")


class RecalledItem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One item served by a recall, with its score."""

    position: Annotated[int, msgspec.Meta(ge=1)]
    score: float


class MemoryRecalled(Payload, frozen=True):
    """An agent recalled memories for a query; the served items are audited."""

    __kind__: ClassVar[str] = "memory.recalled"

    agent: Name
    query: Text
    items: list[RecalledItem]
    as_of: datetime


class MemoryArchived(Payload, frozen=True):
    """An agent retired some of its memories (``memory.observed`` positions) from every index."""

    __kind__: ClassVar[str] = "memory.archived"

    agent: Name
    positions: Annotated[list[Position], msgspec.Meta(min_length=1)]
    reason: str | None = None

    def __post_init__(self) -> None:
        check_distinct(self.positions, "positions")


class SignalSent(Payload, frozen=True):
    """An agent signalled another agent (or ``*`` for everyone) through the ledger."""

    __kind__: ClassVar[str] = "signal.sent"

    to: Name
    topic: Name
    body: str = ""


class MemoryReflected(Payload, frozen=True):
    """An agent drew a belief from memories; the evidence names the events it rests on.

    ``depth`` is 1 + the largest depth among its evidence (an observation has depth 0).
    """

    __kind__: ClassVar[str] = "memory.reflected"

    agent: Name
    text: Text
    evidence: Annotated[list[EventId], msgspec.Meta(min_length=1)]
    depth: Annotated[int, msgspec.Meta(ge=1)]
    question: str = ""
    importance: Importance | None = None
    visibility: Visibility = "public"


class SignalAcked(Payload, frozen=True):
    """An agent took a signal (a ``signal.sent`` event id) out of its inbox."""

    __kind__: ClassVar[str] = "signal.acked"

    agent: Name
    signal: EventId


class MemoPosted(Payload, frozen=True):
    """An agent posted a note to its session's shared memo."""

    __kind__: ClassVar[str] = "memo.posted"

    agent: Name
    session: Name
    text: Text


class ConceptLink(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A typed, weighted link from a concept to another."""

    to: ConceptId
    rel: Name
    weight: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.5


class ConceptUpserted(Payload, frozen=True):
    """A concept of the knowledge tree was created or replaced (the newest upsert wins).

    ``payload`` is free JSON (a snippet's code, a fact's source); ``links`` replace the
    concept's previous links.
    """

    __kind__: ClassVar[str] = "concept.upserted"

    id: ConceptId
    type: ConceptType
    label: Text
    agent: Name
    payload: dict[str, object] = {}
    links: list[ConceptLink] = []
    visibility: Visibility = "public"


class VitalityMeasured(Payload, frozen=True):
    """The neuron graph's vital signs as of ``at``, kept so the series is SQL over the ledger."""

    __kind__: ClassVar[str] = "vitality.measured"

    at: datetime
    window_s: Annotated[float, msgspec.Meta(gt=0)]
    neurons: Annotated[int, msgspec.Meta(ge=0)]
    active_neurons: Annotated[int, msgspec.Meta(ge=0)]
    mean_salience: Annotated[float, msgspec.Meta(ge=0)]
    connections: Annotated[int, msgspec.Meta(ge=0)]
    density: Annotated[float, msgspec.Meta(ge=0)]
    inhibition: Annotated[float, msgspec.Meta(ge=0, le=1)]
    growth: Annotated[int, msgspec.Meta(ge=0)]


JobName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,63}$")]
JobTrigger = Literal["timer", "actions", "hand", "saturation"]


class JobCompleted(Payload, frozen=True):
    """A scheduled job finished one window; its effects were appended with it, atomically.

    ``window_start`` (inclusive) and ``window_end`` (exclusive) bound the events the job
    considered; it read the projections as known at ``window_end``. The event's own time is
    when it was appended. ``counts`` are the job's own figures (candidates, events appended,
    ...); ``duration_ms`` is the wall time it took; ``host`` and ``pid`` name the node that ran
    it (schema 2; None in events written at schema 1).
    """

    __kind__: ClassVar[str] = "job.completed"

    job: JobName
    window_start: datetime
    window_end: datetime
    trigger: JobTrigger = "timer"
    counts: dict[Annotated[str, msgspec.Meta(min_length=1, max_length=64)], int] = {}
    duration_ms: Annotated[float, msgspec.Meta(ge=0.0)] = 0.0
    host: Name | None = None
    pid: Annotated[int, msgspec.Meta(ge=1)] | None = None

    def __post_init__(self) -> None:
        if self.window_start.tzinfo is None or self.window_end.tzinfo is None:
            raise ValueError("window_start and window_end must carry a time zone")
        if self.window_end <= self.window_start:
            raise ValueError(
                f"window_end {self.window_end.isoformat()} must come after window_start "
                f"{self.window_start.isoformat()}"
            )


class ContextSaved(Payload, frozen=True):
    """The context frames an agent was shown (or wrote back), so what it saw is auditable.

    ``frames`` maps a frame name (identity, problem, knowledge, episodic, constraints,
    scratchpad) to its content as kept in the ledger: an entry that names a ledger position
    (``pos``) carries no copy of that event's text, and the problem's query and task are this
    record's ``query`` and ``task``, personal fields of its agent (ADR 0045). What an agent
    wrote itself (a scratchpad, a plan: anything that quotes no position) is ``notes``, the
    JSON of those frames, a personal field too (ADR 0046). ``items`` are the
    ids of the events behind the frames' items, so every item resolves to the ledger.
    ``tokens`` is the frames' size as counted by ``tokenizer`` (a real tokenizer's name, or
    ``estimate``) against ``budget``. ``session`` names the work session it was saved for.
    """

    __kind__: ClassVar[str] = "context.saved"

    agent: Name
    budget: Annotated[int, msgspec.Meta(ge=1)]
    tokens: Annotated[int, msgspec.Meta(ge=0)]
    frames: dict[Annotated[str, msgspec.Meta(min_length=1, max_length=64)], object]
    query: str = ""
    task: str = ""
    tokenizer: Name = "estimate"
    items: list[EventId] = []
    visibility: Visibility = "private"
    notes: str = ""
    session: str = ""  # the work session it was saved for, so it can be asked for again


class SubjectForgotten(Payload, frozen=True):
    """A subject's key was destroyed: the personal fields encrypted under it are unreadable.

    The ledger keeps the ciphertext (its hash chain still verifies); projections rebuild
    without the content and audits show ``[forgotten]``.
    """

    __kind__: ClassVar[str] = "subject.forgotten"

    subject: Name
    reason: str = ""


class ReflectionRetracted(Payload, frozen=True):
    """Reflections drawn from a forgotten subject's memories were withdrawn from every index.

    A reflection is its author's, sealed under the author's key, but its text is made of
    what its evidence said: forgetting the evidence's subject retracts it (and the
    reflections drawn from it), so recall, context frames and rebuilds stop serving it
    (ADR 0110). ``subject`` names whose forgetting caused it.
    """

    __kind__: ClassVar[str] = "reflection.retracted"

    positions: Annotated[list[Position], msgspec.Meta(min_length=1)]
    subject: Name
    reason: str = ""

    def __post_init__(self) -> None:
        check_distinct(self.positions, "positions")


class PackImported(Payload, frozen=True):
    """A knowledge pack was imported: which pack, at which version, and how many nodes."""

    __kind__: ClassVar[str] = "pack.imported"

    pack: Name
    name: Name
    version: Name
    checksum: Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
    nodes: Annotated[int, msgspec.Meta(ge=0)]
    appended: Annotated[int, msgspec.Meta(ge=0)]


# -- the brain's cycle (ADR 0066): bootstrap, the addressed memo, plans ---------------------

MemoType = Literal["note", "request", "answer", "proposal", "critique", "reflection"]
PlanStatus = Literal["PROPOSED", "IN_PROGRESS", "DONE", "ABANDONED"]


class BootstrapCompleted(Payload, frozen=True):
    """The bootstrap agent grew the first neurons and ran its cycle: the brain is warm."""

    __kind__: ClassVar[str] = "bootstrap.completed"

    agent: Name
    neurons: list[Name] = []
    connections: Annotated[int, msgspec.Meta(ge=0)] = 0


class MemoAddressed(Payload, frozen=True):
    """An agent posted to its session's memo, to an agent (``*``: everyone), as a type."""

    __kind__: ClassVar[str] = "memo.addressed"

    agent: Name
    session: Name
    text: Text
    to: Name = "*"
    type: MemoType = "note"


class PlanProposed(Payload, frozen=True):
    """An agent proposed a plan: a goal and its steps, in a session (status PROPOSED)."""

    __kind__: ClassVar[str] = "plan.proposed"

    plan: Name
    agent: Name
    session: Name
    goal: Text
    steps: Annotated[list[Text], msgspec.Meta(min_length=1, max_length=64)]


class PlanUpdated(Payload, frozen=True):
    """A plan moved on: a new status, and the steps done so far (``done``: how many)."""

    __kind__: ClassVar[str] = "plan.updated"

    plan: Name
    agent: Name
    status: PlanStatus
    done: Annotated[int, msgspec.Meta(ge=0, le=64)] | None = None
    note: str = ""


KINDS: dict[str, type[msgspec.Struct]] = {
    payload.__kind__: payload
    for payload in (
        NeuronCreated,
        NeuronActivated,
        NeuronArchived,
        ConnectionCreated,
        ConnectionReweighted,
        MemoryObserved,
        MemoryRecalled,
        MemoryArchived,
        SignalSent,
        ScarRecorded,
        ScarArchived,
        SuggestionProposed,
        SuggestionReviewed,
        MemoryReflected,
        SignalAcked,
        MemoPosted,
        ConceptUpserted,
        VitalityMeasured,
        SuggestionDeferred,
        SuggestionWritten,
        SuggestionJoined,
        JobCompleted,
        ContextSaved,
        SubjectForgotten,
        PackImported,
        *ADAPTER_KINDS,
        BootstrapCompleted,
        MemoAddressed,
        PlanProposed,
        PlanUpdated,
        *SUPERSESSION_KINDS,
        ProjectClosed,
        ReflectionRetracted,
    )
}


#: The kinds whose payload changed shape: their current schema (every other kind is at 1).
SCHEMAS: dict[str, int] = {
    "job.completed": 2,
    "memory.superseded": 2,
    "supersession.proposed": 2,
    # Their value and items became JSON text, to be sealed (catalog_adapters); schema 1's
    # object and list still read as they are, so an engram that knows only schema 1 refuses
    # the new events by their schema instead of reading them as damaged.
    "store.put": 2,
    "session.items_added": 2,
}


def _job_completed_1(payload: dict[str, object]) -> dict[str, object]:
    """Upcast a schema 1 ``job.completed``: the node that ran it was not recorded."""
    return {**payload, "host": None, "pid": None}


def _without_reason_1(payload: dict[str, object]) -> dict[str, object]:
    """Upcast a schema 1 supersession or proposal: why it was found was not recorded."""
    return {"reason": "", **payload}


def _as_written_1(payload: dict[str, object]) -> dict[str, object]:
    """Upcast a schema 1 store value or session items: the object or list reads as it is."""
    return payload


def default_registry() -> KindRegistry:
    """Return a new registry holding engram's own kinds, ready for user kinds."""
    registry = KindRegistry()
    for name, payload_type in KINDS.items():
        registry.register(name, payload_type, schema=SCHEMAS.get(name, 1))
    registry.register_upcaster("job.completed", 1, _job_completed_1)
    registry.register_upcaster("memory.superseded", 1, _without_reason_1)
    registry.register_upcaster("supersession.proposed", 1, _without_reason_1)
    registry.register_upcaster("store.put", 1, _as_written_1)
    registry.register_upcaster("session.items_added", 1, _as_written_1)
    return registry
