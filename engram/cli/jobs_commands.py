"""Commands for the daemon and its jobs: run, catch-up, jobs, sleep, sweep, and cold segments.

``engram dream`` and ``engram hygiene`` live in :mod:`engram.cli.dream_commands`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from engram.agents.postproject import routed_lesson_drafter
from engram.agents.reflection import routed_reflector
from engram.cli.app import cli, examples
from engram.cli.base import CliError, Finite, note, open_ledger, opened, output_format, state
from engram.config import Settings
from engram.jobs import (
    JobConfigError,
    JobError,
    JobRunner,
    RunResult,
    cluster_view,
    next_boundary,
)
from engram.jobs.daemon import Daemon
from engram.jobs.dream import DreamJob
from engram.jobs.postproject import PostProjectJob
from engram.jobs.settings import jobs_from_config
from engram.jobs.skills import SkillJob
from engram.jobs.status import liveness, read_status, status_path
from engram.ledger.cold import export_segment, segments, verify_segment
from engram.projections.errors import CatchUpError
from engram.runtime import Memory

_PLAN_COLUMNS = ["kind", "item", "detail"]
_STATUS_COLUMNS = ["name", "checkpoint", "head", "lag", "state"]


@contextlib.contextmanager
def _job_errors() -> Iterator[None]:
    try:
        yield
    except JobConfigError as exc:
        raise click.UsageError(str(exc)) from None
    except JobError as exc:
        raise CliError(str(exc)) from None


def _runner_parts(settings: Settings, memory: Memory | None = None) -> list[Any]:
    """Return the configured jobs; with ``memory``, the reflection job too."""
    config = dict(settings.jobs)
    reflect = dict(config.get("reflect") or {})
    reflect.setdefault("after", settings.reflect_every)
    reflect.setdefault("importance", settings.reflect_importance)
    config["reflect"] = reflect
    with _job_errors():
        if memory is None:
            return list(jobs_from_config(config, memory_for=_unused))
        jobs = list(
            jobs_from_config(
                config,
                memory_for=memory.agent,
                completer=routed_reflector(settings.routing or None),
            )
        )
        _equip(jobs, settings, memory)
        return jobs


def _equip(jobs: list[Any], settings: Settings, memory: Memory) -> None:
    """Give the jobs that need them the memory's embedder and the routed lesson drafter."""
    for job in jobs:
        if isinstance(job, DreamJob | SkillJob | PostProjectJob):
            job.embedder = memory.embedder  # lessons compared by meaning (ADR 0056)
        if isinstance(job, PostProjectJob):
            job.completer = routed_lesson_drafter(settings.routing or None)  # ADR 0080


def _unused(agent: str) -> Any:
    raise JobError(f"the reflection job of {agent!r} runs only in engram run")


@cli.command(
    epilog=examples(
        "engram run",
        "engram run --ledger postgresql://db.example/engram --beat 10",
        "engram run --once        # close each due window, then exit (cron)",
    )
)
@click.option(
    "--beat",
    type=Finite(min=0.1),
    default=5.0,
    show_default=True,
    help="Seconds between liveness records.",
)
@click.option(
    "--poll",
    type=Finite(min=0.05),
    default=0.5,
    show_default=True,
    help="Longest wait for new events before checking triggers again (seconds).",
)
@click.option("--once", is_flag=True, help="Run each job's due window once and exit.")
def run(beat: float, poll: float, once: bool) -> None:
    """Run the daemon in the foreground: follow the ledger and run the scheduled jobs.

    Keeps every projection caught up with the ledger and runs sleep (consolidation, hourly),
    archive (daily), dream (nightly rule suggestions from repeated scars), hygiene
    (duplicate memories and tier-1 rules, every 30 days), skills (daily skill proposals
    from patterns recurring across tasks), postproject (hourly lessons of closed projects)
    and reflect (each agent, when due; hourly) on
    their timers ([jobs.*] in the config file). Timers fire at multiples of each period
    since the Unix epoch (UTC midnight for a daily job); a window that closed while no
    daemon ran is run at start. Other daemons of the same ledger share the work through
    leases: a fire that finds a job's lease taken is retried within seconds until the window
    is done. SIGTERM or Ctrl-C stops it cleanly (exit 0) once a running window is done.
    Quiet by default: -v logs each window.
    """
    out = state()
    settings = out.settings()
    _runner_parts(settings)  # a bad [jobs] table is a usage error before anything opens
    with opened(settings, actor="job", catch_up=False) as memory, _job_errors():
        jobs = _runner_parts(settings, memory)
        runner = JobRunner(memory.ledger, memory.engine, jobs, rate=settings.decay_rate)
        if once:
            memory.engine.catch_up()
            for job in jobs:
                _summary(runner.run(job.name))
            return
        Daemon(runner, settings.projection_store, beat=beat, poll=poll).run_forever()


def _summary(result: RunResult, fmt: str = "table", *, rendered: bool = False) -> None:
    """Print what a run did: a line on stdout under the table format; under a machine format
    (json, jsonl, csv), stdout keeps only records, so the line goes to stderr after the
    ``rendered`` records, or the run is printed as one record of its own."""
    window = result.window
    span = "" if window is None else f" {window.start.isoformat()} .. {window.end.isoformat()}"
    counts = ", ".join(f"{k} {v}" for k, v in result.plan.counts.items())
    line = f"{result.job}: {result.outcome}{span}" + (f" ({counts})" if counts else "")
    if fmt == "table":
        state().echo(line)
    elif rendered:
        note(line)
    else:
        record = {
            "job": result.job,
            "outcome": result.outcome,
            "window_start": None if window is None else window.start.isoformat(),
            "window_end": None if window is None else window.end.isoformat(),
            **result.plan.counts,
        }
        state().render([record], fmt, columns=list(record))


@cli.command(
    name="catch-up",
    epilog=examples("engram catch-up", "engram catch-up --digest --format json"),
)
@click.option("--digest", is_flag=True, help="Also print each projection's sha256 digest.")
@output_format()
def catch_up(digest: bool, fmt: str) -> None:
    """Catch this node's projections up to the ledger's head, without rebuilding.

    Applies the events appended since each projection's checkpoint (a node that was down,
    or whose daemon was killed, catches up from where it stopped), with progress on a
    terminal, then prints the status. A rebuild that was interrupted is resumed and
    finished, as the next write would (ADR 0183). A projection that needs a rebuild (its
    code changed) is left as it is and named: exit 1, run engram rebuild.
    """
    out = state()
    settings = out.settings()
    with opened(settings, catch_up=False) as memory:
        engine = memory.engine
        rows = engine.status()
        stale = [r.name for r in rows if r.state == "stale"]
        building = [r.name for r in rows if r.state == "rebuilding"]
        live = [r for r in rows if r.name not in stale]
        head = memory.ledger.head()
        behind = max((head - r.checkpoint for r in live), default=0)
        if live and (behind > 0 or building):
            names = [r.name for r in live]
            bar = out.progress()
            with _job_errors(), _catch_up_errors():
                if bar is None:
                    engine.catch_up(upto=head, names=names)
                else:
                    with bar.start("catch-up", behind):
                        engine.catch_up(upto=head, names=names, progress=bar)
        note(f"caught up to position {head:,} (the furthest behind was {behind:,} events)")
        out.render(
            (r._asdict() for r in engine.status(digest=digest)),
            fmt,
            table_columns=_STATUS_COLUMNS + (["digest"] if digest else []),
            widths={"digest": 64},
        )
    if building:
        note(f"resumed the interrupted rebuild of {', '.join(building)}")
    if stale:
        note(f"not caught up: {', '.join(stale)} need a rebuild (engram rebuild {' '.join(stale)})")
        raise click.exceptions.Exit(1)


@contextlib.contextmanager
def _catch_up_errors() -> Iterator[None]:
    try:
        yield
    except CatchUpError as exc:
        raise CliError(f"catch-up stopped: {exc}") from None


@cli.command(name="jobs", epilog=examples("engram jobs", "engram jobs --format json"))
@output_format()
def jobs_status(fmt: str) -> None:
    """Show each job's schedule, its last window and the node that ran it, and the daemon here.

    The windows are the cluster's, read from the ledger (job.completed, which names the node
    that appended it): the last window's end, when it was appended and by which node, and
    how many windows each node ran. Timers fire at multiples of each period since the Unix
    epoch (next_boundary). The daemon here, its last outcome per job and its next runs
    come from its liveness record in the projection store.
    """
    out = state()
    settings = out.settings()
    jobs = _runner_parts(settings)
    record = read_status(status_path(settings.projection_store))
    alive = liveness(record)
    now = datetime.now(UTC)
    rows = []
    with open_ledger(settings, readonly=True) as ledger:
        history = cluster_view(ledger, [job.name for job in jobs])
    for job, seen in zip(jobs, history, strict=True):
        done = seen.last
        live = (record or {}).get("jobs", {}).get(job.name, {})
        last = live.get("last") or {}
        rows.append(
            {
                "job": job.name,
                "every": str(job.every),
                "last_window_end": None if done is None else done.window_end,
                "last_trigger": None if done is None else done.trigger,
                "ran_by": seen.ran_by,
                "ran_at": seen.last_at,
                "windows": seen.windows,
                "nodes": ", ".join(f"{node} ({n})" for node, n in seen.nodes.items()) or None,
                "last_counts": None if done is None else done.counts,
                "last_duration_ms": None if done is None else done.duration_ms,
                "outcome": last.get("outcome") or ("ok" if done else None),
                "next_boundary": next_boundary(now, job.every),
                "next_run": live.get("next_run") if alive.state == "running" else None,
                "daemon": f"{alive.state}: {alive.detail}",
            }
        )
    out.render(
        rows,
        fmt,
        table_columns=[
            "job",
            "every",
            "last_window_end",
            "ran_by",
            "ran_at",
            "windows",
            "outcome",
            "next_run",
            "daemon",
        ],
        widths={"daemon": 60, "last_counts": 60, "nodes": 80},
    )


def run_by_hand(name: str, dry_run: bool, fmt: str, *, lines: bool = False) -> RunResult:
    """Run job ``name``'s window up to now by hand; print its plan in a dry run (or ``lines``)."""
    out = state()
    settings = out.settings()
    jobs = _runner_parts(settings)
    with opened(settings, actor="job", catch_up=False) as memory, _job_errors():
        _equip(jobs, settings, memory)
        runner = JobRunner(memory.ledger, memory.engine, jobs, rate=settings.decay_rate)
        result = runner.run(name, trigger="hand", dry_run=dry_run)
    if dry_run:
        out.render(result.plan.lines, fmt, columns=_PLAN_COLUMNS)
        counts = ", ".join(f"{k} {v}" for k, v in result.plan.counts.items())
        note(f"dry run: nothing appended ({counts or 'no window due'})")
        return result
    if lines:
        out.render(result.plan.lines, fmt, columns=_PLAN_COLUMNS)
    _summary(result, fmt, rendered=lines)
    if result.outcome == "leased":
        note(f"another runner holds the {name} lease: try again when it is done")
        raise click.exceptions.Exit(1)
    return result


@cli.command(epilog=examples("engram sleep --dry-run", "engram sleep"))
@click.option("--dry-run", is_flag=True, help="Print the reweights that would be appended.")
@output_format()
def sleep(dry_run: bool, fmt: str) -> None:
    """Consolidate now: strengthen connections between strongly co-active neurons.

    The window runs from the last sleep's end to now. Candidates are neurons at or above the
    threshold salience, activated within it; each connection between two of them grows by
    the boost (capped at 65535), appended as connection.reweighted, then job.completed.
    """
    run_by_hand("sleep", dry_run, fmt)


@cli.command(epilog=examples("engram sweep --dry-run", "engram sweep --format csv --dry-run"))
@click.option("--dry-run", is_flag=True, help="Print what would be archived.")
@output_format()
def sweep(dry_run: bool, fmt: str) -> None:
    """Archive now what has gone quiet: dormant neurons, memories and scars never recalled.

    Neurons activated fewer than min_activations times and older than neuron_age get
    neuron.archived; memories never recalled and older than memory_age get memory.archived;
    scars never recalled and older than scar_age get scar.archived. They leave every index;
    the ledger keeps them.
    """
    run_by_hand("archive", dry_run, fmt)


@cli.group(epilog=examples("engram cold export --before 1000000", "engram cold list"))
def cold() -> None:
    """Cold segments: ledger prefixes copied to zstd Parquet for audit.

    engram sql reads exported positions from the segments and the rest from the ledger, as
    one events view. The ledger keeps every event; a segment records the chain's hash at its
    end, so 'engram cold verify' checks the copy and the live ledger against each other.
    """


@cold.command(name="export", epilog=examples("engram cold export --before 1000000"))
@click.option(
    "--before",
    type=click.IntRange(min=2),
    required=True,
    help="Export the positions below this one (after the last segment); past the head, "
    "everything through the head.",
)
@click.option("--dir", "directory", help="Where segments go (default: beside the ledger).")
def cold_export(before: int, directory: str | None) -> None:
    """Export the positions after the last segment and below --before as a new segment."""
    out = state()
    settings = out.settings()
    with open_ledger(settings, readonly=True) as ledger:
        head = ledger.head()
        if before > head + 1:
            note(f"--before {before} is past the ledger's head ({head}): exporting through it")
            before = head + 1
        segment = export_segment(ledger, directory or settings.cold_directory, before)
    out.echo(
        f"exported positions {segment.first}..{segment.last} ({segment.rows} events) to"
        f" {segment.path}; chain head {segment.head_hash}"
    )


@cold.command(name="list", epilog=examples("engram cold list --format json"))
@click.option("--dir", "directory", help="Where segments are (default: beside the ledger).")
@output_format()
def cold_list(directory: str | None, fmt: str) -> None:
    """List the cold segments: positions, rows, chain head, file."""
    out = state()
    folder = directory or out.settings().cold_directory
    found = segments(folder) if Path(folder).is_dir() else []
    out.render(
        (
            {
                "first": s.first,
                "last": s.last,
                "rows": s.rows,
                "head_hash": s.head_hash,
                "path": s.path,
            }
            for s in found
        ),
        fmt,
        columns=["first", "last", "rows", "head_hash", "path"],
        widths={"head_hash": 64, "path": 100},
    )


@cold.command(name="verify", epilog=examples("engram cold verify"))
@click.option("--dir", "directory", help="Where segments are (default: beside the ledger).")
def cold_verify(directory: str | None) -> None:
    """Recompute each segment's chain from its file, then verify the ledger from the last head.

    Exit 1 naming the first bad segment or position: a changed file, or a live ledger whose
    prefix no longer hashes to the head a segment recorded.
    """
    out = state()
    settings = out.settings()
    folder = directory or settings.cold_directory
    found = segments(folder) if Path(folder).is_dir() else []
    if not found:
        raise CliError(f"no cold segments in {folder}")
    previous = None
    for segment in found:
        report = verify_segment(segment, previous)
        out.echo(f"{Path(segment.path).name}: {report}")
        if not report.ok:
            raise click.exceptions.Exit(1)
        previous = segment
    last = found[-1]
    with open_ledger(settings, readonly=True) as ledger:
        report = ledger.verify(expect_head=last.last, expect_hash=last.head_hash)
    out.echo(f"ledger from segment head {last.last}: {report}")
    if not report.ok:
        raise click.exceptions.Exit(1)
