"""The dream's clustering and the daemon's as-of reads against naive references.

* Clustering: a reference written from the definition in plain Python (average linkage
  over the pair score, oldest first, the best group wins) over generated scars whose small
  integer vectors and lessons from a small vocabulary make ties and near-misses common.
* As-of reads: :class:`AsOfReader`, which keeps a replayed prefix between reads, against
  :func:`known_at`, which replays the ledger from scratch, on a real SQLite ledger with the
  real projections, events stamped out of order, and as-of times that go back and forth.
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.meaning import COHESION, Calibration, content_words, repeat_score
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
from engram.projections.salience import SalienceIndex
from engram.projections.timetravel import known_at

WORDS = ["run", "tests", "before", "deploy", "lock", "timeout", "pin", "image"]
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def pair_scores(
    scars: list[tuple[int, str, tuple[int, ...]]], calibration: Calibration
) -> dict[tuple[int, int], float]:
    """Return the repeat score of every pair of scars, from the definition."""
    vectors = {p: np.asarray(v, dtype=np.float32) for p, _, v in scars}
    words = {p: content_words(lesson) for p, lesson, _ in scars}
    return {
        (a, b): repeat_score(words[a], words[b], vectors[a], vectors[b], calibration)
        for a, _, _ in scars
        for b, _, _ in scars
        if a != b
    }


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
    floor=st.sampled_from([0.0, 0.15, 0.5]),
    threshold=st.sampled_from([0.25, 0.5, 0.8, 1.0]),
)
def test_dream_clusters_are_average_linkage_groups(
    scars: list[tuple[int, str, tuple[int, ...]]], floor: float, threshold: float
) -> None:
    calibration = Calibration(floor=floor, paraphrase=0.9)
    candidates = [Candidate(p, f"id{p}", lesson, v) for p, lesson, v in scars]
    got = [[c.position for c in g] for g in cluster(candidates, calibration, threshold)]
    # Every scar is in exactly one cluster, and the order scars are handed in changes nothing.
    assert sorted(p for group in got for p in group) == sorted(s[0] for s in scars)
    shuffled = [[c.position for c in g] for g in cluster(candidates[::-1], calibration, threshold)]
    assert sorted(map(sorted, shuffled)) == sorted(map(sorted, got))
    scores = pair_scores(scars, calibration)
    # Every pair inside a group is cohesive; no two groups could still be merged.
    for group in got:
        assert all(scores[a, b] >= COHESION - 1e-9 for a in group for b in group if a != b)
    for i, one in enumerate(got):
        for other in got[i + 1 :]:
            between = [scores[a, b] for a in one for b in other]
            average = sum(between) / len(between)
            assert average < threshold + 1e-9 or min(between) < COHESION + 1e-9


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
