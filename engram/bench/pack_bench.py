"""Knowledge packs: export and import rates for 100k nodes, beside the ledger's raw work.

A source ledger holds 90,000 public memories and 10,000 concepts (9,000 and 1,000 with
``--quick``) of agent ``bench``, texts drawn from a seeded vocabulary.

- **Export**: ``export_pack`` of all of them (no vectors: the embedder's cost is its own
  figure elsewhere) — the ledger scan, the archived filter, the concepts read, JSONL, zip,
  AES-GCM and an fsync'd file — beside the reference, reading the same events from the
  ledger (``Ledger.read``). Information only: export does the read and more.
- **Import**: ``import_pack`` into a fresh ledger — authenticate, check the checksum, decode
  and validate every node, build the events, check concept ownership and append them in one
  batch — beside appending the very same events (same ids, one batch) to a fresh ledger
  with ``Ledger.append``. Target: import at no less than 0.5× the raw append rate.

Both ledgers are SQLite files with the default durability (fsync at commit); engram and the
reference alternate within each repetition.
"""

from __future__ import annotations

import os
import random
import time

from engram.agents.memory import AgentMemory
from engram.agents.packs import PackKey, export_pack, import_pack, read_pack
from engram.agents.packs.transfer import event_for
from engram.bench.common import Config, Figure, interleave, log, remove_db, remove_tree
from engram.ledger import Ledger, NewEvent, default_registry
from engram.ledger.catalog import ConceptUpserted, MemoryObserved
from engram.projections.concepts import Concepts
from engram.projections.engine import ProjectionEngine
from engram.projections.salience import SalienceIndex

KEY = PackKey(bytes(range(32)), True, "bench key")
TARGET = 0.5
#: The vocabulary of the synthetic texts (their content does not matter, their size does).
WORDS = (
    "cache", "deploy", "retry", "index", "ledger", "vector", "token", "budget", "agent",
    "concept", "memory", "lesson", "scar", "rule", "query", "shard", "lock", "commit", "replay",
    "digest", "batch", "window", "lease", "signal", "frame", "episode", "python", "sqlite",
)  # fmt: skip


def run(config: Config) -> list[Figure]:
    """Measure export and import of a pack of 100k nodes (10k with --quick)."""
    n = 10_000 if config.quick else 100_000
    root = os.path.join(config.scratch, "packs")
    os.makedirs(root, exist_ok=True)
    try:
        source = os.path.join(root, "source.db")
        with Ledger.open(source, default_registry()) as ledger:
            _fill(ledger, n, config.seed)
            with ProjectionEngine(
                ledger, f"{source}.store", [SalienceIndex(), Concepts()]
            ) as engine:
                log(f"  packs: catching up {ledger.head():,} events")
                engine.catch_up()
                reader = AgentMemory("bench", ledger, engine)
                path = os.path.join(root, "bench.pack")
                export = Figure(f"pack export, {n:,} nodes", "nodes/s", "Ledger.read", None)
                export.note = "export reads the same events and does more: information only"
                samples = interleave(
                    config.repeat,
                    [
                        ("engram", lambda: n / _timed(lambda: _export(reader, path, n))),
                        ("reference", lambda: n / _timed(lambda: _read(ledger))),
                    ],
                    "pack export",
                )
        export.engram_samples, export.reference_samples = samples["engram"], samples["reference"]
        manifest, nodes = read_pack(path, KEY)
        events = [event_for(manifest.id, node, "importer", "pack:bench@1") for node in nodes]
        imported = Figure(
            f"pack import, {n:,} nodes", "nodes/s", "Ledger.append, same events", TARGET
        )
        samples = interleave(
            config.repeat,
            [
                ("engram", lambda: n / _import(root, path)),
                ("reference", lambda: n / _append(root, events)),
            ],
            "pack import",
        )
        imported.engram_samples = samples["engram"]
        imported.reference_samples = samples["reference"]
        imported.note = "one atomic batch each; import includes decrypt, checks and decode"
        return [export, imported]
    finally:
        remove_tree(root)


def _fill(ledger: Ledger, n: int, seed: int) -> None:
    rng = random.Random(seed)
    concepts = n // 10
    batch: list[NewEvent] = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24)))
        if i < concepts:
            payload: ConceptUpserted | MemoryObserved = ConceptUpserted(
                id=f"bench.c{i // 100}.n{i}", type="fact", label=f"{text[:40]} {i}", agent="bench"
            )
            stream = f"concept:bench.c{i // 100}.n{i}"
        else:
            payload = MemoryObserved(agent="bench", text=f"{text} #{i}", importance=5)
            stream = "agent:bench"
        batch.append(NewEvent.of(payload, stream=stream, actor="bench"))
        if len(batch) == 1000:
            ledger.append(batch)
            batch = []
    if batch:
        ledger.append(batch)


def _timed(step: object) -> float:
    start = time.perf_counter()
    step()  # type: ignore[operator]
    return time.perf_counter() - start


def _export(reader: AgentMemory, path: str, n: int) -> None:
    export_pack(reader, path, KEY, name="bench", version="1", concepts_under="bench",
                agent="bench", limit=n, embeddings=False)  # fmt: skip


def _read(ledger: Ledger) -> None:
    for _ in ledger.read(kinds=["memory.observed", "concept.upserted"]):
        pass


def _import(root: str, path: str) -> float:
    target = os.path.join(root, "import.db")
    remove_db(target)
    remove_tree(f"{target}.store")
    with (
        Ledger.open(target, default_registry()) as ledger,
        ProjectionEngine(ledger, f"{target}.store", [Concepts()]) as engine,
    ):
        writer = AgentMemory("importer", ledger, engine)
        seconds = _timed(lambda: import_pack(writer, path, KEY))
    remove_db(target)
    remove_tree(f"{target}.store")
    return seconds


def _append(root: str, events: list[NewEvent]) -> float:
    target = os.path.join(root, "raw.db")
    remove_db(target)
    with Ledger.open(target, default_registry()) as ledger:
        seconds = _timed(lambda: ledger.append(events))
    remove_db(target)
    return seconds
