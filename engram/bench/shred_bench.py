"""What sealing personal fields costs (ADR 0039): sealed vs plain ledgers, the same events.

Two workloads: the ledger bench's mix (24% personal events: observations and recalls) and
observations only (every event sealed, the worst case). Append: batches of 100, durable,
both sides a chunk at a time (:func:`~engram.bench.common.alternate`); replay: every event
read back into Event objects, sealed fields opened. The ratio is sealed over plain; the goals
(ADR 0059) hold for both workloads: appends at >= 0.9x, replay at >= 0.85x, so that sealing can
be on by default.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from engram.bench.common import Config, Figure, alternate, log, repeat_runs, scratch_file
from engram.bench.ledger_bench import BATCH, GOALS
from engram.bench.workload import Workload
from engram.ledger import KeyStore, Ledger, NewEvent, Sealer

Step = Callable[[int], None]


@contextmanager
def _ledger(directory: str, name: str, *, sealed: bool, durability: str) -> Iterator[Ledger]:
    with ExitStack() as stack:
        path = stack.enter_context(scratch_file(directory, name))
        sealer = None
        if sealed:
            keys = stack.enter_context(scratch_file(directory, name + ".keys"))
            sealer = Sealer(KeyStore(keys))
        ledger = Ledger.open(path, durability=durability, sealer=sealer)
        try:
            yield ledger
        finally:
            ledger.close()


def _workloads(config: Config) -> list[tuple[str, Callable[[int], list[NewEvent]]]]:
    workload = Workload(config.seed + 7)

    def observations(n: int) -> list[NewEvent]:
        found: list[NewEvent] = []
        while len(found) < n:
            found += [e for e in workload.events(6 * n) if e.kind == "memory.observed"]
        return found[:n]

    return [("mix", workload.events), ("observations", observations)]


def _append(config: Config, label: str, events: list[NewEvent]) -> Figure:
    chunks = max(1, min(20, len(events) // (BATCH * 5)))
    per_chunk = len(events) // chunks // BATCH * BATCH
    n = chunks * per_chunk
    figure = Figure(
        f"SQLite append sealed vs plain, {label}, batches of {BATCH}",
        "events/s",
        "same ledger, no key store",
        GOALS["sealed_append"],
        note="personal fields AES-256-GCM under per-subject keys; durable",
    )

    def step(ledger: Ledger) -> Step:
        def run(i: int) -> None:
            for s in range(i * per_chunk, (i + 1) * per_chunk, BATCH):
                ledger.append(events[s : s + BATCH])

        return run

    def one_repetition() -> dict[str, float]:
        with ExitStack() as stack:
            d = config.scratch
            sealed = stack.enter_context(_ledger(d, "sealed.db", sealed=True, durability="full"))
            plain = stack.enter_context(_ledger(d, "plain.db", sealed=False, durability="full"))
            spent = alternate(chunks, [("sealed", step(sealed)), ("plain", step(plain))])
        return {name: n / seconds for name, seconds in spent.items()}

    samples = repeat_runs(config.repeat, one_repetition, f"sealed append, {label}")
    figure.engram_samples, figure.reference_samples = samples["sealed"], samples["plain"]
    return figure


def _replay(config: Config, label: str, events: list[NewEvent]) -> Figure:
    chunks = 10
    per_chunk = len(events) // chunks
    n = per_chunk * chunks
    figure = Figure(
        f"SQLite replay sealed vs plain, {label}",
        "events/s",
        "same events, unsealed",
        GOALS["sealed_replay"],
        note="ledger.read of every event, sealed fields opened with cached keys",
    )
    with ExitStack() as stack:
        d = config.scratch
        sides = {}
        for name in ("sealed", "plain"):
            ledger = stack.enter_context(
                _ledger(d, f"replay-{name}.db", sealed=name == "sealed", durability="fast")
            )
            for s in range(0, n, 1000):
                ledger.append(events[s : min(s + 1000, n)])
            sides[name] = ledger

        def step(ledger: Ledger, counts: dict[str, int], name: str) -> Step:
            def run(i: int) -> None:
                counts[name] += sum(1 for _ in ledger.read(i * per_chunk, limit=per_chunk))

            return run

        def one_repetition() -> dict[str, float]:
            counts = dict.fromkeys(sides, 0)
            spent = alternate(chunks, [(k, step(v, counts, k)) for k, v in sides.items()])
            if any(c != n for c in counts.values()):
                raise RuntimeError(f"replay read {counts}, expected {n} each")
            return {name: n / seconds for name, seconds in spent.items()}

        samples = repeat_runs(config.repeat, one_repetition, f"sealed replay, {label}")
    figure.engram_samples, figure.reference_samples = samples["sealed"], samples["plain"]
    return figure


def sealing(config: Config) -> list[Figure]:
    """Append and replay, sealed over plain, for the mixed and the observations workload."""
    figures = []
    for label, make in _workloads(config):
        append_events = make(config.sizes.batch_events)
        replay_events = make(config.sizes.replay_events // 4)
        log(
            f"sealing, {label}: {len(append_events):,} appended, {len(replay_events):,} replayed"
            f" per repetition ({os.cpu_count()} CPUs)"
        )
        figures += [_append(config, label, append_events), _replay(config, label, replay_events)]
    return figures
