"""The dream's clustering and the daemon's as-of reads against naive references.

* Clustering: a reference written from the definition in plain Python (cosine by sums,
  Jaccard by sets, leaders in position order) over generated scars whose small integer
  vectors and lessons from a small vocabulary make ties and near-misses common.
* As-of reads: :class:`AsOfReader`, which keeps a replayed prefix between reads, against
  :func:`known_at`, which replays the ledger from scratch, on a real SQLite ledger with the
  real projections, events stamped out of order, and as-of times that go back and forth.
"""

from __future__ import annotations

import math
import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.jobs.asof import AsOfReader
from engram.jobs.dream import Candidate, cluster
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import (
    ConnectionCreated,
    ConnectionReweighted,
    NeuronActivated,
    NeuronArchived,
    NeuronCreated,
)
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.queries import known_at
from engram.projections.salience import SalienceIndex

WORDS = ["run", "tests", "before", "deploy", "lock", "timeout", "pin", "image"]
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def reference_clusters(
    scars: list[tuple[int, str, tuple[int, ...]]], cosine: float, overlap: float
) -> list[list[int]]:
    """Leader clustering from the definition: oldest first, first similar leader wins."""

    def cos(a: tuple[int, ...], b: tuple[int, ...]) -> float:
        na = math.sqrt(sum(x * x for x in a)) or 1.0
        nb = math.sqrt(sum(x * x for x in b)) or 1.0
        return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)

    def words(text: str) -> set[str]:
        return set(text.lower().split())

    groups: list[list[tuple[int, str, tuple[int, ...]]]] = []
    for scar in sorted(scars):
        for group in groups:
            leader = group[0]
            a, b = words(leader[1]), words(scar[1])
            share = len(a & b) / len(a | b) if a | b else 0.0
            if cos(leader[2], scar[2]) >= cosine - 1e-9 and share >= overlap:
                group.append(scar)
                break
        else:
            groups.append([scar])
    return [[s[0] for s in group] for group in groups]


scars_strategy = st.lists(
    st.tuples(
        st.integers(1, 10_000),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
        st.tuples(*[st.integers(-3, 3)] * 3),
    ),
    max_size=30,
    unique_by=lambda s: s[0],
)


@given(
    scars=scars_strategy,
    cosine=st.sampled_from([0.5, 0.8, 0.85, 0.95, 1.0]),
    overlap=st.sampled_from([0.25, 0.5, 1.0]),
)
def test_dream_clusters_match_the_reference(
    scars: list[tuple[int, str, tuple[int, ...]]], cosine: float, overlap: float
) -> None:
    candidates = [Candidate(p, f"id{p}", lesson, v) for p, lesson, v in scars]
    got = [[c.position for c in group] for group in cluster(candidates, cosine, overlap)]
    assert got == reference_clusters(scars, cosine, overlap)
    # Every scar is in exactly one cluster, and a later scar never moves an earlier one.
    assert sorted(p for group in got for p in group) == sorted(s[0] for s in scars)
    if scars:
        newest = max(s[0] for s in scars)
        older = [s for s in scars if s[0] != newest]
        before = reference_clusters(older, cosine, overlap)
        assert [[p for p in group if p != newest] for group in got if group != [newest]] == before


# -- as-of reads ----------------------------------------------------------------------------

NAMES = [f"n{i}" for i in range(6)]

step = st.tuples(
    st.sampled_from(["create", "activate", "connect", "reweight", "archive"]),
    st.sampled_from(NAMES),
    st.sampled_from(NAMES),
    st.integers(0, 48),  # hours after T0: event times out of position order
)


def _event(kind: str, a: str, b: str, hours: int) -> NewEvent:
    at = T0 + timedelta(hours=hours)
    stream = f"neuron:{a}"
    if kind == "create":
        return NewEvent.of(NeuronCreated(id=a, concept=a, type="semantic"), stream=stream, at=at)
    if kind == "activate":
        return NewEvent.of(NeuronActivated(id=a, strength=1.0), stream=stream, at=at)
    if kind == "connect":
        payload = ConnectionCreated(source=a, target=b, type="feeds_into", weight=1000 + hours)
        return NewEvent.of(payload, stream=stream, at=at)
    if kind == "reweight":
        payload2 = ConnectionReweighted(source=a, target=b, type="feeds_into", weight=hours + 1)
        return NewEvent.of(payload2, stream=stream, at=at)
    return NewEvent.of(NeuronArchived(id=a, reason="test"), stream=stream, at=at)


def _dump(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    return {
        table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        for table in ("salience", "neurons", "connections", "graph_anomalies", "graph_actors")
    }


@settings(max_examples=30, deadline=None)
@given(
    batches=st.lists(st.lists(step, min_size=1, max_size=12), min_size=1, max_size=5),
    reads=st.lists(st.integers(0, 50), min_size=1, max_size=6),
)
def test_as_of_reads_equal_a_replay_from_scratch(
    batches: list[list[tuple[str, str, str, int]]], reads: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger.open(str(Path(tmp) / "ledger.db"), durability="fast")
        engine = ProjectionEngine(ledger, Path(tmp) / "store", [NeuronGraph(), SalienceIndex()])
        with ledger, engine:
            reader = AsOfReader(ledger)
            for i, hours in enumerate(reads):
                # Appends between reads, as a live daemon sees them.
                for kind, a, b, h in batches[i % len(batches)]:
                    ledger.append([_event(kind, a, b, h)])
                engine.catch_up()
                as_of = T0 + timedelta(hours=hours, minutes=30)
                with (
                    engine.read() as conn,
                    reader.known(conn, as_of) as fast,
                    known_at(conn, ledger, as_of) as slow,
                ):
                    assert _dump(fast) == _dump(slow), (reader.last_read, hours)


def test_as_of_reads_keep_the_prefix_between_windows(tmp_path: Path) -> None:
    ledger = Ledger.open(str(tmp_path / "ledger.db"), durability="fast")
    engine = ProjectionEngine(ledger, tmp_path / "store", [NeuronGraph(), SalienceIndex()])
    with ledger, engine:
        reader = AsOfReader(ledger)
        ledger.append([_event("create", n, n, 0) for n in NAMES])
        modes: list[str] = []
        for hour in (1, 2, 3, 1):
            # This hour's events, and one stamped after the window's end, already appended.
            ledger.append([_event("create", f"h{hour}x{len(modes)}", "n0", hour - 1)])
            ledger.append([_event("activate", "n1", "n0", hour)])
            engine.catch_up()
            as_of = T0 + timedelta(hours=hour - 1, minutes=30)
            with (
                engine.read() as conn,
                reader.known(conn, as_of) as fast,
                known_at(conn, ledger, as_of) as slow,
            ):
                assert _dump(fast) == _dump(slow)
            modes.append(reader.last_read)
        assert modes == ["rebuilt", "incremental", "incremental", "rebuilt"]
        assert reader.prefix > 0
