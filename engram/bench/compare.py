"""Compare two `engram bench --json` runs figure by figure, with each figure's spread.

Modelled on pyperf's ``compare_to``: for every figure both runs measured, the old and the new
value with their spread, the change, and whether the change stands out of the noise (Welch's
two-sample t-test at 95%). The figure compared is the ratio to the reference measured in the
same repetition, since on a shared machine that ratio is steadier than either speed; engram's
own speed is shown beside it.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any

from engram.bench.common import LOWER_IS_BETTER

__all__ = ["Comparison", "compare_files", "compare_runs", "load_run", "render"]

#: Two-sided 95% quantiles of Student's t by degrees of freedom (1..30); 1.96 beyond.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """One figure in both runs: per-repetition ratios, engram's medians, the verdict."""

    name: str
    unit: str
    old_ratios: tuple[float, ...]
    new_ratios: tuple[float, ...]
    old_engram: float | None
    new_engram: float | None
    target: float | None

    @property
    def change(self) -> float | None:
        """Return the new median ratio over the old one (> 1: engram got relatively faster)."""
        if not self.old_ratios or not self.new_ratios:
            return None
        old = statistics.median(self.old_ratios)
        return None if old <= 0 else statistics.median(self.new_ratios) / old

    @property
    def significant(self) -> bool | None:
        """Say whether the ratios differ beyond their noise (None: too few repetitions)."""
        return _welch_significant(self.old_ratios, self.new_ratios)

    @property
    def verdict(self) -> str:
        change, significant = self.change, self.significant
        if change is None:
            return "only in one run"
        if significant is None:
            return f"{_change(change)} (too few repetitions to tell)"
        if not significant:
            return "not significant"
        return _change(change)


def _change(change: float) -> str:
    if change >= 1:
        return f"{change:.2f}x better"
    return f"{1 / change:.2f}x worse"


def _welch_significant(a: tuple[float, ...], b: tuple[float, ...]) -> bool | None:
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(b) - statistics.fmean(a)
    if va + vb == 0:
        return diff != 0
    t = abs(diff) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (
        (va**2 / (len(a) - 1) if va else 0.0) + (vb**2 / (len(b) - 1) if vb else 0.0)
    )
    quantile = _T95[min(int(df), len(_T95)) - 1] if df >= 1 else _T95[0]
    return t > quantile


def load_run(path: str) -> dict[str, Any]:
    """Read a run written by ``engram bench --json``.

    Raises:
        ValueError: the file cannot be read or is not such a run.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from None
    figures = document.get("figures") if isinstance(document, dict) else None
    if not isinstance(figures, list) or not all(
        isinstance(f, dict) and isinstance(f.get("name"), str) for f in figures
    ):
        raise ValueError(f"{path} is not a run of `engram bench --json` (no figures list)")
    run: dict[str, Any] = document
    return run


def _ratios(figure: dict[str, Any]) -> tuple[float, ...]:
    engram = figure.get("engram_samples") or []
    reference = figure.get("reference_samples") or []
    lower = figure.get("unit") in LOWER_IS_BETTER
    return tuple(
        (r / e if lower else e / r)
        for e, r in zip(engram, reference, strict=False)
        if isinstance(e, int | float) and isinstance(r, int | float) and e > 0 and r > 0
    )


def compare_runs(old: dict[str, Any], new: dict[str, Any]) -> list[Comparison]:
    """Pair the figures of two runs by name, in the new run's order (then the old's rest)."""
    olds = {f["name"]: f for f in old["figures"]}
    news = {f["name"]: f for f in new["figures"]}
    names = list(news) + [name for name in olds if name not in news]
    out: list[Comparison] = []
    for name in names:
        o, n = olds.get(name, {}), news.get(name, {})
        out.append(
            Comparison(
                name=name,
                unit=str(n.get("unit") or o.get("unit") or ""),
                old_ratios=_ratios(o),
                new_ratios=_ratios(n),
                old_engram=o.get("engram"),
                new_engram=n.get("engram"),
                target=n.get("target", o.get("target")),
            )
        )
    return out


def _spread(values: tuple[float, ...]) -> str:
    if not values:
        return "-"
    middle = statistics.median(values)
    if len(values) < 2:
        return f"{middle:.2f}x"
    return f"{middle:.2f}x ± {statistics.stdev(values):.2f}"


def _speed(value: Any, unit: str) -> str:
    if not isinstance(value, int | float):
        return "-"
    if unit in ("s", "ms"):
        return f"{value:.3g} {unit}"
    if unit == "events/s" or unit.endswith("/s"):
        return f"{value:,.0f}/s"
    return f"{value:.3g}"


def render(comparisons: list[Comparison]) -> str:
    """Return the comparison as a table, then a line on how to read it."""
    header = ["figure", "old ratio", "new ratio", "target", "change", "engram old -> new"]
    rows = []
    for c in comparisons:
        target = "-" if c.target is None else f">= {c.target:g}x"
        speeds = f"{_speed(c.old_engram, c.unit)} -> {_speed(c.new_engram, c.unit)}"
        rows.append(
            [c.name, _spread(c.old_ratios), _spread(c.new_ratios), target, c.verdict, speeds]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join(
        [
            line(header),
            rule,
            *map(line, rows),
            rule,
            "ratio: median ± standard deviation over repetitions of engram / its reference in "
            "that repetition; change: new median over old, shown when Welch's t-test finds the "
            "ratios different at 95%",
        ]
    )


def compare_files(old_path: str, new_path: str) -> str:
    """Return the rendered comparison of two JSON runs.

    Raises:
        ValueError: a file cannot be read, is not a run, or the runs share no figure.
    """
    comparisons = compare_runs(load_run(old_path), load_run(new_path))
    if not any(c.old_ratios and c.new_ratios for c in comparisons):
        raise ValueError(f"{old_path} and {new_path} share no measured figure")
    return render(comparisons)
