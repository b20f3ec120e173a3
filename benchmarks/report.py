"""The report: a table on stdout, results.json and results.png."""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from benchmarks.report_format import number
from benchmarks.stats import Figure
from benchmarks.workers import ROOT


@dataclass(slots=True)
class Report:
    """Everything one invocation of the suite found."""

    mode: str
    repeat: int
    started: datetime
    machine: dict[str, Any]
    figures: list[Figure] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    """One entry per repetition run, discarded ones included."""
    warnings: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    peer_ratios: list[dict[str, Any]] = field(default_factory=list)
    """PEERS: per backend and workload, workpool / the best peer (benchmarks.peers)."""


def machine_info(redis_version: str | None) -> dict[str, Any]:
    """CPU, cores, RAM, Python, redis-server, SQLite, and the workpool commit measured."""
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": cpu,
        "cpu_cores": os.cpu_count(),
        "ram_bytes": int(psutil.virtual_memory().total),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "redis_server": redis_version,
        "sqlite": sqlite3.sqlite_version,
        "load_average_at_start": load_average(),
        **git_state(),
    }


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (other work on the machine shows here)."""
    return [round(load, 2) for load in os.getloadavg()]


def git_state() -> dict[str, Any]:
    """The commit, the tree of its src/, and whether src/ had uncommitted changes (with a
    hash of them)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout

    diff = git("diff", "HEAD", "--", "src")
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "src")
    dirty = bool(diff.strip() or untracked.strip())
    return {
        "workpool_commit": git("rev-parse", "HEAD").strip() or None,
        "workpool_src_tree": git("rev-parse", "HEAD:src").strip() or None,
        "workpool_src_dirty": dirty,
        "workpool_src_diff_sha1": (
            hashlib.sha1((diff + untracked).encode()).hexdigest() if dirty else None
        ),
    }


def _verdict(figure: Figure) -> str:
    if figure.failed:
        return "FAIL"
    passed = figure.passed
    return "-" if passed is None else ("pass" if passed else "MISS")


def table(figures: Sequence[Figure]) -> str:
    """The figures as a fixed-width text table."""
    header = ("workload", "backend", "metric", "median", "range", "unit", "bar", "result")
    rows = [header]
    for figure in figures:
        rows.append(
            (
                f"{figure.workload} {figure.title}",
                figure.backend,
                figure.spec.name,
                number(figure.median),
                f"{number(figure.low)} - {number(figure.high)}" if figure.values else "-",
                figure.spec.unit,
                str(figure.bar) if figure.bar else "",
                _verdict(figure),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {3, 4}
    lines = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def to_json(report: Report) -> dict[str, Any]:
    """The report as JSON-ready data."""
    return {
        "timestamp": report.started.astimezone(UTC).isoformat(timespec="seconds"),
        "mode": report.mode,
        "repeat": report.repeat,
        "duration_seconds": round(report.duration_seconds, 1),
        "machine": report.machine,
        "figures": [
            {
                "workload": figure.workload,
                "title": figure.title,
                "backend": figure.backend,
                "metric": figure.spec.name,
                "unit": figure.spec.unit,
                "values": figure.values,
                "median": _finite(figure.median),
                "min": _finite(figure.low),
                "max": _finite(figure.high),
                "bar": str(figure.bar) if figure.bar else None,
                "pass": figure.passed,
                "failed": figure.failed,
            }
            for figure in report.figures
        ],
        "errors": report.errors,
        "warnings": report.warnings,
        "peer_ratios": report.peer_ratios,
        "details": report.details,
    }


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def write(report: Report, out: Path) -> tuple[Path, Path]:
    """Write results.json and results.png into ``out`` (each via a .tmp file)."""
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "results.json"
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(to_json(report), indent=2) + "\n")
    tmp.replace(json_path)
    from benchmarks.chart import draw

    png_path = out / "results.png"
    tmp_png = out / "results.png.tmp"
    draw(report.figures, tmp_png, f"workpool benchmarks ({report.mode}, median of {report.repeat})")
    tmp_png.replace(png_path)
    return json_path, png_path
