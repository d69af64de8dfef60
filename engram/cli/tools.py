"""Commands that bring their own data: bench and demo."""

from __future__ import annotations

import click

from engram.bench import SUITES
from engram.cli.app import cli, examples
from engram.cli.base import state


@cli.command(
    epilog=examples(
        "engram bench --quick",
        "engram bench --suite recall --locomo locomo-dev.json --json out.json",
        "engram bench --suite recall --only quality --locomo locomo-dev.json",
        "engram bench --suite recall --only beam --beam beam-100k-dev.json",
        "engram bench --suite recall --only latency --scale 1m --locomo locomo-dev.json",
        "engram bench --compare docs/bench/ledger-baseline.json new.json",
        "engram bench --suite learning",
    )
)
@click.option(
    "--suite",
    type=click.Choice(SUITES),
    default="all",
    show_default=True,
    help="Which figures to measure.",
)
@click.option("--quick", is_flag=True, help="Small sizes for a smoke run (under a minute).")
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    metavar="N",
    help="Repetitions per figure; the report gives medians.",
)
@click.option(
    "--json", "json_path", metavar="PATH", help="Also write the results, samples included, as JSON."
)
@click.option(
    "--pg",
    "pg_url",
    metavar="URL",
    envvar="ENGRAM_BENCH_PG",
    show_envvar=True,
    default="postgresql://127.0.0.1:5432/test",
    show_default=True,
    help="PostgreSQL for the PostgreSQL figure; skipped when unreachable.",
)
@click.option(
    "--dir",
    "scratch_dir",
    metavar="DIR",
    help="Scratch directory for the databases (default: a temporary one, removed).",
)
@click.option(
    "--events",
    type=click.IntRange(min=1),
    metavar="N",
    help="Events in the audit ledger (default 1,000,000; 30,000 with --quick).",
)
@click.option(
    "--locomo",
    metavar="FILE",
    envvar="ENGRAM_LOCOMO",
    show_envvar=True,
    help="The LoCoMo conversations for the recall figures (default: "
    "../shared/data/locomo/locomo-dev.json beside the repository); without it "
    "they are skipped.",
)
@click.option(
    "--beam",
    metavar="FILE",
    envvar="ENGRAM_BEAM",
    show_envvar=True,
    help="The BEAM chats for the long-memory recall figures (default: "
    "../shared/data/beam/beam-100k-dev.json beside the repository); without it "
    "they are skipped.",
)
@click.option(
    "--embedding-cache",
    metavar="FILE",
    help="A SQLite file keeping MiniLM vectors between runs ('none': no lasting "
    "cache; default: ~/.cache/engram/bench-embeddings.db).",
)
@click.option(
    "--only",
    metavar="PART",
    multiple=True,
    help="With --suite recall, measure only these parts: quality (LoCoMo), beam, latency, "
    "rebuild, scars (repeatable or a comma list; default: all but scars, which runs only "
    "when named).",
)
@click.option(
    "--scale",
    type=click.Choice(["100k", "1m"]),
    default="100k",
    show_default=True,
    help="With the recall suite, 1m adds recall latency at a million memories (hash "
    "vectors; the store takes minutes to build, so it is opt-in).",
)
@click.option(
    "--mode",
    "modes",
    metavar="NAME",
    multiple=True,
    help="With the recall quality parts (quality, beam), run only these modes, by their "
    "names in the report (repeatable; e.g. 'lexical', 'minilm', 'hybrid (minilm)', "
    "'lexical, 2% pruning', 'minilm, whole text'); rank_bm25 always runs.",
)
@click.option(
    "--store-cache",
    metavar="DIR",
    help="Keep the recall latency stores (ledger, indexes, HNSW file) in DIR and reuse "
    "them in later runs; their build figures are then the ones recorded when built.",
)
@click.option(
    "--compare",
    nargs=2,
    metavar="OLD.json NEW.json",
    help="Measure nothing: compare two runs written by --json, figure by figure, with each "
    "figure's spread and whether its change stands out of the noise.",
)
def bench(
    suite: str,
    quick: bool,
    repeat: int,
    json_path: str | None,
    pg_url: str,
    scratch_dir: str | None,
    events: int | None,
    locomo: str | None,
    beam: str | None,
    embedding_cache: str | None,
    only: tuple[str, ...],
    scale: str,
    store_cache: str | None,
    compare: tuple[str, str] | None,
    modes: tuple[str, ...],
) -> int:
    """Measure engram beside references; print the ratios.

    Suites: ledger (appends and replay against raw sqlite3, eventsourcing and psycopg),
    audit (SQL over a large ledger beside native DuckDB), projections (rebuild, spreading
    activation, catch-up lag) and recall (LoCoMo and BEAM recall, latency at 100k memories,
    the MiniLM rebuild). Engram and its reference alternate within each repetition; the report
    gives medians. Exit 1 when a step failed; a missed target is reported, not an error.
    """
    from engram import bench as benchmarks

    if compare:
        from engram.bench.compare import compare_files

        try:
            click.echo(compare_files(*compare))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--compare") from exc
        return 0
    try:
        benchmarks.recall_parts(only)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--only") from exc
    if any(part.strip() for item in only for part in item.split(",")) and suite != "recall":
        raise click.BadParameter(
            f"chooses parts of the recall suite: pass --suite recall (not {suite!r})",
            param_hint="--only",
        )
    return benchmarks.run(
        suite=suite,
        quick=quick,
        repeat=repeat,
        json_path=json_path,
        pg_url=pg_url,
        scratch_dir=scratch_dir,
        events=events,
        locomo=locomo,
        beam=beam,
        embedding_cache=embedding_cache or benchmarks.default_embedding_cache(),
        only=only,
        scale=scale,
        store_cache=store_cache,
        modes=modes,
    )


@cli.command(epilog=examples("engram demo", "engram demo --dir /tmp/engram-demo"))
@click.option(
    "--dir",
    "directory",
    metavar="DIR",
    help="Directory for the demo ledger (default: a new temporary directory).",
)
def demo(directory: str | None) -> int:
    """Run the multi-agent demo on a fresh SQLite ledger.

    Three agents share a ledger: they observe, plan, signal each other and meet optimistic
    concurrency; two recall; stimuli spread activation; then the hash chain is verified and
    the session is audited in SQL.
    """
    from engram.demo import run_demo

    return run_demo(directory, state().out)
