"""Time series as inline SVG: the vitality page's plots, drawn on the server, no script."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

WIDTH, HEIGHT, PAD = 360, 120, 28


class Plot(NamedTuple):
    """One plot ready for the template: a polyline, its dots, and the labels of its axes."""

    title: str
    points: str  # "x,y x,y ..." for <polyline points>
    dots: list[tuple[float, float]]
    low: str
    high: str
    start: str
    end: str
    last: str
    empty: bool


def plot(title: str, series: Sequence[tuple[datetime, float]]) -> Plot:
    """Scale ``series`` (time, value) into the plot box; an empty series draws nothing."""
    if not series:
        return Plot(title, "", [], "", "", "", "", "no data yet", True)
    times = [t.timestamp() for t, _ in series]
    values = [v for _, v in series]
    t0, t1 = min(times), max(times)
    v0, v1 = min(0.0, min(values)), max(values)
    span_t = (t1 - t0) or 1.0
    span_v = (v1 - v0) or 1.0
    dots = [
        (
            round(PAD + (t - t0) / span_t * (WIDTH - 2 * PAD), 1),
            round(HEIGHT - PAD / 2 - (v - v0) / span_v * (HEIGHT - PAD), 1),
        )
        for t, v in zip(times, values, strict=True)
    ]
    return Plot(
        title=title,
        points=" ".join(f"{x},{y}" for x, y in dots),
        dots=dots[-200:],
        low=_number(v0),
        high=_number(v1),
        start=series[0][0].strftime("%Y-%m-%d %H:%M"),
        end=series[-1][0].strftime("%Y-%m-%d %H:%M"),
        last=_number(values[-1]),
        empty=False,
    )


def _number(value: float) -> str:
    if value == int(value) and abs(value) < 1e9:
        return str(int(value))
    return f"{value:.4g}"
