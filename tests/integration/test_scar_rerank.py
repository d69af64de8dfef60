"""Scar recall's re-rank against a plain reference: every scar scored by the formula, sorted.

The reference embeds every live scar the agent may see, scores it by
``clip(cosine, 0, 1) × (1 + importance/10) × exp(−age_days/365)`` as of the query and takes
the k best; recall over-fetches from the index and must serve exactly those, with the same
scores: on 10,000 generated scars, and as a property on small random sets.
"""

from __future__ import annotations

import math
import os
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engram
from engram.ledger import NewEvent
from engram.ledger.catalog import ScarArchived, ScarRecorded
from engram.runtime import Memory

NOW = datetime(2026, 11, 1, tzinfo=UTC)
WORDS = [
    "deploy",
    "migration",
    "table",
    "lock",
    "timeout",
    "cache",
    "stale",
    "key",
    "expire",
    "queue",
    "overflow",
    "depth",
    "alert",
    "backup",
    "exit",
    "code",
    "job",
    "canary",
    "build",
    "release",
    "parser",
    "crash",
    "fuzz",
    "token",
    "leak",
    "vault",
    "log",
    "mask",
    "index",
    "rebuild",
    "disk",
    "full",
    "retry",
    "backoff",
    "network",
    "partition",
    "leader",
    "election",
    "schema",
    "upcast",
    "memory",
    "pressure",
    "swap",
    "latency",
    "spike",
    "budget",
    "test",
    "flaky",
    "seed",
    "order",
    "race",
    "condition",
]


def scar_events(rng: random.Random, n: int, salt: int) -> list[NewEvent]:
    """``n`` scars by three agents (some private), of random words, importance and age."""
    events = []
    for i in range(n):
        agent = rng.choice(("alice", "bob", "carol"))
        payload = ScarRecorded(
            agent=agent,
            kind=rng.choice(("failure", "failure", "victory")),
            what=" ".join(rng.choices(WORDS, k=rng.randint(4, 10))),
            lesson=" ".join(rng.choices(WORDS, k=rng.randint(3, 8))),
            importance=rng.randint(1, 10),
            visibility=rng.choice(("public", "public", "private")),
        )
        at = NOW - timedelta(days=rng.uniform(0, 1500))
        events.append(
            NewEvent(
                stream=f"agent:{agent}",
                kind="scar.recorded",
                payload=payload,
                id=str(uuid.UUID(int=(salt << 64) | (i + 1))),
                at=at,
            )
        )
    return events


def reference(
    memory: Memory, agent: str, kind: str, query: str, k: int, as_of: datetime
) -> list[tuple[int, float]]:
    """Every (position, score), best first, by the formula over the scars ``agent`` may see
    that were recorded, and not archived, as of ``as_of``."""
    archived: set[int] = set()
    scars = []
    for e in memory.ledger.read(kinds=["scar.recorded", "scar.archived"]):
        if e.kind == "scar.archived":
            if e.at <= as_of:  # an archival after as_of had not happened yet
                archived.update(e.payload.positions)
        elif e.payload.kind == kind and (
            e.payload.visibility == "public" or e.payload.agent == agent
        ):
            scars.append(e)
    scars = [e for e in scars if e.position not in archived and e.at <= as_of]
    vectors = memory.embedder.embed([f"{e.payload.what}\n{e.payload.lesson}" for e in scars])
    q = memory.embedder.embed([query])[0]
    scored = []
    for e, v in zip(scars, vectors, strict=True):
        similarity = min(max(float(np.dot(v, q)), 0.0), 1.0)
        age = max((as_of - e.at).total_seconds() / 86_400, 0.0)
        score = similarity * (1 + e.payload.importance / 10) * math.exp(-age / 365)
        scored.append((e.position, score))
    scored.sort(key=lambda ps: (-ps[1], -ps[0]))
    return scored


def served(
    memory: Memory, agent: str, scope: str, query: str, k: int, as_of: datetime
) -> list[tuple[int, float]]:
    result = memory.agent(agent).recall(query, k, scope=scope, as_of=as_of, record=False)
    return [(r.event.position, r.score) for r in result.items]


def assert_same(got: list[tuple[int, float]], want: list[tuple[int, float]], k: int) -> None:
    """``got`` is the reference's top ``k``: the same scores, and every item that beats the
    k-th by more than float noise (FAISS's float32 dot against numpy's) is in it."""
    tolerance = 1e-6
    full = dict(want)
    assert len(got) == min(k, len(want))
    for position, score in got:
        assert score == pytest.approx(full[position], rel=1e-5, abs=tolerance)
    scores = [score for _, score in got]
    assert scores == sorted(scores, reverse=True)
    if got:
        kth = want[len(got) - 1][1]
        assert {p for p, s in want if s > kth + tolerance} <= {p for p, _ in got}


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    """10,000 scars (and some archived), caught up once for the module."""
    root = tmp_path_factory.mktemp("scars10k")
    seed = 20261123
    print(f"scars seed: {seed}")
    rng = random.Random(seed)
    with engram.open_memory(
        str(root / "ledger.db"),
        config=os.devnull,
        projections=str(root / "store"),
        durability="fast",
    ) as memory:
        events = scar_events(rng, 10_000, salt=7)
        for start in range(0, len(events), 1000):
            memory.ledger.append(events[start : start + 1000])
        gone = rng.sample(range(1, 10_001), 300)
        memory.ledger.append(
            NewEvent(
                stream="agent:alice", kind="scar.archived", payload=ScarArchived(positions=gone)
            )
        )
        memory.engine.catch_up()
        yield memory


@pytest.mark.parametrize(
    ("agent", "scope", "kind", "query", "k"),
    [
        ("alice", "scars", "failure", "deploy migration lock timeout", 10),
        ("bob", "scars", "failure", "cache stale key", 50),
        ("carol", "victories", "victory", "canary release build", 20),
        ("alice", "victories", "victory", "flaky test seed order race", 1),
    ],
)
def test_rerank_matches_the_reference_on_10k_scars(
    big: Memory, agent: str, scope: str, kind: str, query: str, k: int
) -> None:
    as_of = NOW + timedelta(days=3)
    want = reference(big, agent, kind, query, k, as_of)
    got = served(big, agent, scope, query, k, as_of)
    assert_same(got, want, k)
    assert [p for p, _ in got] == [p for p, _ in want[:k]]  # no ties here: the exact order


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 120),
    k=st.integers(1, 15),
    days=st.floats(-30, 2000),
)
def test_rerank_matches_the_reference_on_random_scars(
    tmp_path_factory: pytest.TempPathFactory, seed: int, n: int, k: int, days: float
) -> None:
    root = tmp_path_factory.mktemp("scars")
    rng = random.Random(seed)
    with engram.open_memory(
        str(root / "ledger.db"),
        config=os.devnull,
        projections=str(root / "store"),
        durability="fast",
    ) as memory:
        memory.ledger.append(scar_events(rng, n, salt=seed + 1))
        as_of = NOW + timedelta(days=days)  # before some scars were recorded, at times
        query = " ".join(rng.choices(WORDS, k=3))
        assert_same(
            served(memory, "alice", "scars", query, k, as_of),
            reference(memory, "alice", "failure", query, k, as_of),
            k,
        )
