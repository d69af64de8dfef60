"""Render the figures: a plain-text table with notes, and a JSON document."""

from __future__ import annotations

import json
import os
import platform
import sqlite3
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from engram.bench.common import Config, Figure


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit in ("recall", "share"):  # fractions: recall@k, a share of cases right
        return f"{value:.3f}"
    if unit == "distinct":  # distinct items in a result
        return f"{value:.1f}"
    if unit == "MiB":
        return f"{value:,.1f} MiB"
    if unit == "MB":
        return f"{value:,.0f} MB"
    if unit == "|Δ|":
        return f"{value:.1e}"
    return f"{value:,.0f}/s"


def _ratio(figure: Figure) -> str:
    ratio = figure.ratio
    return "-" if ratio is None else f"{ratio:.2f}x"


def _target(figure: Figure) -> str:
    if figure.target is None:
        return "report"
    return f">= {figure.target:g}x" if figure.target != 1.0 else "> 1x"


def table(figures: list[Figure]) -> str:
    """Return the final table, then one note per figure (reference details, skips, errors)."""
    header = ["figure", "engram", "reference", "against", "ratio", "target", "result"]
    rows = [
        [
            f.name,
            _value(f.engram, f.unit),
            _value(f.reference, f.unit),
            f.reference_name,
            _ratio(f),
            _target(f),
            f.verdict,
        ]
        for f in figures
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    right = {1, 2, 4}

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(header), rule, *map(line, rows), rule]
    timed = [f for f in figures if f.unit != "recall" and f.engram_samples]
    recall = any(f.unit == "recall" and f.engram_samples for f in figures)
    if timed or not recall:
        out.append(
            "values: medians of "
            f"{_repeats(timed)} interleaved repetitions; ratio: median over repetitions of "
            "engram speed / reference speed in that repetition (> 1: engram is faster)"
        )
    if recall:
        # Recall figures are measured once (LoCoMo quality is deterministic): "median" and
        # "speed" would mislead.
        out.append(
            "recall figures: measured once; ratio: engram's recall / the reference's "
            "(> 1: engram finds more)"
        )
    for i, f in enumerate(figures, 1):
        why = f.error or f.skipped or f.note
        if why:
            out.append(f"[{i}] {f.name}: {why}")
    return "\n".join(out)


def _repeats(figures: list[Figure]) -> str:
    counts = sorted({len(f.engram_samples) for f in figures if f.engram_samples})
    return "/".join(map(str, counts)) or "0"


def _dist(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def environment(config: Config) -> dict[str, Any]:
    """Describe the machine, the versions and the sizes of this run."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "sqlite": sqlite3.sqlite_version,
        "duckdb": _dist("duckdb"),
        "eventsourcing": _dist("eventsourcing"),
        "psycopg": _dist("psycopg"),
        "msgspec": _dist("msgspec"),
        "suite": config.suite,
        "quick": config.quick,
        "repeat": config.repeat,
        "seed": config.seed,
        "scratch": config.scratch,
        "sizes": vars(config.sizes),
    }


def write_json(path: str, config: Config, figures: list[Figure]) -> None:
    """Write the environment and every figure, samples included, to ``path``."""
    document = {"environment": environment(config), "figures": [f.as_json() for f in figures]}
    with open(path, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=2)
        out.write("\n")
