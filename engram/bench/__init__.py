"""`engram bench`: engram's performance figures, each measured against a reference in the same run.

Suites: ``ledger`` (SQLite appends and replay against raw sqlite3 and eventsourcing, and
PostgreSQL appends against raw psycopg), ``audit`` (SQL over a large ledger through the
audit session, beside DuckDB on a native table) and ``projections`` (rebuild, spreading
activation and catch-up lag of the neuron graph and salience index, beside hand-written
sqlite3 + msgspec, scipy.sparse and a latency budget) and ``recall`` (evidence recall on
LoCoMo beside rank_bm25, recall latency at 100k memories beside the raw FAISS and FTS5 calls,
HNSW against exact search, and the MiniLM rebuild beside raw sentence-transformers). Engram
and its reference alternate within each repetition; the report gives medians. A missed
target is reported, not an error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import traceback
from collections.abc import Callable

from engram.bench.common import FULL, QUICK, Config, Figure, log, remove_tree

__all__ = ["add_arguments", "run"]

DEFAULT_PG = "postgresql://127.0.0.1:5432/test"
SEED = 20250101


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of `engram bench` to ``parser``."""
    parser.add_argument(
        "--suite",
        choices=("ledger", "audit", "projections", "recall", "all"),
        default="all",
        help="which figures to measure (default: all)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes for a smoke run (under a minute)"
    )
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=5,
        metavar="N",
        help="repetitions per figure; the report gives medians (default: 5)",
    )
    parser.add_argument(
        "--json",
        dest="json_path",
        metavar="PATH",
        help="also write the results, samples included, as JSON",
    )
    parser.add_argument(
        "--pg",
        dest="pg_url",
        metavar="URL",
        default=os.environ.get("ENGRAM_BENCH_PG", DEFAULT_PG),
        help="PostgreSQL for the PostgreSQL figure (default: $ENGRAM_BENCH_PG "
        f"or {DEFAULT_PG}); skipped when unreachable",
    )
    parser.add_argument(
        "--dir",
        dest="scratch_dir",
        metavar="DIR",
        help="scratch directory for the databases (default: a temporary "
        "directory, removed afterwards)",
    )
    parser.add_argument(
        "--events",
        type=_positive,
        metavar="N",
        help="events in the audit ledger (default: 1,000,000; 30,000 with --quick)",
    )
    parser.add_argument(
        "--locomo",
        metavar="PATH",
        help="the LoCoMo conversations for the recall figures (default: $ENGRAM_LOCOMO or "
        "../shared/data/locomo/locomo-dev.json beside the repository)",
    )
    parser.add_argument(
        "--embedding-cache",
        metavar="PATH",
        default=os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
            "engram",
            "bench-embeddings.db",
        ),
        help="a SQLite file keeping MiniLM vectors between runs, so the 100k-memory store "
        "is embedded once (default: %(default)s; 'none' for no lasting cache)",
    )


def _positive(text: str) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run the chosen suites, print the table and return the exit code (1 if a step failed)."""
    from engram.bench import (
        audit_bench,
        lag_bench,
        ledger_bench,
        pg_bench,
        projection_bench,
        recall_bench,
        recall_latency,
        report,
    )

    sizes = QUICK if args.quick else FULL
    if args.events is not None:
        sizes = dataclasses.replace(sizes, audit_events=args.events)
    if args.scratch_dir:
        os.makedirs(args.scratch_dir, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="engram-bench-", dir=args.scratch_dir or None)
    cache = None if args.embedding_cache in (None, "", "none") else args.embedding_cache
    config = Config(
        args.suite,
        args.quick,
        args.repeat,
        args.json_path,
        args.pg_url,
        scratch,
        sizes,
        SEED,
        locomo=args.locomo,
        embedding_cache=cache,
    )
    steps: list[tuple[str, Callable[[Config], list[Figure]]]] = []
    if config.suite in ("ledger", "all"):
        steps += [
            ("SQLite batches of 100", ledger_bench.batched),
            ("SQLite one event per append", ledger_bench.single_and_threads),
            ("SQLite replay", ledger_bench.replay),
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
    if config.suite in ("recall", "all"):
        steps += [
            ("LoCoMo recall quality", recall_bench.quality),
            ("recall latency", recall_latency.latency),
            ("MiniLM rebuild", recall_latency.rebuild),
        ]
    env = report.environment(config)
    log(
        f"engram bench: suite={config.suite} repeat={config.repeat} seed={config.seed} "
        f"quick={config.quick} scratch={scratch}\n"
        f"  python {env['python']}, {env['cpus']} CPUs, SQLite {env['sqlite']}, "
        f"DuckDB {env['duckdb']}, eventsourcing {env['eventsourcing'] or 'absent'}"
    )
    figures: list[Figure] = []
    failed = False
    try:
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
    print(report.table(figures), flush=True)
    if config.json_path:
        try:
            report.write_json(config.json_path, config, figures)
        except OSError as exc:
            log(f"cannot write {config.json_path}: {exc}")
            return 1
    return 1 if failed else 0
