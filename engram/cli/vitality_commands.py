"""The brain's vital signs from the command line: ``engram vitality``."""

from __future__ import annotations

from datetime import datetime, timedelta

import click

from engram.cli.app import cli, examples
from engram.cli.base import Finite, as_of_option, note, opened, output_format, state

COLUMNS = (
    "at", "neurons", "active_neurons", "mean_salience", "connections", "density",
    "inhibition", "growth", "working_set", "mean_resonance", "coverage", "drift",
)  # fmt: skip


#: The longest growth window, in hours (over a century; a timedelta holds no more than
#: 2.7 million years).
MAX_WINDOW_HOURS = 1e6


@cli.command(
    epilog=examples(
        "engram vitality",
        "engram vitality --as-of 2026-05-01T00:00:00Z --format json",
        "engram vitality --record    # keep it: SELECT * FROM vitality_measured in engram sql",
    )
)
@as_of_option
@click.option(
    "--window",
    type=Finite(min=0, min_open=True, max=MAX_WINDOW_HOURS),
    default=24.0,
    show_default=True,
    help="Hours back that count as growth.",
)
@click.option("--record", is_flag=True, help="Append the measurement (vitality.measured).")
@output_format()
def vitality(as_of: datetime | None, window: float, record: bool, fmt: str) -> None:
    """Print the neuron graph's vital signs as of a time (default: now).

    Active neurons (salience at least 1%), mean salience, connection density, inhibition
    balance (the inhibiting share of connection weight) and growth (neurons created in the
    window). With --record the measurement becomes an event, so the series is SQL. The
    working set: how many neurons resonate (activated in the last waves, decaying per wave),
    their mean resonance, coverage (their share of the live neurons) and drift (the share
    of the set the latest wave changed).
    """
    out = state()
    with opened(out.settings()) as memory:
        signs = memory.network.vitality(as_of=as_of, window=timedelta(hours=window), record=record)
        working = memory.network.working_set(as_of=as_of)
    if record:
        note("recorded as vitality.measured")
    row = signs._asdict()
    row["at"] = signs.at.isoformat()
    row["working_set"] = working.size
    row["mean_resonance"], row["coverage"], row["drift"] = (
        working.mean_resonance,
        working.coverage,
        working.drift,
    )
    for key in ("mean_salience", "density", "inhibition", "mean_resonance", "coverage", "drift"):
        row[key] = round(row[key], 6)
    out.render([row], fmt, columns=COLUMNS)
