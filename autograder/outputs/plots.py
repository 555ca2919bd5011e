"""The class report's figures, drawn with matplotlib's Agg (no pyplot, no global state) as PNG data URIs."""
from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

if TYPE_CHECKING:
    from autograder.outputs.report import ClassReport


def _data_uri(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _bar_figure(labels: list[str], values: list[float], xlabel: str, horizontal: bool = True,
                limit: float | None = None, counts: bool = False, colors: list[str] | None = None) -> Figure:
    """Bars with our own labels; counts: the value axis shows whole numbers only (students, submissions)."""
    # Figure without pyplot: no global backend or state; Agg draws the PNG.
    height = max(2.0, 0.25 * len(labels) + 0.8) if horizontal else 3.0
    figure = Figure(figsize=(7, height))
    axes = figure.add_subplot()
    if horizontal:
        axes.barh(range(len(labels)), values, color=colors or "#4878a8")
        axes.set_yticks(range(len(labels)), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel(xlabel)
        if limit:
            axes.set_xlim(0, limit)
    else:
        axes.bar(range(len(labels)), values, color=colors or "#4878a8")
        axes.set_xticks(range(len(labels)), labels, fontsize=8)
        axes.set_ylabel(xlabel)
    if counts:
        (axes.xaxis if horizontal else axes.yaxis).set_major_locator(MaxNLocator(integer=True))
    return figure


def plots(report: ClassReport) -> dict[str, str]:
    """The class report's figures as PNG data URIs. Labels are our own names, never student text."""
    bins = report.histogram
    result = {
        "histogram": _bar_figure([f"{low:g}–{high:g}" for low, high, _ in bins], [n for *_, n in bins],
                                 "submissions", horizontal=False, counts=True),
        "checks": _bar_figure([name for name, *_ in report.checks],
                              [100 * passed / n if n else 0 for *_, passed, n in report.checks],
                              "passed (% of submissions)", limit=100, colors=_group_colors(report.checks)),
        "functions": _bar_figure([f for f, *_ in report.functions],
                                 [100 * mean / possible if possible else 0 for _, mean, possible in report.functions],
                                 "mean points (% of possible)", limit=100),
        "seconds": _seconds_figure([s.result.seconds for s in report.students]),
    }
    if report.misconceptions:
        result["misconceptions"] = _bar_figure([idea for idea, *_ in report.misconceptions],
                                               [students for _, _, students, _ in report.misconceptions],
                                               "students", counts=True)
    return {name: _data_uri(figure) for name, figure in result.items()}


def _group_colors(checks: list[tuple]) -> list[str]:
    """Alternating colours per function, so the grouped pass-rate bars show where each function starts."""
    order = list(dict.fromkeys(function for _, function, *_ in checks))
    return ["#4878a8" if order.index(function) % 2 == 0 else "#e08a3c" for _, function, *_ in checks]


def _seconds_figure(seconds: list[float]) -> Figure:
    figure = Figure(figsize=(7, 2.5))
    axes = figure.add_subplot()
    axes.hist(seconds, bins=min(20, max(1, len(seconds))), color="#4878a8")
    axes.set_xlabel("grading time per submission (s)")
    axes.set_ylabel("submissions")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    return figure
