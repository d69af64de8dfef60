"""Recall at scale: building a large store fast, and recall's latency beside its raw calls.

A store of ``count`` synthetic memories (LoCoMo sentences, eight authors, one in ten items
private) is built the way an operator would load one: the observations appended in batches
of 1,000, then one catch-up of the salience and lexical indexes, then the semantic index
built from nothing. Each step is timed, so the report gives the observe throughput into the
ledger, into each index and into all of them, and the semantic build rate.

Latency: the LoCoMo questions are recalled (``k=10``, not recorded) with their vectors
computed beforehand, so the figure is the engine's own time. The reference is the raw calls
recall makes, timed in turn with it per question: the FTS5 statement recall runs (the
informative words' pool, with the visibility filter) and the FAISS ``search`` of the same
size.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.agents.memory import AgentMemory
from engram.bench.common import Config, Figure, Progress, log
from engram.ledger import Ledger, NewEvent
from engram.ledger.catalog import MemoryObserved
from engram.projections import lexical
from engram.projections.copies import Copies
from engram.projections.embedding import Embedder, FloatArray
from engram.projections.engine import ProjectionEngine
from engram.projections.lexical import LexicalIndex
from engram.projections.salience import SalienceIndex
from engram.projections.semantic import SemanticIndex, VectorSearcher
from engram.projections.store import ProjectionStore, physical
from engram.projections.supersession import Supersessions

K = 10
AUTHORS = 8
TYPES = ("observation", "plan", "thought")
APPEND_BATCH = 1_000
#: When the first synthetic memory was observed; the others follow a minute apart.
START = datetime(2025, 1, 1, tzinfo=UTC)
#: The issue's goals, query embedding excluded: (p50, p99) in ms by store size.
GOALS = {100_000: (15.0, 50.0), 1_000_000: (40.0, 120.0)}
#: Recall may take at most this many times its raw calls.
OVERHEAD = 1.5


def observations(texts: Sequence[str]) -> list[NewEvent]:
    """Return one ``memory.observed`` per text: eight authors, a tenth private, a minute apart."""
    events = []
    for i, text in enumerate(texts):
        agent = f"agent-{i % AUTHORS}"
        payload = MemoryObserved(
            agent=agent,
            text=text,
            type=TYPES[i % len(TYPES)],  # type: ignore[arg-type]
            importance=1 + (i * 7) % 10,
            visibility="private" if i % 10 == 0 else "public",
            source=None,
            tags=[],
        )
        at = START + timedelta(minutes=i)
        events.append(
            NewEvent(
                stream=f"agent:{agent}", kind="memory.observed", payload=payload, actor=agent, at=at
            )
        )
    return events


def append(ledger: Ledger, texts: Sequence[str]) -> None:
    """Append the texts' observations in batches (the bulk path of a load)."""
    events = observations(texts)
    for start in range(0, len(events), APPEND_BATCH):
        ledger.append(events[start : start + APPEND_BATCH])


def catch_up(engine: ProjectionEngine, label: str) -> None:
    """Catch ``engine`` up with a progress line per batch (and per embedded slice)."""
    shown = Progress(f"  {label}", 1)

    def report(step: str, done: int, total: int) -> None:
        if step in ("catch-up", "rebuild"):
            shown.total = max(total, 1)
            shown.update(done)

    engine.catch_up(progress=report)
    shown.finish()


class Built:
    """A store built for the latency figures, with the throughput of each step.

    ``reused`` says the store came from the store cache: its seconds are the ones recorded
    when it was built (:func:`built`).
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.seconds: dict[str, float] = {}
        self.reused = False

    def figures(self, what: str) -> list[Figure]:
        """Return the observe-throughput figures (events/s) of each step and of all."""
        out = []
        labels = {
            "append": "observe into the ledger (batches of 1,000)",
            "indexes": "catch-up, salience + lexical",
            "semantic": f"semantic index built from nothing ({what})",
        }
        cached = " (recorded when the cached store was built)" if self.reused else ""
        for step, label in labels.items():
            figure = Figure(f"{label}, {self.count:,} memories", "events/s", "-", None)
            figure.engram_samples.append(self.count / self.seconds[step])
            figure.note = cached.strip(" ()")
            out.append(figure)
        total = Figure(f"observe into all indexes, {self.count:,} memories", "events/s", "-", None)
        total.engram_samples.append(self.count / sum(self.seconds.values()))
        total.note = (
            f"append, catch-up and semantic build in sequence: {sum(self.seconds.values()):.0f} s"
            f" for {self.count:,} memories; vectors: {what}{cached}"
        )
        out.append(total)
        return out


def fingerprint(texts: Sequence[str], embedder: Embedder) -> str:
    """Return what a cached store must have been built from: the texts and the vectors."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    return f"{len(texts)}:{embedder.fingerprint}:{digest.hexdigest()}"


def _recorded(marker: str, expected: str, ledger: Ledger) -> dict[str, float] | None:
    """Return the build seconds a cached store recorded, or None if it is not that store."""
    try:
        with open(marker) as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    count = int(expected.split(":", 1)[0])
    if not isinstance(found, dict) or found.get("built_from") != expected:
        return None
    if ledger.head() != count:
        return None
    seconds = found.get("seconds")
    steps = ("append", "indexes", "semantic")
    if not isinstance(seconds, dict) or any(not isinstance(seconds.get(s), float) for s in steps):
        return None
    return {s: float(seconds[s]) for s in steps}


@contextmanager
def built(
    config: Config, directory: str, texts: Sequence[str], embedder: Embedder, what: str
) -> Iterator[tuple[Built, Ledger, ProjectionEngine]]:
    """Build a store of ``texts`` step by step, timing each; yield it open.

    A store left in ``directory`` by an earlier run (its marker names the same texts and
    embedder, its ledger holds just them) is reused: nothing is rebuilt and the seconds it
    recorded are reported. Anything else found there is removed and built again.
    """
    from engram.ledger import default_registry

    record = Built(len(texts))
    marker = directory + ".built.json"
    expected = fingerprint(texts, embedder)
    if os.path.exists(directory + ".db"):
        with Ledger.open(directory + ".db", default_registry(), durability="fast") as ledger:
            seconds = _recorded(marker, expected, ledger)
        if seconds is None:
            log(f"  the store at {directory} is not this one: building it again")
            for leftover in (marker, directory + ".db"):
                with suppress(FileNotFoundError):
                    os.remove(leftover)
            shutil.rmtree(directory, ignore_errors=True)
        else:
            record.seconds, record.reused = seconds, True
            log(f"  reusing the store at {directory} ({len(texts):,} memories)")
    with Ledger.open(directory + ".db", default_registry(), durability="fast") as ledger:
        if not record.reused:
            _build(record, ledger, directory, texts, embedder, what)
        # Every projection recall reads, as the runtime lists them (copies, supersessions too).
        projections = [
            SalienceIndex(),
            LexicalIndex(),
            SemanticIndex(embedder),
            Copies(),
            Supersessions(),
        ]
        with ProjectionEngine(ledger, directory, projections) as engine:
            started = time.perf_counter()
            catch_up(engine, f"semantic index, {len(texts):,} memories ({what})")
            if not record.reused:
                record.seconds["semantic"] = time.perf_counter() - started
                with open(marker, "w") as f:
                    json.dump({"built_from": expected, "seconds": record.seconds}, f)
            yield record, ledger, engine


def _build(
    record: Built,
    ledger: Ledger,
    directory: str,
    texts: Sequence[str],
    embedder: Embedder,
    what: str,
) -> None:
    """Append the observations and catch the salience and lexical indexes up, timed."""
    started = time.perf_counter()
    append(ledger, texts)
    record.seconds["append"] = time.perf_counter() - started
    log(f"  appended {len(texts):,} observations in {record.seconds['append']:.1f} s")
    started = time.perf_counter()
    with ProjectionEngine(
        ledger, directory, [SalienceIndex(), LexicalIndex(), Copies(), Supersessions()]
    ) as engine:
        catch_up(engine, f"salience + lexical, {len(texts):,} memories")
    record.seconds["indexes"] = time.perf_counter() - started


def pool_statement(conn: Any) -> str:
    """Return the FTS5 statement a pruned lexical search runs (the raw reference)."""
    table = physical(ProjectionStore.live_generation(conn, "lexical") or 0, "lexical")
    return (
        f"SELECT t.rowid, -r, agent, type, visibility, text, (1 AND (visibility = 'public'"
        f" OR agent = ?) AND observed_us <= ? AND (archived_us IS NULL OR archived_us > ?))"
        f" FROM (SELECT rowid AS id, rank AS r FROM {table} WHERE {table} MATCH ?"
        f" ORDER BY rank LIMIT ?) JOIN {table} t ON t.rowid = id ORDER BY r, id"
    )


def timings(
    config: Config,
    memory: AgentMemory,
    engine: ProjectionEngine,
    searcher: VectorSearcher,
    queries: list[str],
    vectors: dict[str, FloatArray],
    what: str,
) -> list[Figure]:
    """Recall p50/p99 against the raw FTS5 statement and FAISS search, question by question."""
    # A day after the last memory: every memory known, and no as-of replay of the salience
    # index (a time inside the store would replay the ledger up to it on every recall).
    as_of = START + timedelta(minutes=searcher.size, days=1)
    at_us = int((as_of - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1))
    fetch = max(3 * K, 30)
    index = searcher.index
    with engine.read() as conn:
        sql = pool_statement(conn)
        expressions = {q: lexical.terms(conn, q).expression for q in queries}
    faiss_fetch = min(max(fetch * 4, 32), searcher.size)
    size = searcher.size
    p50 = Figure(f"recall p50, {size:,} memories", "ms", "raw FTS5 + FAISS", 1 / OVERHEAD)
    p99 = Figure(f"recall p99, {size:,} memories", "ms", "raw FTS5 + FAISS", 1 / OVERHEAD)
    raw_fts = Figure(f"  raw FTS5 statement p50, {size:,}", "ms", "-", None)
    raw_faiss = Figure(f"  raw FAISS search p50, {size:,}", "ms", "-", None)
    for rep in range(config.repeat):
        ours: list[float] = []
        raw: list[float] = []
        fts: list[float] = []
        ann: list[float] = []
        for i, query in enumerate(queries):
            expression = expressions[query]
            vector = vectors[query].reshape(1, -1)

            def engine_call(query: str = query) -> None:
                memory.recall(query, K, as_of=as_of, record=False)

            def raw_call(
                expression: str | None = expression,
                vector: Any = vector,
                fts: list[float] = fts,
                ann: list[float] = ann,
            ) -> None:
                started = time.perf_counter()
                if expression is not None:
                    with engine.read() as conn:
                        params = ("agent-1", at_us, at_us, expression, 4 * fetch)
                        conn.execute(sql, params).fetchall()
                middle = time.perf_counter()
                index.search(vector, faiss_fetch)
                fts.append(middle - started)
                ann.append(time.perf_counter() - middle)

            pair: list[tuple[str, Callable[[], None]]] = [
                ("engram", engine_call),
                ("raw", raw_call),
            ]
            for name, call in pair if i % 2 == 0 else pair[::-1]:
                started = time.perf_counter()
                call()
                (ours if name == "engram" else raw).append(time.perf_counter() - started)
        p50.engram_samples.append(1000 * statistics.median(ours))
        p50.reference_samples.append(1000 * statistics.median(raw))
        p99.engram_samples.append(1000 * quantile(ours, 0.99))
        p99.reference_samples.append(1000 * quantile(raw, 0.99))
        raw_fts.engram_samples.append(1000 * statistics.median(fts))
        raw_faiss.engram_samples.append(1000 * statistics.median(ann))
        log(f"  recall latency at {size:,}: repetition {rep + 1}/{config.repeat} done")
    goal = GOALS.get(size)
    p50.note = (
        f"{len(queries)} LoCoMo questions, k={K}, {what}, query vectors computed beforehand; "
        f"reference: the FTS5 statement recall runs (its pool of {4 * fetch} rows by the "
        f"informative words) and the FAISS search ({faiss_fetch}); target: recall at most "
        f"{OVERHEAD}x its raw calls"
    )
    if goal is not None:
        met = [
            f"{name} {figure.engram:.1f} ms {'<=' if figure.engram <= limit else '>'} {limit:g}"
            for name, figure, limit in (("p50", p50, goal[0]), ("p99", p99, goal[1]))
            if figure.engram is not None
        ]
        p99.note = f"the issue's goal at this size: {'; '.join(met)}"
    return [p50, p99, raw_fts, raw_faiss]


def quantile(values: list[float], q: float) -> float:
    """Return the ``q`` quantile of ``values`` (the nearest rank below)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class PeakMemory:
    """Sample this process's resident memory while a block runs; keep the high-water mark.

    Reads ``/proc/self/statm`` every 20 ms where it exists; elsewhere only the lifetime
    high-water mark (``getrusage``) is known, which the figure then says.
    """

    def __init__(self) -> None:
        self.before = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss", daemon=True)

    @staticmethod
    def _rss() -> float:
        """Return the resident set size in MiB (the lifetime peak where /proc is absent)."""
        try:
            with open("/proc/self/statm") as f:
                pages = int(f.read().split()[1])
            return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError, IndexError):
            scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB elsewhere
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
