"""Agents at work: runner cycles against the ledger's own append rate, and context frames.

- **Cycles**: 8 agents on one SQLite ledger, each spawning every step (a trigger that always
  holds) and committing one ``memory.observed`` on its own watched stream: the full cycle
  (versions, catch-up of the inbox, memo and salience projections, trigger, cognition on the
  pool, commit with expected versions). The reference is the limit a cycle cannot beat: the
  same ledger appending one event with an expected version per call, in the same run.
- **Context frames**: ``build_context`` on a store of 100,000 memories and 10,000 linked
  concepts (``--quick``: 5,000 and 500), texts drawn from a seeded Zipf vocabulary, 10% of
  items private, built by bulk appends. The query's vector is computed beforehand (hash
  vectors), so the figures exclude embedding; frames are not saved. The reference is memory
  recall (``k=10``, not recorded) on the same store for the same queries. The goal is a p50
  of at most 30 ms (ADR 0037); the note says whether it was met.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np

from engram.agents.context import build_context
from engram.agents.memory import AgentMemory
from engram.agents.runner import AgentSpec, Plan, Runner, Situation, ledger_moved
from engram.bench.common import Config, Figure, log, remove_tree
from engram.bench.recall_latency import Precomputed
from engram.ledger import NO_STREAM, Ledger, NewEvent, default_registry
from engram.ledger.catalog import ConceptLink, ConceptUpserted, MemoryObserved
from engram.projections.concepts import Concepts
from engram.projections.embedding import HashEmbedder
from engram.projections.engine import ProjectionEngine
from engram.projections.inbox import Inbox
from engram.projections.lexical import LexicalIndex
from engram.projections.memo import Memo
from engram.projections.rules import RuleBook
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher

AGENTS = 8
GOAL_P50_MS = 30.0
NOW = datetime(2026, 11, 1, tzinfo=UTC)
_BATCH = 1_000


def cycles(config: Config, *, steps: int | None = None) -> list[Figure]:
    """Runner cycles per second for 8 agents against single appends with an expectation."""
    steps = steps or (20 if config.quick else 100)
    figure = Figure(
        f"runner cycles, {AGENTS} agents, SQLite",
        "cycles/s",
        "ledger.append, 1 event with expected version",
        None,
    )
    for rep in range(config.repeat):
        root = f"{config.scratch}/cycles{rep}"
        try:
            with (
                Ledger.open(f"{root}.db", default_registry()) as ledger,
                ProjectionEngine(
                    ledger, f"{root}.store", [Inbox(), Memo(), SalienceIndex()]
                ) as engine,
            ):
                runner = Runner(ledger, engine, [_spec(f"a{i}") for i in range(AGENTS)])
                sides = [
                    (figure.engram_samples, partial(_steps, runner, steps)),
                    (figure.reference_samples, partial(_appends, ledger, steps * AGENTS)),
                ]
                for samples, work in sides if rep % 2 == 0 else sides[::-1]:
                    samples.append(_timed(work, steps * AGENTS))
        finally:
            remove_tree(f"{root}.store")
        log(f"  runner cycles: repetition {rep + 1}/{config.repeat} done")
    figure.note = (
        f"{steps} steps x {AGENTS} agents, one event per cycle on a watched stream, durable"
        " appends; the ratio is the share of the ledger's own single-append rate a cycle keeps"
    )
    return [figure]


def _spec(name: str) -> AgentSpec:
    stream = f"agent:{name}"

    def think(s: Situation) -> Plan:
        note = MemoryObserved(agent=name, text=f"cycle at head {s.head}", importance=3)
        return Plan(events=[NewEvent.of(note, stream=stream, actor=name)])

    return AgentSpec(name, think, trigger=ledger_moved, watch=[stream])


def _steps(runner: Runner, steps: int) -> None:
    for _ in range(steps):
        results = runner.step()
        if any(r.outcome != "committed" for r in results):
            raise RuntimeError(f"a cycle did not commit: {results}")


def _appends(ledger: Ledger, n: int) -> None:
    for i in range(n):
        stream = f"raw:{i % AGENTS}"
        version = ledger.versions([stream])[stream]
        note = MemoryObserved(agent="raw", text=f"append {i}", importance=3)
        ledger.append(NewEvent.of(note, stream=stream, actor="raw"), expect=version or NO_STREAM)


def _timed(work: Callable[[], None], count: int) -> float:
    started = time.perf_counter()
    work()
    return count / (time.perf_counter() - started)


def contexts(
    config: Config,
    *,
    memories: int | None = None,
    concepts: int | None = None,
    queries: int = 100,
) -> list[Figure]:
    """``build_context`` p50 and p99 against memory recall on one large store."""
    memories = memories or (5_000 if config.quick else 100_000)
    concepts = concepts or memories // 10
    rng = random.Random(config.seed + 37)
    words = _vocabulary(rng)
    root = f"{config.scratch}/contexts"
    embedder = HashEmbedder()
    projections = [
        SalienceIndex(),
        LexicalIndex(),
        SemanticIndex(embedder),
        Concepts(),
        Inbox(),
        RuleBook(),
    ]
    try:
        with (
            Ledger.open(f"{root}.db", default_registry(), durability="fast") as ledger,
            ProjectionEngine(ledger, f"{root}.store", projections) as engine,
        ):
            started = time.perf_counter()
            _fill(ledger, rng, words, memories, concepts, config.seed)
            log(f"  context frames: appended {ledger.head():,} events, catching up")
            engine.catch_up()
            log(f"  context frames: store built in {time.perf_counter() - started:.0f} s")
            asked = [_text(rng, words, 3, 8) for _ in range(queries)]
            vectors = dict(zip(asked, embedder.embed(asked), strict=True))
            searcher = VectorSearcher(
                f"{root}.store", embedder.dimension, str(embedder.fingerprint)
            )
            agent = AgentMemory(
                "a0", ledger, engine, embedder=Precomputed(embedder, vectors), searcher=searcher
            )
            return _measure(config, agent, asked, memories, concepts)
    finally:
        remove_tree(f"{root}.store")


def _measure(
    config: Config, agent: AgentMemory, asked: Sequence[str], memories: int, concepts: int
) -> list[Figure]:
    as_of = NOW + timedelta(days=1)
    for query in asked[:5]:  # warm: the vector index loaded, the tokenizer too
        build_context(agent, query, save=False, as_of=as_of)
        agent.recall(query, 10, as_of=as_of, record=False)
    name = f"{_count(memories)} memories + {_count(concepts)} concepts"
    p50 = Figure(f"build_context p50, {name}", "ms", "memory recall p50, same store", None)
    p99 = Figure(f"build_context p99, {name}", "ms", "memory recall p99, same store", None)
    for rep in range(config.repeat):
        ours: list[float] = []
        plain: list[float] = []
        for i, query in enumerate(asked):
            calls = [("context", ours), ("recall", plain)]
            for what, times in calls if (i + rep) % 2 == 0 else calls[::-1]:
                started = time.perf_counter()
                if what == "context":
                    build_context(agent, query, save=False, as_of=as_of)
                else:
                    agent.recall(query, 10, as_of=as_of, record=False)
                times.append(1000 * (time.perf_counter() - started))
        for figure, q in ((p50, 50), (p99, 99)):
            figure.engram_samples.append(float(np.percentile(ours, q)))
            figure.reference_samples.append(float(np.percentile(plain, q)))
        log(f"  context frames: repetition {rep + 1}/{config.repeat} done")
    met = "met" if (p50.engram or 0) <= GOAL_P50_MS else "MISSED"
    p50.note = (
        f"{len(asked)} queries, budget 2000, 2 hops, save=False, query vectors precomputed"
        f" (embedding excluded); goal p50 <= {GOAL_P50_MS:.0f} ms: {met}"
    )
    p99.note = p50.note
    return [p50, p99]


def _count(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(5_000)]


def _text(rng: random.Random, words: Sequence[str], low: int, high: int) -> str:
    # Zipf-like: low indexes are common words, high ones rare.
    n = rng.randint(low, high)
    return " ".join(words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] if rng.random()
                    < 0.5 else rng.choice(words) for _ in range(n))  # fmt: skip


def _fill(
    ledger: Ledger,
    rng: random.Random,
    words: Sequence[str],
    memories: int,
    concepts: int,
    seed: int,
) -> None:
    events: list[NewEvent] = []
    ids = [f"topic{i % 50}.area{i % 500}.c{i}" for i in range(concepts)]
    for i in range(memories):
        author = f"a{i % AGENTS}"
        note = MemoryObserved(
            agent=author,
            text=_text(rng, words, 8, 20),
            importance=rng.randint(1, 10),
            visibility="private" if i % 10 == 0 else "public",
        )
        at = NOW - timedelta(minutes=memories - i)
        uid = str(uuid.UUID(int=(seed << 40) | (i + 1)))
        events.append(NewEvent.of(note, stream=f"agent:{author}", actor=author, id=uid, at=at))
    for i, concept_id in enumerate(ids):
        author = f"a{i % AGENTS}"
        links = [
            ConceptLink(to=ids[rng.randrange(concepts)], rel="related", weight=rng.random())
            for _ in range(2)
        ]
        concept = ConceptUpserted(
            id=concept_id,
            type="concept",
            label=_text(rng, words, 2, 5),
            agent=author,
            payload={"notes": _text(rng, words, 5, 15)},
            links=links,
            visibility="private" if i % 10 == 0 else "public",
        )
        uid = str(uuid.UUID(int=(seed << 40) | (memories + i + 1)))
        events.append(
            NewEvent.of(concept, stream=f"concept:{concept_id}", actor=author, id=uid, at=NOW)
        )
    for start in range(0, len(events), _BATCH):
        ledger.append(events[start : start + _BATCH])
