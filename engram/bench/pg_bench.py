"""The PostgreSQL figure: batched durable appends vs raw psycopg ``executemany``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from engram.bench.common import Config, Figure, alternate, log, repeat_runs
from engram.bench.ledger_bench import GOALS
from engram.bench.workload import RawRows, Workload
from engram.ledger import Ledger

BATCH = 100
_DDL = """CREATE TABLE {s}.events (
    position BIGINT NOT NULL PRIMARY KEY,
    id UUID NOT NULL,
    stream TEXT NOT NULL,
    version BIGINT NOT NULL,
    kind TEXT NOT NULL,
    schema INTEGER NOT NULL,
    actor TEXT NOT NULL,
    at TIMESTAMP WITH TIME ZONE NOT NULL,
    payload BYTEA NOT NULL,
    causation_id UUID,
    correlation_id UUID,
    hash BYTEA NOT NULL,
    CONSTRAINT events_id_key UNIQUE (id),
    CONSTRAINT events_stream_version_key UNIQUE (stream, version)
)"""
_INSERT = (
    "INSERT INTO {s}.events VALUES "
    "(%s, %s::uuid, %s, %s, %s, %s, %s, %s::timestamptz, %s, %s::uuid, %s::uuid, %s)"
)


def unreachable(url: str) -> str | None:
    """Return why the server cannot be used, or None when it answers."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"PostgreSQL at {url} is unreachable: {str(exc).strip().splitlines()[0]}"
    return None


@contextmanager
def _schema(url: str, name: str) -> Iterator[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


@contextmanager
def _engram(url: str, schema: str) -> Iterator[Ledger]:
    with _schema(url, schema):
        ledger = Ledger.open(url, pg_schema=schema, durability="full")
        try:
            yield ledger
        finally:
            ledger.close()


@contextmanager
def _raw(url: str, schema: str) -> Iterator[psycopg.Connection[Any]]:
    with _schema(url, schema), psycopg.connect(url) as conn:
        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(_DDL.format(s=schema))
        conn.commit()
        yield conn


def run(config: Config) -> list[Figure]:
    """Measure the PostgreSQL figure, or skip it with the reason."""
    chunks = max(1, min(20, config.sizes.pg_events // (BATCH * 5)))
    per_chunk = config.sizes.pg_events // (chunks * BATCH) * BATCH
    n = chunks * per_chunk
    figure = Figure(
        f"PostgreSQL append, batches of {BATCH}, durable",
        "events/s",
        "raw psycopg",
        GOALS["pg_append_vs_raw"],
        note="raw: executemany of the same rows, one transaction per 100, identical table in "
        "a fresh schema; synchronous_commit=on on both",
    )
    why_not = unreachable(config.pg_url)
    if why_not is not None:
        log(f"PostgreSQL skipped: {why_not}")
        figure.skipped = why_not
        return [figure]
    log(f"PostgreSQL, batches of {BATCH}, durable: {n:,} events per repetition")
    events = Workload(config.seed + 3).events(n)
    prefix = f"engram_bench_{os.getpid()}"

    def one_repetition() -> dict[str, float]:
        url = config.pg_url
        with _engram(url, f"{prefix}_e") as ledger, _raw(url, f"{prefix}_r") as conn:
            rows = RawRows(events)
            insert = _INSERT.format(s=f"{prefix}_r")

            def engram_step(i: int) -> None:
                for s in range(i * per_chunk, (i + 1) * per_chunk, BATCH):
                    ledger.append(events[s : s + BATCH])

            def raw_step(i: int) -> None:
                for s in range(i * per_chunk, (i + 1) * per_chunk, BATCH):
                    batch: list[tuple[Any, ...]] = rows.take(s, s + BATCH)
                    with conn.cursor() as cur:
                        cur.executemany(insert, batch)
                    conn.commit()

            spent = alternate(chunks, [("engram", engram_step), ("raw", raw_step)])
        return {name: n / seconds for name, seconds in spent.items()}

    samples = repeat_runs(config.repeat, one_repetition, "PostgreSQL")
    figure.engram_samples, figure.reference_samples = samples["engram"], samples["raw"]
    return [figure]
