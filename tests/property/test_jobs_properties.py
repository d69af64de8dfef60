"""Consolidation and archival against reference implementations written from their definitions.

The references are deliberately naive: every ordered pair of candidates, every neuron's
history replayed by hand with the salience formula of ADR 0012. The system under test is the
real thing: events in a SQLite ledger, the real projections, the runner reading as of the
window's end.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import job_steps, weighted_graphs

from engram.jobs import ArchiveJob, ArchiveSettings, JobRunner, SleepJob, SleepSettings
from engram.jobs.consolidation import consolidate
from engram.jobs.lease import FileLease
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import ConnectionCreated, NeuronActivated, NeuronArchived, NeuronCreated
from engram.projections.engine import ProjectionEngine
from engram.projections.graph import NeuronGraph
from engram.projections.salience import SalienceIndex

T0 = datetime(2026, 3, 1, tzinfo=UTC)
HOUR_US = 3_600_000_000


def reference_consolidation(
    weights: dict[tuple[str, str, str], int], candidates: set[str], boost: int, cap: int
) -> dict[tuple[str, str, str], tuple[int, int]]:
    out = {}
    for a in sorted(candidates):
        for b in sorted(candidates):
            if a == b:
                continue
            for (s, t, k), w in weights.items():
                # Sleep only strengthens: a weight already above the cap stays as it is.
                if (s, t) == (a, b) and min(cap, w + boost) > w:
                    out[(s, t, k)] = (w, min(cap, w + boost))
    return out


@given(
    weights=weighted_graphs(),
    chosen=st.sets(st.sampled_from([f"n{i}" for i in range(8)])),
    boost=st.integers(1, 65535),
    cap=st.integers(1, 65535),
)
def test_consolidation_matches_the_pairwise_reference(
    weights: dict[tuple[str, str, str], int], chosen: set[str], boost: int, cap: int
) -> None:
    edges = [(s, t, k, w) for (s, t, k), w in sorted(weights.items())]
    got = {(s, t, k): (w, new) for (s, t, k, w), new in consolidate(edges, chosen, boost, cap)}
    assert got == reference_consolidation(weights, chosen, boost, cap)
    assert all(new <= max(cap, old) and new > old for old, new in got.values())


def _history(steps: list[tuple[int, str, str, float]]) -> list[NewEvent]:
    """Turn steps into valid events: create before use; connect n(i) -> n(i+1)."""
    events: list[NewEvent] = []
    live: set[str] = set()
    made: set[tuple[str, str]] = set()
    for hours, action, neuron, strength in sorted(steps, key=lambda s: s[0]):
        at = T0 + timedelta(hours=hours, minutes=1)
        stream = f"neuron:{neuron}"
        if action == "create" or neuron not in live:
            if neuron in live:
                continue
            live.add(neuron)
            events.append(
                NewEvent.of(
                    NeuronCreated(id=neuron, concept=neuron, type="semantic"), stream=stream, at=at
                )
            )
        elif action == "activate":
            events.append(
                NewEvent.of(NeuronActivated(id=neuron, strength=strength), stream=stream, at=at)
            )
        elif action == "archive":
            live.discard(neuron)
            events.append(NewEvent.of(NeuronArchived(id=neuron), stream=stream, at=at))
        elif action == "connect":
            other = f"n{(int(neuron[1:]) + 1) % 6}"
            if other in live and (neuron, other) not in made:
                made.add((neuron, other))
                payload = ConnectionCreated(
                    source=neuron, target=other, type="feeds_into", weight=1000 * len(made)
                )
                events.append(NewEvent.of(payload, stream=stream, at=at))
    return events


def reference_neurons(events: list[NewEvent], as_of: datetime) -> dict[str, dict[str, float]]:
    """Replay neuron events up to ``as_of`` with the salience formula, by hand."""
    state: dict[str, dict[str, float]] = {}
    end = _us(as_of)
    for e in events:
        if e.at is None or e.at > as_of:
            continue
        p, now = e.payload, _us(e.at)
        if isinstance(p, NeuronCreated) and p.id not in state:
            state[p.id] = {"sal": 32768, "upd": now, "count": 0, "created": now, "archived": 0}
        elif isinstance(p, NeuronActivated) and p.id in state and not state[p.id]["archived"]:
            n = state[p.id]
            t = max(now, n["upd"])
            current = math.floor(n["sal"] * 0.99 ** ((t - n["upd"]) / HOUR_US))
            n["sal"] = min(
                65535, current + math.floor((65535 - current) * min(p.strength, 1.0) * 0.25)
            )
            n["upd"], n["count"] = t, n["count"] + 1
        elif isinstance(p, NeuronArchived) and p.id in state:
            state[p.id]["archived"] = 1
    for n in state.values():
        n["now"] = math.floor(n["sal"] * 0.99 ** (max(end - n["upd"], 0) / HOUR_US))
    return state


def _us(at: datetime) -> int:
    return int((at - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))


def _open(tmp: Path) -> tuple[Ledger, ProjectionEngine]:
    ledger = Ledger.open(str(tmp / "ledger.db"), durability="fast")
    engine = ProjectionEngine(ledger, tmp / "store", [NeuronGraph(), SalienceIndex()])
    return ledger, engine


@settings(max_examples=25)
@given(
    steps=job_steps, threshold=st.sampled_from([33000, 40000, 50000]), end_hour=st.integers(2, 100)
)
def test_sleep_candidates_and_reweights_match_a_replay_by_hand(
    tmp_path_factory: object,
    steps: list[tuple[int, str, str, float]],
    threshold: int,
    end_hour: int,
) -> None:
    tmp = tmp_path_factory.mktemp("sleep")  # type: ignore[attr-defined]
    events = _history(steps)
    ledger, engine = _open(tmp)
    with ledger, engine:
        ledger.append(events)
        every = timedelta(hours=1)
        job = SleepJob(SleepSettings(threshold=threshold, boost=700, every=every))
        now = T0 + timedelta(hours=end_hour, minutes=30)
        runner = JobRunner(
            ledger, engine, [job], lease=FileLease(str(tmp / "ledger.db")), clock=lambda: now
        )
        result = runner.run("sleep", dry_run=True)
        assert result.window is not None
        window = result.window
        state = reference_neurons(events, window.as_of)
        start = _us(window.start)
        chosen = {
            n
            for n, v in state.items()
            if not v["archived"] and v["now"] >= threshold and v["upd"] >= start
        }
        assert result.plan.counts["candidates"] == len(chosen)
        weights = {}
        for e in events:
            if (
                isinstance(e.payload, ConnectionCreated)
                and e.at is not None
                and e.at <= window.as_of
            ):
                p = e.payload
                weights[(p.source, p.target, p.type)] = p.weight
        expected = reference_consolidation(weights, chosen, 700, 65535)
        got = {
            (e.payload.source, e.payload.target, e.payload.type): e.payload.weight
            for e in result.plan.events
        }
        assert got == {k: new for k, (_, new) in expected.items()}


@settings(max_examples=25)
@given(steps=job_steps, min_activations=st.integers(0, 3), age_hours=st.integers(1, 80))
def test_archival_matches_a_replay_by_hand(
    tmp_path_factory: object,
    steps: list[tuple[int, str, str, float]],
    min_activations: int,
    age_hours: int,
) -> None:
    tmp = tmp_path_factory.mktemp("archive")  # type: ignore[attr-defined]
    events = _history(steps)
    ledger, engine = _open(tmp)
    with ledger, engine:
        ledger.append(events)
        job = ArchiveJob(
            ArchiveSettings(
                min_activations=min_activations,
                neuron_age=timedelta(hours=age_hours),
                every=timedelta(days=1),
            ),
        )
        now = T0 + timedelta(days=5, hours=1)
        runner = JobRunner(
            ledger, engine, [job], lease=FileLease(str(tmp / "ledger.db")), clock=lambda: now
        )
        result = runner.run("archive")
        assert result.outcome == "ok"
        assert result.window is not None
        state = reference_neurons(events, result.window.as_of)
        cutoff = _us(result.window.as_of - timedelta(hours=age_hours))
        expected = sorted(
            n
            for n, v in state.items()
            if not v["archived"] and v["count"] < min_activations and v["created"] < cutoff
        )
        archived = [e.payload.id for e in result.plan.events]
        assert archived == expected
        # A second run of the same window appends nothing; the next never archives them again.
        head = ledger.head()
        assert runner.run("archive").outcome == "idle"
        assert ledger.head() == head
        later = runner.run("archive", now=now + timedelta(days=1))
        assert not {e.payload.id for e in later.plan.events} & set(archived)
