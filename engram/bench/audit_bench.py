"""Audit figures: SQL over a large ledger through the audit session, beside DuckDB native."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import duckdb

from engram.bench.common import Config, Figure, interleave, log
from engram.bench.ledger_bench import build_ledger
from engram.bench.workload import MIX, Workload
from engram.ledger import Ledger
from engram.ledger.audit import AuditSession, open_audit
from engram.ledger.catalog import KINDS

QUERIES = {
    "count by kind": "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind",
    "payload field": "SELECT avg(strength) AS mean, count(*) AS n FROM neuron_activated "
    "WHERE strength > 0.5",
}
# The same typed shape the audit session's views give, materialised natively.
_COPY = """CREATE TABLE events AS SELECT
    CAST(position AS BIGINT) AS position, CAST(id AS VARCHAR) AS id, stream,
    CAST(version AS BIGINT) AS version, kind, CAST("schema" AS INTEGER) AS "schema",
    actor, CAST("at" AS TIMESTAMPTZ) AS "at", CAST(decode(payload) AS JSON) AS payload,
    CAST(causation_id AS VARCHAR) AS causation_id,
    CAST(correlation_id AS VARCHAR) AS correlation_id, lower(hex(hash)) AS hash
    FROM src.events ORDER BY position"""
_ACTIVATED = """CREATE VIEW neuron_activated AS SELECT position, id, stream, version, actor, "at",
    CAST(json_extract_string(payload, '/id') AS VARCHAR) AS payload_id,
    CAST(json_extract_string(payload, '/strength') AS DOUBLE) AS strength,
    CAST(json_extract_string(payload, '/cause') AS VARCHAR) AS cause
    FROM events WHERE kind = 'neuron.activated'"""


def _sqlite_scanner() -> str:
    spec = importlib.util.find_spec("duckdb_extension_sqlite_scanner")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("duckdb-extension-sqlite-scanner is not installed")
    root = Path(next(iter(spec.submodule_search_locations))) / "extensions"
    return str(root / f"v{duckdb.__version__}" / "sqlite_scanner.duckdb_extension")


def native_copy(path: str) -> tuple[duckdb.DuckDBPyConnection, float]:
    """Copy the ledger's rows into an in-memory DuckDB table; return it and the seconds taken."""
    con = duckdb.connect(":memory:")
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    con.execute(f"LOAD '{_sqlite_scanner()}'")
    start = time.perf_counter()
    con.execute(f"ATTACH '{path}' AS src (TYPE sqlite, READ_ONLY)")
    con.execute(_COPY)
    con.execute("DETACH src")
    con.execute(_ACTIVATED)
    return con, time.perf_counter() - start


def _timer(run: Callable[[], object]) -> Callable[[], float]:
    def timed() -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    return timed


def run(config: Config) -> list[Figure]:
    """Generate the audit ledger, then time each query through engram and on DuckDB native."""
    n = config.sizes.audit_events
    path = os.path.join(config.scratch, "audit.db")
    workload = Workload(config.seed + 4)
    seconds = build_ledger(path, workload.events, n, f"audit: generating {n:,} events")
    log(
        f"  generated {n:,} events in {seconds:.1f} s ({n / seconds:,.0f} events/s including "
        "making the payloads; Ledger.append of 1000 per call, durability='fast')"
    )
    ledger = Ledger.open(path)
    try:
        target = ledger.audit_target()
    finally:
        ledger.close()
    kinds = {k: KINDS[k] for k in MIX}
    start = time.perf_counter()
    session: AuditSession = open_audit(target, kinds=kinds)
    opened = time.perf_counter() - start
    log(f"  audit session opened in {opened:.2f} s; copying rows into DuckDB…")
    native, copied = native_copy(path)
    log(f"  copied into a native DuckDB table in {copied:.1f} s")
    figures: list[Figure] = []
    try:
        for name, sql in QUERIES.items():
            expected = session.query(sql).rows
            got = native.execute(sql).fetchall()
            same = _same(expected, got)
            figure = Figure(
                f"audit {n:,} events: {name}",
                "s",
                "DuckDB native table",
                None,
                note=f"{sql}; engram via open_audit (sqlite scanner, session open "
                f"{opened:.2f} s); native copy took {copied:.1f} s"
                + ("" if same else "; RESULTS DIFFER"),
            )
            samples = interleave(
                config.repeat,
                [
                    ("engram", _timer(partial(session.query, sql))),
                    ("native", _timer(partial(_fetch_all, native, sql))),
                ],
                f"audit {name}",
            )
            figure.engram_samples, figure.reference_samples = samples["engram"], samples["native"]
            if not same:
                figure.error = f"engram and DuckDB disagree: {expected[:3]} vs {got[:3]}"
            figures.append(figure)
    finally:
        session.close()
        native.close()
    return figures


def _fetch_all(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[object, ...]]:
    return con.execute(sql).fetchall()


def _same(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b, strict=True):
        for va, vb in zip(ra, rb, strict=True):
            if isinstance(va, float) and isinstance(vb, float):
                if abs(va - vb) > 1e-9 * max(1.0, abs(va)):
                    return False
            elif va != vb:
                return False
    return True
