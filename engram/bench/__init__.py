"""`engram bench`: engram's performance figures, each measured against a reference in the same run.

Suites: ``ledger`` (SQLite appends and replay against raw sqlite3 and eventsourcing, and
PostgreSQL appends against raw psycopg), ``audit`` (SQL over a large ledger through the
audit session, beside DuckDB on a native table) and ``projections`` (rebuild, spreading
activation and catch-up lag of the neuron graph and salience index, beside hand-written
sqlite3 + msgspec, scipy.sparse and a latency budget) and ``recall`` (evidence recall on
LoCoMo and BEAM beside rank_bm25, recall latency at 100k memories beside the raw FAISS and
FTS5 calls, HNSW against exact search, and the MiniLM rebuild beside raw sentence-transformers) and
``quality`` (generated probes of what recall serves a user: updates, of people and of
things, copies, unanswerable questions, exact ids, and supersession detection's precision
and recall; beside the goals) and
``embedder`` (all-MiniLM-L6-v2 on ONNX beside sentence-transformers: encode rate, import
time, peak memory, vector agreement, ``engram recall`` as a fresh process) and
``jobs`` (a sleep cycle on 100k neurons / 1M connections and an archival sweep of 100k
memories beside raw sqlite3, cold export beside DuckDB's COPY, the daemon's catch-up lag) and
``learning`` (a scripted multi-agent workload of paraphrased mistakes: repeats merged, rules
served by meaning, refusals kept, under the hash embedder and MiniLM). Engram
and its reference alternate within each repetition; the report gives medians. A missed
target is reported, not an error.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import traceback
from collections.abc import Callable, Iterable

from engram.bench.common import FULL, QUICK, Config, Figure, data_home, log, remove_tree

__all__ = ["DEFAULT_PG", "RECALL_PARTS", "SUITES", "default_embedding_cache", "recall_parts", "run"]

DEFAULT_PG = "postgresql://127.0.0.1:5432/test"
SEED = 20250101
SUITES = (
    "ledger",
    "audit",
    "projections",
    "recall",
    "jobs",
    "packs",
    "agents",
    "learning",
    "embedder",
    "quality",
    "all",
)
#: ``--scale``: the extra, large recall latency store (None: only the 100k one).
SCALES: dict[str, int | None] = {"100k": None, "1m": 1_000_000}
#: The parts of the recall suite ``only`` chooses from, each with the figure it shows when
#: the LoCoMo conversations are absent (skipped, with a notice).
RECALL_PARTS = {
    "quality": "LoCoMo recall@10",
    "beam": "BEAM recall@10",
    "latency": "recall latency",
    "rebuild": "semantic rebuild, MiniLM",
    "scars": "scar recall latency and score bands",
}
#: Parts that run only when named (``--only scars``): the default recall suite stays as it was.
OPT_IN_PARTS = frozenset({"scars"})


def recall_parts(only: Iterable[str] | None) -> tuple[str, ...]:
    """Return the recall parts ``only`` names (comma lists allowed); when empty, the defaults.

    The defaults are every part but :data:`OPT_IN_PARTS`.

    Raises ValueError naming an unknown part; the order is the suite's, whatever the order
    given.
    """
    named = _named(only)
    unknown = sorted(named - set(RECALL_PARTS))
    if unknown:
        raise ValueError(
            f"unknown recall part {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(RECALL_PARTS)})"
        )
    return tuple(
        part for part in RECALL_PARTS if part in named or not (named or part in OPT_IN_PARTS)
    )


def _named(only: Iterable[str] | None) -> set[str]:
    items = [only] if isinstance(only, str) else list(only or ())
    return {part.strip() for item in items for part in item.split(",") if part.strip()}


def default_embedding_cache() -> str:
    """Return where MiniLM vectors are kept between runs: the user's cache directory."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(cache, "engram", "bench-embeddings.db")


def run(
    *,
    suite: str = "all",
    quick: bool = False,
    repeat: int = 5,
    json_path: str | None = None,
    pg_url: str = DEFAULT_PG,
    scratch_dir: str | None = None,
    events: int | None = None,
    locomo: str | None = None,
    beam: str | None = None,
    embedding_cache: str | None = None,
    only: Iterable[str] | None = None,
    scale: str = "100k",
    store_cache: str | None = None,
    modes: Iterable[str] = (),
) -> int:
    """Run the chosen suites, print the table and return the exit code (1 if a step failed).

    Suites whose data is missing (LoCoMo for ``recall``; BEAM for its ``beam`` part) are
    reported as skipped, naming the option that supplies it. ``only`` keeps some parts of
    the recall suite (``quality``, ``beam``, ``latency``, ``rebuild``; comma lists allowed);
    it needs ``suite="recall"``. ``scale``
    ``"1m"`` adds the million-memory latency store (hash vectors; minutes, so opt-in).
    ``store_cache`` keeps the built latency stores in a directory and reuses them.
    ``modes`` keeps some of the quality parts' modes (exact names; rank_bm25 always runs).
    """
    from engram.bench import (
        agents_bench,
        asof_bench,
        audit_bench,
        beam_bench,
        embedder_bench,
        jobs_bench,
        lag_bench,
        learning_bench,
        ledger_bench,
        pack_bench,
        pg_bench,
        projection_bench,
        quality_bench,
        recall_bench,
        recall_latency,
        report,
        scar_bench,
        shred_bench,
    )
    from engram.bench import beam as beam_module
    from engram.bench import locomo as locomo_module

    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r} (known: {', '.join(SUITES)})")
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (known: {', '.join(SCALES)})")
    parts = recall_parts(only)
    if _named(only) and suite != "recall":
        raise ValueError(f"only chooses parts of the recall suite, not of suite {suite!r}")
    sizes = QUICK if quick else FULL
    if events is not None:
        sizes = dataclasses.replace(sizes, audit_events=events)
    if scratch_dir:
        os.makedirs(scratch_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="engram-bench-", dir=scratch_dir or None)
    cache = None if embedding_cache in (None, "", "none") else embedding_cache
    config = Config(
        suite,
        quick,
        repeat,
        json_path,
        pg_url,
        scratch,
        sizes,
        SEED,
        locomo=locomo,
        beam=beam,
        embedding_cache=cache,
        recall_scale=SCALES[scale],
        store_cache=store_cache or None,
        modes=tuple(modes),
    )
    steps: list[tuple[str, Callable[[Config], list[Figure]]]] = []
    if config.suite in ("ledger", "all"):
        steps += [
            ("SQLite batches of 100", ledger_bench.batched),
            ("SQLite one event per append", ledger_bench.single_and_threads),
            ("SQLite replay", ledger_bench.replay),
            ("sealed vs plain", shred_bench.sealing),
            ("PostgreSQL batches of 100", pg_bench.run),
        ]
    if config.suite in ("audit", "all"):
        steps.append(("audit", audit_bench.run))
    if config.suite in ("projections", "all"):
        steps += [
            ("projection rebuild", projection_bench.rebuild),
            ("spreading activation", projection_bench.activation),
            ("catch-up lag", lag_bench.lag),
        ]
    if config.suite in ("agents", "all"):
        steps += [("runner cycles", agents_bench.cycles), ("context frames", agents_bench.contexts)]
    if config.suite in ("jobs", "all"):
        steps += [
            ("sleep cycle", jobs_bench.sleep),
            ("archival sweep", jobs_bench.archival),
            ("cold export", jobs_bench.export),
            ("daemon lag", jobs_bench.lag),
            ("as-of reads", asof_bench.as_of),
        ]
    if config.suite in ("packs", "all"):
        steps.append(("knowledge packs", pack_bench.run))
    if config.suite in ("learning", "all"):
        steps.append(("learning loop", learning_bench.run))
    if config.suite in ("embedder", "all"):
        steps.append(("MiniLM on ONNX", embedder_bench.run))
    if config.suite in ("quality", "all"):
        steps.append(("recall quality probes", quality_bench.quality))
    skipped: list[Figure] = []
    notices: list[str] = []
    if config.suite in ("recall", "all") and "beam" in parts:
        try:
            beam_module.locate(config.beam)
        except beam_module.BeamError as exc:
            notices.append(f"skipping the BEAM figures: {exc}")
            figure = Figure(RECALL_PARTS["beam"], "-", "-", None)
            figure.skipped = "no BEAM data: pass --beam FILE or set ENGRAM_BEAM"
            skipped.append(figure)
            parts = tuple(p for p in parts if p != "beam")
        else:
            steps.append(("BEAM recall quality", beam_bench.quality))
    if config.suite in ("recall", "all") and any(p != "beam" for p in parts):
        try:
            locomo_module.locate(config.locomo)
        except locomo_module.LocomoError:
            where = config.locomo or os.environ.get("ENGRAM_LOCOMO") or locomo_module.DEFAULT_FILE
            notices.append(
                f"skipping the recall figures: no LoCoMo data at {os.path.abspath(where)}; "
                "pass --locomo FILE (or set ENGRAM_LOCOMO)"
            )
            for part in (p for p in parts if p != "beam"):
                figure = Figure(RECALL_PARTS[part], "-", "-", None)
                figure.skipped = "no LoCoMo data: pass --locomo FILE or set ENGRAM_LOCOMO"
                skipped.append(figure)
        else:
            recall_steps = {
                "quality": [("LoCoMo recall quality", recall_bench.quality)],
                "latency": [("recall latency", recall_latency.latency)],
                "rebuild": [
                    ("MiniLM rebuild", recall_latency.rebuild),
                    ("semantic rebuild at scale", recall_latency.rebuild_at_scale),
                ],
                "scars": [("scar recall", scar_bench.latency)],
            }
            # The rebuild at scale fills the lasting cache the latency store then reads.
            for part in ("quality", "rebuild", "latency", "scars"):
                if part in parts:
                    steps += recall_steps[part]
    env = report.environment(config)
    log(
        f"engram bench: suite={config.suite}"
        f"{' (' + ', '.join(parts) + ')' if config.suite == 'recall' else ''} "
        f"repeat={config.repeat} seed={config.seed} "
        f"quick={config.quick} scratch={scratch}\n"
        f"  python {env['python']}, {env['cpus']} CPUs, SQLite {env['sqlite']}, "
        f"DuckDB {env['duckdb']}, eventsourcing {env['eventsourcing'] or 'absent'}"
    )
    for notice in notices:
        log(notice)
    figures: list[Figure] = []
    failed = False
    # Key stores live beside the ledgers (scratch, or the kept stores' cache).
    keys = os.path.join(config.store_cache or scratch, "engram-data")
    try:
        with data_home(keys):
            for label, step in steps:
                try:
                    figures += step(config)
                except Exception as exc:
                    failed = True
                    traceback.print_exc()
                    error = Figure(label, "events/s", "-", None)
                    error.error = f"{type(exc).__name__}: {exc}"
                    figures.append(error)
    except KeyboardInterrupt:
        log("interrupted")
        failed = True
    finally:
        remove_tree(scratch)
    figures += skipped
    print(report.table(figures), flush=True)
    if config.json_path:
        try:
            report.write_json(config.json_path, config, figures)
        except OSError as exc:
            log(f"cannot write {config.json_path}: {exc}")
            return 1
    return 1 if failed else 0
