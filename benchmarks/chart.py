"""results.png: one panel per workload and unit, bars per backend, bar targets as lines.

``python -m benchmarks.chart [results.json]`` redraws the PNG next to a results file.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from benchmarks.report_format import number
from benchmarks.stats import Bar, Figure, MetricSpec
from benchmarks.workers import ROOT

COLORS = {"sqlite": "#4c72b0", "redis": "#c44e52", "postgres": "#55a868"}
COLUMNS = 3
LOG_SPAN = 100
"""A panel whose highest value is this many times its lowest median gets a log scale."""


def draw(figures: Sequence[Figure], path: Path, title: str) -> None:
    """Draw every figure (median, range as error bars) into a PNG at ``path``."""
    panels: dict[tuple[str, str], list[Figure]] = {}
    for figure in figures:
        key = (f"{figure.workload} {figure.title}", figure.spec.unit)
        panels.setdefault(key, []).append(figure)
    backends = list(dict.fromkeys(figure.backend for figure in figures))
    rows = max(1, math.ceil(len(panels) / COLUMNS))
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(6 * COLUMNS, 4.2 * rows), squeeze=False)
    for ax, ((name, unit), members) in zip(axes.flat, panels.items(), strict=False):
        _panel(ax, name, unit, members, backends)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=14)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    fig.savefig(path, dpi=90, format="png")
    plt.close(fig)


def _panel(ax: Axes, name: str, unit: str, members: list[Figure], backends: list[str]) -> None:
    metrics = list(dict.fromkeys(figure.spec.name for figure in members))
    width = 0.8 / len(backends)
    bar_labelled = False
    shown: set[str] = set()
    for b, backend in enumerate(backends):
        for m, metric in enumerate(metrics):
            figure = next(
                (f for f in members if f.backend == backend and f.spec.name == metric), None
            )
            if figure is None or not figure.values:
                continue
            x = m + (b - (len(backends) - 1) / 2) * width
            error = [[figure.median - figure.low], [figure.high - figure.median]]
            ax.bar(
                x,
                figure.median,
                width,
                yerr=error,
                capsize=3,
                color=COLORS.get(backend, "gray"),
                hatch="//" if figure.failed else None,
                # Matplotlib leaves labels starting with "_" out of the legend.
                label="_" + backend if backend in shown else backend,
            )
            shown.add(backend)
            ax.annotate(
                number(figure.median),
                (x, figure.high),
                textcoords="offset points",
                xytext=(0, 2),
                ha="center",
                fontsize=7,
            )
            if figure.bar is not None:
                label = "_bar" if bar_labelled else "bar (target)"
                ax.hlines(figure.bar.value, x - width / 2, x + width / 2, "black", label=label)
                bar_labelled = True
    highs = [f.high for f in members if f.values]
    lows = [f.median for f in members if f.values and f.median > 0]
    if highs and lows and max(highs) > LOG_SPAN * min(lows):
        ax.set_yscale("log")  # a tail of seconds next to medians of a millisecond
    ax.set_title(name)
    ax.set_ylabel(unit)
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels([_wrap(metric) for metric in metrics], fontsize=7)
    ax.margins(y=0.12)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)


def _wrap(text: str, width: int = 16) -> str:
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "\n".join(lines)


def _figures_from(results: dict[str, Any]) -> list[Figure]:
    figures = []
    for entry in results["figures"]:
        bars: dict[str, Bar] = {}
        if entry["bar"]:
            op, value = entry["bar"].split(" ", 1)
            bars[entry["backend"]] = Bar(
                ">=" if op == ">=" else "<=", float(value.replace(",", ""))
            )
        spec = MetricSpec(entry["metric"], entry["unit"], bars)
        figures.append(
            Figure(
                entry["workload"],
                entry["title"],
                entry["backend"],
                spec,
                list(entry["values"]),
                entry["failed"],
            )
        )
    return figures


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else ROOT / "benchmarks" / "results" / "results.json"
    results = json.loads(path.read_text())
    title = f"workpool benchmarks ({results['mode']}, median of {results['repeat']})"
    draw(_figures_from(results), path.with_suffix(".png"), title)


if __name__ == "__main__":
    main(sys.argv[1:])
