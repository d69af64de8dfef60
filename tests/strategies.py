"""Hypothesis strategies shared by the property tests.

Everything generated here is *valid* input: payloads fit their kind's Struct, stream and actor
names pass the envelope checks, datetimes are aware. Invalid input is written out by hand in
the unit and contract tests, where each case names the error it expects.

Import with ``from strategies import ...`` (pytest puts ``tests/`` on ``sys.path`` because the
root conftest lives there).
"""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import msgspec
from hypothesis import strategies as st

from engram.ledger.catalog import (
    BootstrapCompleted,
    ConceptLink,
    ConceptUpserted,
    ConnectionCreated,
    ConnectionReweighted,
    ContextSaved,
    FileDiff,
    JobCompleted,
    MemoAddressed,
    MemoPosted,
    MemoryArchived,
    MemoryObserved,
    MemoryRecalled,
    MemoryReflected,
    MemorySuperseded,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
    PackImported,
    PlanProposed,
    PlanUpdated,
    RecalledItem,
    ReflectionRetracted,
    ScarArchived,
    ScarRecorded,
    ScarSources,
    SessionCleared,
    SessionItemPopped,
    SessionItemsAdded,
    SignalAcked,
    SignalSent,
    StoreDeleted,
    StorePut,
    SubjectForgotten,
    SuggestionDeferred,
    SuggestionJoined,
    SuggestionProposed,
    SuggestionReviewed,
    SuggestionWritten,
    SupersessionProposed,
    SupersessionReverted,
    SupersessionReviewed,
    VitalityMeasured,
)
from engram.ledger.catalog_adapters import json_text
from engram.ledger.events import NewEvent

# -- text ------------------------------------------------------------------------------------

#: Unicode text as agents write it: any letters, marks, numbers, punctuation, symbols and
#: spaces, plus emoji and a few control characters JSON must escape. Surrogates are excluded:
#: a Python str holding a lone surrogate cannot be encoded (see the codec unit tests).
unicode_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",)),
    min_size=1,
    max_size=60,
)

#: A ``Name`` field (1..512 characters); kept short so examples stay fast.
names = st.text(alphabet=st.characters(exclude_categories=("Cs",)), min_size=1, max_size=24)

_ident = st.text(alphabet=string.ascii_lowercase + string.digits + "_-", min_size=1, max_size=10)
_word = st.text(
    alphabet=st.characters(categories=("L", "N"), exclude_characters="\x00"),
    min_size=1,
    max_size=10,
)


def stream_names() -> st.SearchStrategy[str]:
    """Stream names like ``neuron:n_001`` or ``agent:inner``, some with non-ASCII letters."""
    return st.builds(
        "{}:{}".format,
        st.sampled_from(["neuron", "agent", "memory", "connection"]),
        st.one_of(_ident, _word),
    )


def stream_pools(min_size: int = 1, max_size: int = 4) -> st.SearchStrategy[list[str]]:
    """A small set of distinct streams, so that batches collide on streams often."""
    return st.lists(stream_names(), min_size=min_size, max_size=max_size, unique=True)


actors = st.sampled_from(["system", "agent:inner", "agent:outer", "job:decay", "ünïcödé"])

# -- time ------------------------------------------------------------------------------------

#: Offsets in whole minutes. msgspec encodes a datetime's UTC offset to the minute only, so a
#: payload datetime whose offset has seconds does not round-trip; that case is a separate,
#: explicit test (tests/unit/test_codec_and_kinds.py), not a property.
minute_offsets = st.integers(min_value=-(14 * 60), max_value=14 * 60).map(
    lambda m: UTC if m == 0 else timezone(timedelta(minutes=m))
)

#: Any fixed offset, seconds included: fine for the envelope ``at``, which is converted to UTC.
any_offsets = st.integers(min_value=-(86_399), max_value=86_399).map(
    lambda s: timezone(timedelta(seconds=s))
)


def aware_datetimes(
    timezones: st.SearchStrategy[Any] = minute_offsets,
    min_year: int = 1900,
    max_year: int = 2200,
) -> st.SearchStrategy[datetime]:
    """Timezone-aware datetimes, microseconds included."""
    return st.datetimes(
        min_value=datetime(min_year, 1, 2),
        max_value=datetime(max_year, 12, 30),
        timezones=timezones,
    )


# -- payloads --------------------------------------------------------------------------------

uint16 = st.integers(min_value=0, max_value=65535)
strengths = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)
connection_types = st.sampled_from(["feeds_into", "influences", "inhibits", "recalls", "triggers"])

PAYLOADS: dict[str, st.SearchStrategy[msgspec.Struct]] = {
    "neuron.created": st.builds(
        NeuronCreated,
        id=names,
        concept=unicode_text,
        type=st.sampled_from(["core", "contextual", "episodic", "semantic"]),
    ),
    "neuron.activated": st.builds(
        NeuronActivated, id=names, strength=strengths, cause=st.text(max_size=20)
    ),
    "neuron.archived": st.builds(NeuronArchived, id=names, reason=st.text(max_size=20)),
    "connection.created": st.builds(
        ConnectionCreated,
        source=names,
        target=names,
        type=connection_types,
        weight=uint16,
        reason=st.text(max_size=20),
    ),
    "connection.reweighted": st.builds(
        ConnectionReweighted,
        source=names,
        target=names,
        type=connection_types,
        weight=uint16,
        reason=st.text(max_size=20),
    ),
    "memory.observed": st.builds(
        MemoryObserved,
        agent=names,
        text=unicode_text,
        type=st.sampled_from(["observation", "plan", "thought"]),
        importance=st.none() | st.integers(min_value=1, max_value=10),
        visibility=st.sampled_from(["public", "private"]),
        source=st.none() | st.text(max_size=20),
        tags=st.lists(names, max_size=4),
    ),
    "memory.recalled": st.builds(
        MemoryRecalled,
        agent=names,
        query=unicode_text,
        items=st.lists(
            st.builds(
                RecalledItem,
                position=st.integers(min_value=1, max_value=2**63 - 1),
                score=st.floats(allow_nan=False, allow_infinity=False),
            ),
            max_size=4,
        ),
        # Aware only: the ledger refuses a naive datetime in any payload (ADR 0121).
        as_of=aware_datetimes(min_year=1, max_year=9999),
    ),
    "memory.archived": st.builds(
        MemoryArchived,
        agent=names,
        positions=st.lists(
            st.integers(min_value=1, max_value=2**63 - 1), min_size=1, max_size=4, unique=True
        ),
        reason=st.none() | st.text(max_size=20),
    ),
    "signal.sent": st.builds(SignalSent, to=names, topic=names, body=st.text(max_size=40)),
    "signal.acked": st.builds(SignalAcked, agent=names, signal=st.uuids().map(str)),
    "memo.posted": st.builds(MemoPosted, agent=names, session=names, text=unicode_text),
    "memo.addressed": st.builds(
        MemoAddressed,
        agent=names,
        session=names,
        text=unicode_text,
        to=names,
        type=st.sampled_from(["note", "request", "answer", "proposal", "critique", "reflection"]),
    ),
    "plan.proposed": st.builds(
        PlanProposed,
        plan=names,
        agent=names,
        session=names,
        goal=unicode_text,
        steps=st.lists(unicode_text, min_size=1, max_size=4),
    ),
    "plan.updated": st.builds(
        PlanUpdated,
        plan=names,
        agent=names,
        status=st.sampled_from(["PROPOSED", "IN_PROGRESS", "DONE", "ABANDONED"]),
        done=st.none() | st.integers(0, 64),
        note=st.text(max_size=20),
    ),
    "bootstrap.completed": st.builds(
        BootstrapCompleted,
        agent=names,
        neurons=st.lists(names, max_size=4),
        connections=st.integers(0, 100),
    ),
    "vitality.measured": st.builds(
        VitalityMeasured,
        at=aware_datetimes(),
        window_s=st.floats(min_value=1, max_value=1e7),
        neurons=st.integers(0, 10**6),
        active_neurons=st.integers(0, 10**6),
        mean_salience=st.floats(min_value=0, max_value=65535),
        connections=st.integers(0, 10**7),
        density=st.floats(min_value=0, max_value=1),
        inhibition=st.floats(min_value=0, max_value=1),
        growth=st.integers(0, 10**6),
    ),
    "concept.upserted": st.builds(
        ConceptUpserted,
        id=st.sampled_from(["a", "a.b", "skill.cpp.templates.sfinae", "x-y_z.0"]),
        type=st.sampled_from(["concept", "skill", "fact", "snippet", "persona"]),
        label=unicode_text,
        agent=names,
        payload=st.dictionaries(
            st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3
        ),
        links=st.lists(
            st.builds(
                ConceptLink,
                to=st.sampled_from(["a", "b.c"]),
                rel=names,
                weight=st.floats(min_value=0, max_value=1),
            ),
            max_size=3,
        ),
        visibility=st.sampled_from(["public", "private"]),
    ),
    "job.completed": st.builds(
        lambda job, start, hours, counts, ms, node: JobCompleted(
            job=job,
            window_start=start,
            window_end=start + timedelta(hours=hours),
            counts=counts,
            duration_ms=ms,
            host=node[0],
            pid=node[1],
        ),
        st.sampled_from(["sleep", "archive", "my-job_2"]),
        aware_datetimes(max_year=9000),
        st.integers(1, 48),
        st.dictionaries(
            st.sampled_from(["events", "candidates", "neurons"]), st.integers(0, 10**6)
        ),
        st.floats(min_value=0, max_value=1e7, allow_nan=False),
        st.one_of(st.just((None, None)), st.tuples(names, st.integers(1, 2**31 - 1))),
    ),
    "context.saved": st.builds(
        ContextSaved,
        agent=names,
        query=st.text(max_size=20),
        task=st.text(max_size=20),
        budget=st.integers(1, 10**6),
        tokens=st.integers(0, 10**6),
        tokenizer=st.sampled_from(["estimate", "cl100k_base"]),
        frames=st.dictionaries(
            st.sampled_from(["identity", "problem", "knowledge", "episodic", "scratchpad"]),
            st.text(max_size=20) | st.lists(st.text(max_size=8), max_size=3),
            max_size=4,
        ),
        items=st.lists(st.uuids().map(str), max_size=3),
        visibility=st.sampled_from(["public", "private"]),
    ),
    "subject.forgotten": st.builds(SubjectForgotten, subject=names, reason=st.text(max_size=20)),
    "reflection.retracted": st.builds(
        ReflectionRetracted,
        positions=st.lists(st.integers(1, 10**6), min_size=1, max_size=3, unique=True),
        subject=names,
        reason=st.text(max_size=20),
    ),
    "memory.superseded": st.builds(
        MemorySuperseded,
        agent=names,
        position=st.just(10**6),
        replaces=st.lists(st.integers(1, 10**6 - 1), min_size=1, max_size=3, unique=True),
        valid_from=st.none() | aware_datetimes(),
        method=st.sampled_from(["explicit", "detected", "reviewed"]),
        proposal=st.none() | st.integers(1, 10**6),
        similarity=st.none() | st.floats(0, 1),
    ),
    "supersession.proposed": st.builds(
        SupersessionProposed,
        agent=names,
        position=st.just(10**6),
        replaces=st.lists(st.integers(1, 10**6 - 1), min_size=1, max_size=3, unique=True),
        similarity=st.floats(0, 1),
    ),
    "supersession.reviewed": st.builds(
        SupersessionReviewed,
        proposal=st.integers(1, 10**6),
        decision=st.sampled_from(["applied", "refused"]),
        reviewer=names,
        note=st.text(max_size=20),
    ),
    "supersession.reverted": st.builds(
        SupersessionReverted,
        supersession=st.integers(1, 10**6),
        reviewer=names,
        note=st.text(max_size=20),
    ),
    "pack.imported": st.builds(
        PackImported,
        pack=names,
        name=names,
        version=st.sampled_from(["1", "1.0.0", "2026.11"]),
        checksum=st.binary(min_size=32, max_size=32).map(bytes.hex),
        nodes=st.integers(0, 10**6),
        appended=st.integers(0, 10**6),
    ),
}

#: ``(kind, payload Struct)`` for every catalog kind.
kind_payloads: st.SearchStrategy[tuple[str, msgspec.Struct]] = st.one_of(
    [strategy.map(lambda p, k=kind: (k, p)) for kind, strategy in PAYLOADS.items()]
)

# -- events ----------------------------------------------------------------------------------

event_ids = st.uuids().map(str)


@st.composite
def new_events(
    draw: st.DrawFn,
    streams: Sequence[str] | None = None,
    *,
    with_ids: bool = True,
    with_at: bool | None = None,
) -> NewEvent:
    """One valid NewEvent on one of ``streams`` (or any stream name).

    ``with_ids``: give every event an explicit id (needed to retry it). ``with_at``: always
    (True), never (False) or sometimes (None) give an explicit, non-UTC aware ``at``.
    """
    stream = draw(st.sampled_from(list(streams)) if streams else stream_names())
    kind, payload = draw(kind_payloads)
    give_at = draw(st.booleans()) if with_at is None else with_at
    return NewEvent(
        stream=stream,
        kind=kind,
        payload=payload,
        actor=draw(actors),
        id=draw(event_ids) if with_ids else None,
        at=draw(aware_datetimes(any_offsets)) if give_at else None,
        causation_id=draw(st.none() | event_ids),
        correlation_id=draw(st.none() | event_ids),
    )


@st.composite
def partitions(draw: st.DrawFn, n: int, max_part: int | None = None) -> list[int]:
    """Positive batch sizes summing to ``n`` (empty when ``n`` is 0)."""
    sizes: list[int] = []
    remaining = n
    while remaining:
        size = draw(st.integers(min_value=1, max_value=min(remaining, max_part or remaining)))
        sizes.append(size)
        remaining -= size
    return sizes


def split(items: Sequence[Any], sizes: Sequence[int]) -> list[list[Any]]:
    """Cut ``items`` into consecutive runs of the given sizes."""
    out, start = [], 0
    for size in sizes:
        out.append(list(items[start : start + size]))
        start += size
    assert start == len(items), "sizes must sum to len(items)"
    return out


@st.composite
def event_sequences(
    draw: st.DrawFn, max_events: int = 40, *, with_at: bool | None = None
) -> list[NewEvent]:
    """Up to ``max_events`` valid events with unique ids over a small pool of streams."""
    pool = draw(stream_pools())
    events = draw(
        st.lists(
            new_events(pool, with_at=with_at),
            min_size=1,
            max_size=max_events,
            unique_by=lambda e: e.id,
        )
    )
    return events


@st.composite
def batch_sequences(
    draw: st.DrawFn, max_events: int = 40, max_batch: int = 8
) -> list[list[NewEvent]]:
    """Events over a small pool of streams, cut into batches of random sizes."""
    events = draw(event_sequences(max_events))
    return split(events, draw(partitions(len(events), max_batch)))


# -- projection histories --------------------------------------------------------------------
#
# Histories for the neuron graph and the salience index: a few neurons, so that events collide
# on them, including events the graph's anomaly rules ignore (activation before creation,
# connections to unknown neurons, duplicate creations, reweights of missing connections), with
# event times that sometimes go back. Every event has an explicit id and ``at``; appended in
# order to a fresh ledger, event ``i`` of a history lands at position ``i + 1``.

#: The first event time of every generated history (whole hours keep hand arithmetic easy).
HISTORY_START = datetime(2030, 1, 1, tzinfo=UTC)

neuron_ids = st.sampled_from(["n0", "n1", "n2", "n3", "n4", "n5"])
neuron_types = st.sampled_from(["core", "contextual", "episodic", "semantic"])
activation_strengths = st.one_of(
    st.floats(min_value=0.0, max_value=2.0, allow_nan=False),
    st.sampled_from([0.0, 1.0, 1e6]),
)

GRAPH_KINDS = (
    "neuron.created",
    "neuron.activated",
    "neuron.archived",
    "connection.created",
    "connection.reweighted",
)
MEMORY_KINDS = ("memory.observed", "memory.recalled")


def neuron_created(
    neuron: str, at: datetime, *, concept: str = "concept", type: str = "contextual"
) -> NewEvent:
    """A ``neuron.created`` on the neuron's stream."""
    return NewEvent(
        stream=f"neuron:{neuron}",
        kind="neuron.created",
        payload=NeuronCreated(id=neuron, concept=concept, type=type),
        at=at,
    )


def neuron_activated(
    neuron: str, at: datetime, strength: float = 1.0, *, actor: str = "system", cause: str = ""
) -> NewEvent:
    """A ``neuron.activated`` on the neuron's stream."""
    return NewEvent(
        stream=f"neuron:{neuron}",
        kind="neuron.activated",
        payload=NeuronActivated(id=neuron, strength=strength, cause=cause),
        actor=actor,
        at=at,
    )


def neuron_archived(neuron: str, at: datetime, reason: str = "") -> NewEvent:
    """A ``neuron.archived`` on the neuron's stream."""
    return NewEvent(
        stream=f"neuron:{neuron}",
        kind="neuron.archived",
        payload=NeuronArchived(id=neuron, reason=reason),
        at=at,
    )


def connection_created(
    source: str, target: str, weight: int, at: datetime, *, type: str = "feeds_into"
) -> NewEvent:
    """A ``connection.created`` on the source neuron's stream."""
    return NewEvent(
        stream=f"neuron:{source}",
        kind="connection.created",
        payload=ConnectionCreated(source=source, target=target, type=type, weight=weight),
        at=at,
    )


def connection_reweighted(
    source: str, target: str, weight: int, at: datetime, *, type: str = "feeds_into"
) -> NewEvent:
    """A ``connection.reweighted`` on the source neuron's stream."""
    return NewEvent(
        stream=f"neuron:{source}",
        kind="connection.reweighted",
        payload=ConnectionReweighted(source=source, target=target, type=type, weight=weight),
        at=at,
    )


def memory_observed(
    text: str, at: datetime, importance: int | None = None, *, agent: str = "inner"
) -> NewEvent:
    """A ``memory.observed`` on the agent's stream."""
    return NewEvent(
        stream=f"agent:{agent}",
        kind="memory.observed",
        payload=MemoryObserved(agent=agent, text=text, importance=importance),
        at=at,
    )


def memory_recalled(positions: Sequence[int], at: datetime, *, agent: str = "inner") -> NewEvent:
    """A ``memory.recalled`` serving the memories at ``positions``."""
    return NewEvent(
        stream=f"agent:{agent}",
        kind="memory.recalled",
        payload=MemoryRecalled(
            agent=agent,
            query="what happened?",
            items=[RecalledItem(position=p, score=1.0) for p in positions],
            as_of=at,
        ),
        at=at,
    )


def memory_reflected(
    evidence: Sequence[str],
    at: datetime,
    *,
    depth: int = 1,
    agent: str = "inner",
    text: str = "the parser keeps failing",
    visibility: str = "public",
) -> NewEvent:
    """A ``memory.reflected`` citing the events whose ids are ``evidence``."""
    return NewEvent(
        stream=f"agent:{agent}",
        kind="memory.reflected",
        payload=MemoryReflected(
            agent=agent,
            text=text,
            evidence=list(evidence),
            depth=depth,
            question="what keeps failing?",
            visibility=visibility,
        ),
        at=at,
    )


@st.composite
def graph_histories(
    draw: st.DrawFn,
    max_events: int = 40,
    *,
    memories: bool = True,
    recall_neuron_positions: bool = True,
) -> list[NewEvent]:
    """A history of graph (and, with ``memories``, memory) events with explicit ids and times.

    Times mostly move forward by 0-30 hours, sometimes back (events may be older than an
    item's last update). Recalls serve earlier memories, unknown positions and, with
    ``recall_neuron_positions``, positions of neuron events (which are not memories).
    """
    kinds = GRAPH_KINDS + (MEMORY_KINDS if memories else ())
    n = draw(st.integers(min_value=1, max_value=max_events))
    offset = 0  # minutes after HISTORY_START
    events: list[NewEvent] = []
    memory_positions: list[int] = []
    neuron_positions: list[int] = []
    for i in range(n):
        step = draw(st.one_of(st.integers(0, 30 * 60), st.integers(-10 * 60, 0)))
        offset = max(0, offset + step)
        at = HISTORY_START + timedelta(minutes=offset)
        kind = draw(st.sampled_from(kinds))
        actor = draw(actors)
        if kind == "neuron.created":
            e = neuron_created(draw(neuron_ids), at, type=draw(neuron_types))
        elif kind == "neuron.activated":
            e = neuron_activated(draw(neuron_ids), at, draw(activation_strengths))
        elif kind == "neuron.archived":
            e = neuron_archived(draw(neuron_ids), at)
        elif kind in ("connection.created", "connection.reweighted"):
            build = connection_created if kind == "connection.created" else connection_reweighted
            e = build(
                draw(neuron_ids), draw(neuron_ids), draw(uint16), at, type=draw(connection_types)
            )
        elif kind == "memory.observed":
            importance = draw(st.none() | st.integers(min_value=1, max_value=10))
            e = memory_observed(f"memory {i}", at, importance)
        else:
            pool = [*memory_positions, 10**9]
            if recall_neuron_positions:
                pool += neuron_positions
            e = memory_recalled(draw(st.lists(st.sampled_from(pool), max_size=4)), at)
        if kind == "memory.observed":
            memory_positions.append(i + 1)
        elif kind.startswith("neuron."):
            neuron_positions.append(i + 1)
        events.append(msgspec.structs.replace(e, id=draw(event_ids), actor=actor))
    return events


@st.composite
def cyclic_graphs(
    draw: st.DrawFn, max_neurons: int = 8, max_edges: int = 24
) -> tuple[list[str], list[tuple[str, str, str, int]]]:
    """Neuron ids and random connections among them: cycles, self-loops and inhibits likely."""
    count = draw(st.integers(min_value=1, max_value=max_neurons))
    ids = [f"v{i}" for i in range(count)]
    edges = draw(
        st.lists(
            st.tuples(st.sampled_from(ids), st.sampled_from(ids), connection_types, uint16),
            max_size=max_edges,
            unique_by=lambda e: (e[0], e[1], e[2]),
        )
    )
    return ids, edges


# -- histories for the projection contract ---------------------------------------------------
#
# Histories of every kind a default projection consumes, valid and edge-case alike: a few
# neurons and agents so that events collide, activations and archives of neurons that do not
# exist (yet, or any more), duplicate creations and connections, reweights of missing
# connections, self-loops, recalls and archives naming memories, archived memories, neuron
# events, future positions and positions past any ledger, texts past the indexes' cap, times
# that go back and times given in other offsets. The same builder runs on Hypothesis draws
# (:func:`projection_histories`) and on a seeded ``random.Random`` (:func:`seeded_history`),
# for the crash tests that need one large history outside Hypothesis. Event ``i`` of a
# history appended in order to a fresh ledger lands at position ``i + 1``.

#: The lessons loop's kinds (scars, suggestions and their lifecycle).
LESSON_KINDS = (
    "scar.recorded",
    "scar.archived",
    "suggestion.proposed",
    "suggestion.reviewed",
    "suggestion.deferred",
    "suggestion.written",
    "suggestion.joined",
)

#: The kinds :func:`projection_histories` generates (every catalog kind).
HISTORY_KINDS = (
    "neuron.created",
    "neuron.activated",
    "neuron.archived",
    "connection.created",
    "connection.reweighted",
    "memory.observed",
    "memory.recalled",
    "memory.archived",
    "signal.sent",
    "signal.acked",
    "memo.posted",
    "memo.addressed",
    "plan.proposed",
    "plan.updated",
    "concept.upserted",
    "scar.recorded",
    "scar.archived",
    "memory.reflected",
    "suggestion.proposed",
    "suggestion.reviewed",
    "suggestion.deferred",
    "suggestion.written",
    "suggestion.joined",
    "job.completed",
    *("memory.superseded", "supersession.proposed", "supersession.reviewed"),
    "supersession.reverted",
)

_HISTORY_AGENTS = ("inner", "outer", "ünï")
_HISTORY_TEXTS = (
    "the build failed on the parser",
    "the parser build passed after the fix",
    "plan: rewrite the tokenizer",
    "Ünïcödé café naïve — ✓ 漢字 😀",
    'tabs\tand\nnewlines "quoted" \\ back',
    "a",
    "word " * 3300,  # past the 16,000-character cap of the lexical and semantic indexes
)
_CONCEPT_IDS = ("skill", "skill.cpp", "skill.cpp.sfinae", "skill.cpp-x", "fact.q3", "fact")
_HISTORY_STRENGTHS = (0.0, 0.25, 0.5, 1.0, 1.75, 1e6)
_HISTORY_WEIGHTS = (0, 1, 32768, 65535)
_HISTORY_OFFSETS = (0, 0, 0, 330, -480)  # minutes; most events in UTC
_MAX_POSITION = 2**63 - 1


class _Choices:
    """Where a history builder's choices come from: Hypothesis draws or a seeded Random."""

    def __init__(self, pick: Any, integer: Any) -> None:
        self.pick = pick  # pick(sequence) -> one element
        self.integer = integer  # integer(low, high) -> int in [low, high]


def _history(
    c: _Choices, n: int, salt: int, kinds: Sequence[str], neurons: int, long_texts: bool
) -> list[NewEvent]:
    pool = tuple(f"n{i}" for i in range(neurons))
    texts = _HISTORY_TEXTS if long_texts else _HISTORY_TEXTS[:-1]
    events: list[NewEvent] = []
    memories: list[int] = []  # positions of memory.observed events
    scars: list[int] = []  # positions of scar.recorded events
    reflected: list[int] = []  # positions of memory.reflected events
    others: list[int] = []  # positions of every other event
    signals: list[int] = []  # positions of signal.sent events

    def id_at(position: int) -> str:
        return _history_id(salt, position)

    minutes = 0
    for i in range(n):
        position = i + 1
        minutes = max(0, minutes + c.integer(-600, 1800))
        at = HISTORY_START + timedelta(minutes=minutes)
        offset = c.pick(_HISTORY_OFFSETS)
        if offset:
            at = at.astimezone(timezone(timedelta(minutes=offset)))
        kind = c.pick(kinds)
        payload: msgspec.Struct
        stream = f"agent:{c.pick(_HISTORY_AGENTS)}"
        if kind in ("neuron.created", "neuron.activated", "neuron.archived"):
            neuron = c.pick(pool)
            stream = f"neuron:{neuron}"
            if kind == "neuron.created":
                payload = NeuronCreated(
                    id=neuron,
                    concept=c.pick(_HISTORY_TEXTS[:6]),
                    type=c.pick(("core", "contextual", "episodic", "semantic")),
                )
            elif kind == "neuron.activated":
                strength = c.pick((*_HISTORY_STRENGTHS, None))
                if strength is None:
                    strength = c.integer(0, 2000) / 1000
                payload = NeuronActivated(id=neuron, strength=strength, cause=c.pick(("", "cue")))
            else:
                payload = NeuronArchived(id=neuron, reason=c.pick(("", "retired")))
        elif kind in ("connection.created", "connection.reweighted"):
            source, target = c.pick(pool), c.pick(pool)
            stream = f"neuron:{source}"
            weight = c.pick((*_HISTORY_WEIGHTS, None))
            struct = ConnectionCreated if kind == "connection.created" else ConnectionReweighted
            payload = struct(
                source=source,
                target=target,
                type=c.pick(("feeds_into", "inhibits", "triggers")),
                weight=c.integer(0, 65535) if weight is None else weight,
            )
        elif kind == "memory.observed":
            agent = c.pick(_HISTORY_AGENTS)
            stream = f"agent:{agent}"
            importance = c.integer(0, 10)
            payload = MemoryObserved(
                agent=agent,
                text=c.pick(texts),
                type=c.pick(("observation", "plan", "thought")),
                importance=importance or None,
                visibility=c.pick(("public", "private")),
                source=c.pick((None, "tool")),
                tags=c.pick(([], ["x"], ["x", "ÿ"])),
                # A revision says what it replaces in its own event (ADR 0121).
                supersedes=[c.pick(memories[-6:])]
                if memories and c.integer(0, 4) == 0
                else msgspec.UNSET,
            )
        elif kind in ("memory.recalled", "memory.archived", "scar.archived"):
            # Recalls serve memories and scars; each archive may name the other's items too.
            positions = [
                *memories[-6:],
                *scars[-4:],
                *others[-2:],
                position + c.integer(1, 3),  # a future position
                10**9,
                _MAX_POSITION,
            ]
            named = [c.pick(positions) for _ in range(c.integer(0 if "recalled" in kind else 1, 4))]
            if kind == "scar.archived":
                payload = ScarArchived(
                    positions=list(dict.fromkeys(named)), reason=c.pick((None, "fixed"))
                )
            elif kind == "memory.recalled":  # a recall may serve one memory twice
                payload = MemoryRecalled(
                    agent=c.pick(_HISTORY_AGENTS),
                    query=c.pick(_HISTORY_TEXTS[:6]),
                    items=[RecalledItem(position=p, score=c.integer(-5, 5) / 4) for p in named],
                    as_of=at,
                )
            else:
                payload = MemoryArchived(
                    agent=c.pick(_HISTORY_AGENTS),
                    positions=list(dict.fromkeys(named)),
                    reason=c.pick((None, "stale")),
                )
        elif kind == "scar.recorded":
            agent = c.pick(_HISTORY_AGENTS)
            stream = f"agent:{agent}"
            payload = ScarRecorded(
                agent=agent,
                kind=c.pick(("failure", "victory")),
                what=c.pick(texts),
                lesson=c.pick(_HISTORY_TEXTS[:6]),
                importance=c.integer(1, 10),
                learnable=c.pick((True, False)),
                visibility=c.pick(("public", "private")),
                sources=c.pick((ScarSources(), ScarSources(task="t-1", file="a.py", agent=agent))),
                tags=c.pick(([], ["x"])),
            )
        elif kind == "signal.sent":
            payload = SignalSent(to=c.pick(("*", *_HISTORY_AGENTS)), topic="ping", body="")
            signals.append(position)
        elif kind == "signal.acked":  # of a signal, twice, before it is sent, or of none
            target = c.pick((*signals[-3:], position + c.integer(1, 3), 10**9))
            payload = SignalAcked(agent=c.pick(_HISTORY_AGENTS), signal=id_at(target))
        elif kind == "concept.upserted":  # few ids: replacements, links to missing ids
            concept = c.pick(_CONCEPT_IDS)
            payload = ConceptUpserted(
                id=concept,
                type=c.pick(("concept", "skill", "fact")),
                label=c.pick(texts[:6]),
                agent=c.pick(_HISTORY_AGENTS),
                payload=c.pick(({}, {"code": "x = 1"}, {"n": [1, 2.5, None]})),
                links=[
                    ConceptLink(to=c.pick(_CONCEPT_IDS), rel=c.pick(("uses", "is_a")), weight=w)
                    for w in c.pick(((), (0.5,), (0.0, 1.0)))
                ],
                visibility=c.pick(("public", "private")),
            )
            stream = f"concept:{concept}"
        elif kind == "memo.posted":
            payload = MemoPosted(
                agent=c.pick(_HISTORY_AGENTS), session=c.pick(("s1", "s2")), text=c.pick(texts)
            )
        elif kind == "memo.addressed":
            payload = MemoAddressed(
                agent=c.pick(_HISTORY_AGENTS),
                session=c.pick(("s1", "s2")),
                text=c.pick(texts),
                to=c.pick(("*", *_HISTORY_AGENTS)),
                type=c.pick(("note", "request", "answer", "reflection")),
            )
        elif kind == "plan.proposed":  # few ids: second proposals of one plan
            payload = PlanProposed(
                plan=c.pick(("p1", "p2")),
                agent=c.pick(_HISTORY_AGENTS),
                session=c.pick(("s1", "s2")),
                goal=c.pick(texts),
                steps=c.pick((["one"], ["one", "two", "three"])),
            )
        elif kind == "plan.updated":  # of unknown plans, backwards, past the steps
            payload = PlanUpdated(
                plan=c.pick(("p1", "p2", "p3")),
                agent=c.pick(_HISTORY_AGENTS),
                status=c.pick(("PROPOSED", "IN_PROGRESS", "DONE", "ABANDONED")),
                done=c.pick((None, 0, 1, 3)),
                note=c.pick(("", "moving")),
            )
        elif kind == "memory.reflected":
            # Evidence: memories, reflections, other kinds, a future id, an id no event has,
            # one id twice; depths consistent with it or not.
            cited = [*memories[-4:], *reflected[-2:], *others[-1:], position + c.integer(1, 3)]
            ids = [_history_id(salt, c.pick(cited)) for _ in range(c.integer(1, 3))]
            ids += [c.pick((str(uuid.UUID(int=2**128 - position)), ids[0]))][: c.integer(0, 1)]
            payload = MemoryReflected(
                agent=c.pick(_HISTORY_AGENTS),
                text=c.pick(texts),
                evidence=ids,
                depth=c.integer(1, 3),
                question=c.pick(("", "what matters?")),
                importance=c.integer(0, 10) or None,
                visibility=c.pick(("public", "private")),
            )
        elif kind in LESSON_KINDS:
            stream, payload = _lesson(c, kind, position, salt, events, memories + others)
        elif kind in SUPERSESSION_KINDS:
            payload = _supersession(c, kind, position, at, memories, others)
        elif kind == "job.completed":
            payload = JobCompleted(
                job=c.pick(("sleep", "archive")),
                window_start=at - timedelta(hours=1),
                window_end=at,
                trigger=c.pick(("timer", "hand")),
                counts={"events": c.integer(0, 5)},
                duration_ms=float(c.integer(0, 900)),
            )
        else:
            raise ValueError(f"histories do not generate kind {kind!r}: add it to _history")
        kept = {
            "memory.observed": memories,
            "scar.recorded": scars,
            "memory.reflected": reflected,
        }.get(kind, others)
        kept.append(position)
        events.append(
            NewEvent(
                stream=stream,
                kind=kind,
                payload=payload,
                actor=c.pick(("system", "agent:inner", "ünïcödé")),
                id=id_at(position),
                at=at,
            )
        )
    return events


#: The supersession kinds (ADR 0052).
SUPERSESSION_KINDS = (
    "memory.superseded",
    "supersession.proposed",
    "supersession.reviewed",
    "supersession.reverted",
)


def _supersession(
    c: _Choices,
    kind: str,
    position: int,
    at: datetime,
    memories: Sequence[int],
    others: Sequence[int],
) -> msgspec.Struct:
    """A supersession event over earlier memories, legal or not: replacing a non-memory or a
    memory replaced already, reviews and reverts of anything (a second review, a future
    position)."""
    agent = c.pick(_HISTORY_AGENTS)
    if kind in ("memory.superseded", "supersession.proposed"):
        new = c.pick((*memories[-3:], *others[-1:], position + c.integer(1, 3), 10**9))
        earlier = sorted({p for p in (*memories[-6:], *others[-2:]) if p < new}) or [1]
        if new <= earlier[0]:
            new = earlier[-1] + 1
        replaces = list(dict.fromkeys(c.pick(earlier) for _ in range(c.integer(1, 3))))
        if kind == "memory.superseded":
            return MemorySuperseded(
                agent=agent,
                position=new,
                replaces=replaces,
                valid_from=c.pick((None, at - timedelta(days=c.integer(0, 40)))),
                method=c.pick(("explicit", "detected")),
                similarity=c.pick((None, 0.75)),
            )
        return SupersessionProposed(
            agent=agent, position=new, replaces=replaces, similarity=c.integer(0, 100) / 100
        )
    target = c.pick((*others[-4:], *memories[-1:], position + c.integer(1, 3), 10**9))
    if kind == "supersession.reviewed":
        return SupersessionReviewed(
            proposal=target, decision=c.pick(("applied", "refused")), reviewer="lead"
        )
    return SupersessionReverted(supersession=target, reviewer="lead", note=c.pick(("", "no")))


def _history_id(salt: int, position: int) -> str:
    """The id of event ``position`` of a history built with ``salt``."""
    return str(uuid.UUID(int=(salt << 64) | position))


_LESSON_TEXTS = (
    "Run the parser tests before every release.",
    "always pin the tokenizer version\nand say why",  # a rule text over two lines
    "Ünïcödé — ✓ 漢字",
)
_DESTINATIONS = ("rules", "rules", "instructions_file", "settings", "notes_inbox", "skill", "task")
_UNKNOWN_ID = "ffffffff-ffff-4fff-bfff-ffffffffffff"


def _lesson(
    c: _Choices,
    kind: str,
    position: int,
    salt: int,
    events: Sequence[NewEvent],
    earlier: Sequence[int],
) -> tuple[str, msgspec.Struct]:
    """A suggestion event naming earlier scars and suggestions, legal or not (scars
    themselves come from :func:`_history`'s own branches).

    Reviews hit pending suggestions, reviewed ones (a second review, an applied refusal),
    unknown ids, and ``modified`` comes without a text at times; proposals, deferrals and
    writes name unknown ids too.
    """
    scars = [e.id for e in events if e.kind == "scar.recorded"] or [_UNKNOWN_ID]
    proposals = [e.id for e in events if e.kind == "suggestion.proposed"] or [_UNKNOWN_ID]
    some_scars = [c.pick([*scars[-4:], _UNKNOWN_ID]) for _ in range(c.integer(1, 3))]
    if kind == "suggestion.proposed":
        diff = c.pick((None, FileDiff(path="AGENTS.md", before="", after="- pin it\n")))
        return "suggestion:" + str(uuid.UUID(int=(salt << 64) | position)), SuggestionProposed(
            scars=some_scars,
            destination=c.pick(_DESTINATIONS),
            text=c.pick(_LESSON_TEXTS),
            diff=diff,
            drafter=c.pick(("offline", "http:stub")),
        )
    target = c.pick([*proposals[-3:], _UNKNOWN_ID])
    if kind == "suggestion.reviewed":
        decision = c.pick(("applied", "refused", "modified"))
        text = (
            c.pick((None, "", "  ", "Pin the tokenizer.", "two\nlines"))
            if decision != "applied"
            else None
        )
        return "suggestion:" + target, SuggestionReviewed(
            suggestion=target,
            decision=decision,
            reviewer=c.pick(("ana", "bo")),
            note=c.pick(("", "ok")),
            text=text,
            always=c.pick((False, False, True)),
            destination=c.pick((None, None, "rules", "notes_inbox")),
        )
    if kind == "suggestion.joined":
        return "suggestion:" + target, SuggestionJoined(
            suggestion=target,
            scars=list(dict.fromkeys(some_scars)),
            drafter=c.pick(("offline", "http:stub")),
        )
    if kind == "suggestion.deferred":
        return "learning", SuggestionDeferred(
            scars=list(dict.fromkeys(some_scars)),
            reason=c.pick(("model unavailable: HTTP 503", "answer out of shape")),
            drafter=c.pick(("offline", "http:stub")),
        )
    return "suggestion:" + target, SuggestionWritten(
        suggestion=target,
        destination=c.pick(_DESTINATIONS),
        path=c.pick(("AGENTS.md", "notes/inbox/x.md")),
        mode=c.pick(("appended", "replaced", "created")),
        sha256="0" * 63 + str(c.integer(0, 9)),
    )


@st.composite
def projection_histories(
    draw: st.DrawFn, max_events: int = 40, kinds: Sequence[str] = HISTORY_KINDS
) -> list[NewEvent]:
    """A history of events of ``kinds`` (default: every catalog kind), edge cases included."""
    choices = _Choices(
        lambda options: draw(st.sampled_from(options)),
        lambda low, high: draw(st.integers(low, high)),
    )
    n = draw(st.integers(min_value=1, max_value=max_events))
    salt = draw(st.integers(min_value=1, max_value=2**63), label="id salt")
    return _history(choices, n, salt, tuple(kinds), 5, True)


def seeded_history(
    seed: int,
    n: int,
    kinds: Sequence[str] = HISTORY_KINDS,
    *,
    neurons: int = 5,
    salt: int = 1,
    long_texts: bool = True,
) -> list[NewEvent]:
    """The same kind of history as :func:`projection_histories`, from a seeded Random.

    ``neurons``: how many neuron ids events share. ``long_texts``: include texts past the
    indexes' cap (embedding one takes tens of milliseconds).
    """
    rng = random.Random(seed)
    choices = _Choices(rng.choice, rng.randint)
    return _history(choices, n, salt, tuple(kinds), neurons, long_texts)


# -- raw input for engram append ----------------------------------------------------------------

_VALID_LINE = (
    b'{"stream": "agent:fuzz", "kind": "signal.sent", "payload": {"to": "b", "topic": "t"}}'
)


@st.composite
def jsonl_lines(draw: st.DrawFn) -> bytes:
    """Return one line of ``engram append`` input: valid, damaged, or arbitrary bytes."""
    choice = draw(st.sampled_from(["valid", "binary", "spliced", "deep", "json", "escape"]))
    if choice == "valid":
        return _VALID_LINE
    if choice == "binary":
        return draw(st.binary(max_size=200)).replace(b"\n", b" ")
    if choice == "spliced":  # a valid line with arbitrary bytes put somewhere in it
        at = draw(st.integers(0, len(_VALID_LINE)))
        junk = draw(st.binary(min_size=1, max_size=8)).replace(b"\n", b" ")
        return _VALID_LINE[:at] + junk + _VALID_LINE[at:]
    if choice == "deep":
        depth = draw(st.sampled_from([10, 500, 990, 5_000, 100_000]))
        inner = b"[" * depth + b"]" * depth
        return (
            b'{"stream": "agent:fuzz", "kind": "signal.sent", "payload": {"to": "b", "topic": '
            + inner
            + b"}}"
        )
    if choice == "escape":  # \\u escapes, lone surrogates included
        code = draw(st.integers(0, 0xFFFF))
        return _VALID_LINE.replace(b'"t"', f'"\\u{code:04x}"'.encode())
    value = draw(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda kids: (
                st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
            ),
            max_leaves=20,
        )
    )
    return msgspec.json.encode({"stream": "agent:fuzz", "kind": "signal.sent", "payload": value})


# -- personal data, for the scrubber and the lessons loop ----------------------------------------

_ALNUM = string.ascii_letters + string.digits
_B64URL = _ALNUM + "-_"


def _chars(alphabet: str, low: int, high: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=low, max_size=high)


emails = st.builds(
    "{}{}@{}.{}".format,
    _chars(string.ascii_lowercase + string.digits, 1, 1),
    _chars(string.ascii_lowercase + string.digits + "._+-", 0, 15).filter(
        lambda s: not s.endswith((".", "-", "+", "_"))
    ),
    _chars(string.ascii_lowercase + string.digits, 1, 12),
    st.sampled_from(["com", "org", "co.uk", "io", "de", "example"]),
)


def _digits(n: int) -> st.SearchStrategy[str]:
    return _chars(string.digits, n, n)


phones = st.one_of(
    st.builds("+1 {}-{}-{}".format, _digits(3), _digits(3), _digits(4)),
    st.builds("({}) {}-{}".format, _digits(3), _digits(3), _digits(4)),
    st.builds("{}.{}.{}".format, _digits(3), _digits(3), _digits(4)),
    st.builds("+44 {} {} {}".format, _digits(2), _digits(4), _digits(4)),
    st.builds("+{}{}".format, st.sampled_from(["33", "49", "81", "91"]), _digits(10)),
    st.builds("+33 6 {} {} {} {}".format, _digits(2), _digits(2), _digits(2), _digits(2)),
)

api_keys = st.one_of(
    st.builds("sk-{}".format, _chars(_ALNUM, 20, 48)),
    st.builds("sk-proj-{}".format, _chars(_ALNUM + "_-", 20, 48)),
    st.builds("ghp_{}".format, _chars(_ALNUM, 36, 36)),
    st.builds("github_pat_{}".format, _chars(_ALNUM + "_", 22, 60)),
    st.builds("AKIA{}".format, _chars(string.ascii_uppercase + string.digits, 16, 16)),
    st.builds("xoxb-{}".format, _chars(_ALNUM + "-", 10, 40)),
    st.builds(
        "eyJ{}.eyJ{}.{}".format,
        _chars(_B64URL, 8, 30),
        _chars(_B64URL, 8, 60),
        _chars(_B64URL, 8, 43),
    ),
)

ipv4s = st.ip_addresses(v=4).map(str)
ipv6s = (
    st.ip_addresses(v=6)
    .flatmap(lambda a: st.sampled_from([a.compressed, a.exploded]))
    .filter(lambda s: "." not in s and any(c.isdigit() for c in s))  # see engram.agents.privacy
)


def _luhn_complete(body: str) -> str:
    total = 0
    for i, char in enumerate(reversed(body)):
        d = int(char)
        if i % 2 == 0:  # doubled: these sit at odd positions once the check digit is added
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


@st.composite
def card_numbers(draw: st.DrawFn) -> str:
    """A Luhn-valid card number of 16 digits, grouped by 4 with spaces, dashes or nothing."""
    number = _luhn_complete(draw(st.sampled_from("3456")) + draw(_digits(14)))
    separator = draw(st.sampled_from([" ", "-", ""]))
    return separator.join(number[i : i + 4] for i in range(0, 16, 4))


#: ``(category, value)``: one piece of personal data of each kind the scrubber removes.
personal_data = st.one_of(
    emails.map(lambda v: ("email", v)),
    phones.map(lambda v: ("phone", v)),
    api_keys.map(lambda v: ("key", v)),
    ipv4s.map(lambda v: ("ip", v)),
    ipv6s.map(lambda v: ("ip", v)),
    card_numbers().map(lambda v: ("card", v)),
)

_FILLER = st.sampled_from(
    ["the deploy failed", "ask", "contact", "see", "retry with", "ünïcödé ✓", "on 2026-11-23", ""]
)
_AROUND = st.sampled_from(
    [("", ""), (" ", " "), ("(", ")"), ('"', '"'), (" ", "."), (" ", ","), ("<", ">")]
)


@st.composite
def texts_with_personal_data(draw: st.DrawFn, max_items: int = 3) -> tuple[str, list[str]]:
    """A text holding 1..``max_items`` pieces of personal data, and the pieces."""
    items = draw(st.lists(personal_data, min_size=1, max_size=max_items))
    parts = []
    for _, value in items:
        left, right = draw(_AROUND)
        parts.append(f"{draw(_FILLER)} {left}{value}{right} {draw(_FILLER)}")
    return " ".join(parts).strip() or "x", [value for _, value in items]


# -- jobs: consolidation and archival ----------------------------------------------------------

_JOB_NEURONS = [f"n{i}" for i in range(8)]
_JOB_TYPES = ["feeds_into", "influences", "recalls"]


@st.composite
def weighted_graphs(draw: st.DrawFn) -> dict[tuple[str, str, str], int]:
    """Connections (source, target, type) -> uint16 weight over a few neurons, loops included."""
    keys = draw(
        st.lists(
            st.tuples(
                st.sampled_from(_JOB_NEURONS),
                st.sampled_from(_JOB_NEURONS),
                st.sampled_from(_JOB_TYPES),
            ),
            unique=True,
            max_size=30,
        )
    )
    return {key: draw(st.integers(0, 65535)) for key in keys}


#: One step of a neuron history: (hours after the start, action, neuron, strength).
job_steps = st.lists(
    st.tuples(
        st.integers(0, 96),
        st.sampled_from(["create", "activate", "activate", "activate", "archive", "connect"]),
        st.sampled_from(_JOB_NEURONS[:6]),
        st.sampled_from([0.5, 1.0, 3.0]),
    ),
    min_size=1,
    max_size=40,
)
# -- lexical pruning: small corpora where a few words are in most rows ---------------------------

#: Two "speakers" in every other row, common words in most rows, rare words in a few.
_COMMON = ["caroline", "melanie", "the", "did", "when"]
_RARE = ["sunrise", "paint", "lgbtq", "hiking", "failed", "failing", "pottery", "camping"]


@st.composite
def lexical_corpora(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """Draw (agent, visibility, text) rows: a speaker's name in each, common and rare words."""
    size = draw(st.integers(min_value=60, max_value=120))
    rows = []
    for i in range(size):
        words = [_COMMON[i % 2], *draw(st.lists(st.sampled_from(_COMMON[2:]), max_size=3))]
        words += draw(st.lists(st.sampled_from(_RARE), max_size=2 if i % 7 == 0 else 0))
        agent = draw(st.sampled_from(["ana", "bob"]))
        visibility = draw(st.sampled_from(["public", "public", "private"]))
        rows.append((agent, visibility, " ".join(words)))
    return rows


lexical_queries = st.lists(st.sampled_from(_COMMON + _RARE), min_size=1, max_size=6).map(" ".join)


# -- context frames: small worlds of memories and linked concepts, several agents ----------------

_CONTEXT_WORDS = ["deploy", "gcc", "template", "rollback", "cache", "latency", "sfinae", "build"]
_CONTEXT_IDS = ["skill.cpp", "skill.cpp.sfinae", "skill.cpp.concepts", "fact.deploy", "tool.gcc"]


@st.composite
def context_worlds(draw: st.DrawFn) -> list[tuple[str, str, str, str]]:
    """Draw (what, agent, visibility, text) rows: ``what`` is ``memory`` or a concept id.

    Concepts link to each other (few ids: replacements and links both ways); texts repeat a
    few words so queries find them.
    """
    rows = []
    for _ in range(draw(st.integers(min_value=1, max_value=14))):
        what = draw(st.sampled_from(["memory", "memory", *_CONTEXT_IDS]))
        agent = draw(st.sampled_from(["ana", "bob"]))
        visibility = draw(st.sampled_from(["public", "private"]))
        words = draw(st.lists(st.sampled_from(_CONTEXT_WORDS), min_size=1, max_size=30))
        rows.append((what, agent, visibility, " ".join(words)))
    return rows


context_queries = st.lists(st.sampled_from(_CONTEXT_WORDS), min_size=1, max_size=4).map(" ".join)
# -- forgetting (ADR 0039): histories where subjects are forgotten ------------------------------

#: The catalog kinds plus ``subject.forgotten`` and ``reflection.retracted`` (ADR 0110),
#: which every history generates from now on.
HISTORY_KINDS = (*HISTORY_KINDS, "subject.forgotten", "reflection.retracted")
_CATALOG_KINDS = HISTORY_KINDS[:-2]
_ADDED = ("subject.forgotten", "reflection.retracted")
_history_without_forgetting = _history


def _history(  # type: ignore[no-redef]  # wraps the builder above; appended to keep merges easy
    c: _Choices, n: int, salt: int, kinds: Sequence[str], neurons: int, long_texts: bool
) -> list[NewEvent]:
    """A history as above, where some events become ``subject.forgotten`` of an author.

    Histories of the default kinds (bound before ``subject.forgotten`` was appended to them)
    and any asking for it get one in about every 25 events, keeping the replaced event's id
    and time, so positions, ids and references stay as they were.
    """
    forgets = "subject.forgotten" in kinds or tuple(kinds) == _CATALOG_KINDS
    retracts = "reflection.retracted" in kinds or tuple(kinds) == _CATALOG_KINDS
    rest = tuple(k for k in kinds if k not in _ADDED) or ("memory.observed",)
    events = _history_without_forgetting(c, n, salt, rest, neurons, long_texts)
    if not forgets and not retracts:
        return events
    out: list[NewEvent] = []
    for e in events:
        if retracts and out and c.integer(0, 39) == 0:  # retract earlier items (ADR 0110)
            earlier = sorted({c.integer(1, len(out)) for _ in range(c.integer(1, 3))})
            e = NewEvent(
                stream="retractions",
                kind="reflection.retracted",
                payload=ReflectionRetracted(positions=earlier, subject=c.pick(_HISTORY_AGENTS)),
                actor="system",
                id=e.id,
                at=e.at,
            )
        elif forgets and c.integer(0, 24) == 0:
            subject = c.pick((*_HISTORY_AGENTS, "nobody"))
            e = NewEvent(
                stream=f"subject:{subject}",
                kind="subject.forgotten",
                payload=SubjectForgotten(subject=subject, reason=c.pick(("", "erasure request"))),
                actor="system",
                id=e.id,
                at=e.at,
            )
        out.append(e)
    return out


# -- framework adapters (ADR 0062, 0063): store items and session items -------------------------

#: The adapters' kinds, which every default history generates from now on.
ADAPTER_KINDS = (
    "store.put",
    "store.deleted",
    "session.items_added",
    "session.item_popped",
    "session.cleared",
)
_KINDS_BEFORE_ADAPTERS = HISTORY_KINDS
HISTORY_KINDS = (*HISTORY_KINDS, *ADAPTER_KINDS)
_history_without_adapters = _history
_STORE_NAMESPACES = (["a"], ["a", "b"], ["a", "b", "c"], ["ü 記"], ["b"])
_STORE_KEYS = ("k1", "k2", "", "ü")
_STORE_VALUES = (
    {},
    {"x": 1},
    {"text": "the parser build passed", "n": 2.5},
    {"nested": {"a": [1, None, "ü"]}, "flag": True},
)
_SESSION_ITEMS = (
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": [{"type": "output_text", "text": "Ünï ✓"}]},
    {"type": "function_call", "name": "f", "arguments": "{}"},
)


def _history(  # type: ignore[no-redef]  # wraps the builders above; appended to keep merges easy
    c: _Choices, n: int, salt: int, kinds: Sequence[str], neurons: int, long_texts: bool
) -> list[NewEvent]:
    """A history as above, where some events become the adapters' store and session kinds.

    Default histories and any asking for those kinds get one in about every 5 events (every
    event when only those are asked for), keeping the replaced event's id and time. Deletes
    name keys never put, pops name adds of other sessions, future positions and missing
    indexes, clears come before any add: the edge cases.
    """
    default = tuple(kinds) in (_CATALOG_KINDS, _KINDS_BEFORE_ADAPTERS, HISTORY_KINDS)
    wanted = tuple(k for k in kinds if k in ADAPTER_KINDS) or (ADAPTER_KINDS if default else ())
    rest = tuple(k for k in kinds if k not in ADAPTER_KINDS)
    events = _history_without_adapters(c, n, salt, rest or ("memo.posted",), neurons, long_texts)
    if not wanted:
        return events
    adds: list[int] = []
    out = []
    for i, e in enumerate(events):
        if not rest or c.integer(0, 4) == 0:
            payload: msgspec.Struct
            kind = c.pick(wanted)
            stream = f"session:{c.pick(('s1', 's2'))}"
            if kind in ("store.put", "store.deleted"):
                namespace, key = c.pick(_STORE_NAMESPACES), c.pick(_STORE_KEYS)
                stream = "store:" + msgspec.json.encode([namespace, key]).decode()
                value = c.pick(_STORE_VALUES)
                payload = (
                    StorePut(
                        namespace=namespace,
                        key=key,
                        # As written now (JSON text, sealed) or before (the object itself).
                        value=c.pick((value, json_text(value))),
                        index=c.pick((None, [], ["text"])),
                    )
                    if kind == "store.put"
                    else StoreDeleted(namespace=namespace, key=key)
                )
            elif kind == "session.items_added":
                items = [c.pick(_SESSION_ITEMS) for _ in range(c.integer(1, 3))]
                payload = SessionItemsAdded(
                    session=stream.removeprefix("session:"),
                    items=c.pick((items, json_text(items))),
                    agent=c.pick((None, e.actor)),
                )
                adds.append(i + 1)
            elif kind == "session.item_popped":
                payload = SessionItemPopped(
                    session=stream.removeprefix("session:"),
                    position=c.pick((*adds[-3:], i + 1 + c.integer(1, 3), 10**9)),
                    index=c.integer(0, 3),
                )
            else:
                payload = SessionCleared(session=stream.removeprefix("session:"))
            e = NewEvent(stream=stream, kind=kind, payload=payload, actor=e.actor, id=e.id, at=e.at)
        out.append(e)
    return out
