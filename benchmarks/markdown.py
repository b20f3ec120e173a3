"""``python -m benchmarks.markdown [results.json]``: the figures as a Markdown table.

For docs/benchmarks.md: paste its output after a full run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.report_format import number
from benchmarks.workers import ROOT

DEFAULT = ROOT / "benchmarks" / "results" / "results.json"


def _verdict(figure: dict[str, Any]) -> str:
    if figure["failed"]:
        return "**FAILED**"
    if figure["pass"] is None:
        return ""
    return "pass" if figure["pass"] else "**miss**"


def _value(value: float | None) -> str:
    return "-" if value is None else number(value)


def render(results: dict[str, Any]) -> str:
    """The machine, then one table row per figure."""
    machine = results["machine"]
    commit = (machine["workpool_commit"] or "unknown")[:10]
    if machine["workpool_src_dirty"]:
        commit += " + uncommitted changes in src/"
    lines = [
        f"{results['mode']} run of {results['timestamp']}, median of {results['repeat']}, "
        f"{results['duration_seconds'] / 60:.0f} min; {machine['cpu_model']}, "
        f"{machine['cpu_cores']} cores, {machine['ram_bytes'] / 2**30:.0f} GiB RAM, "
        f"Python {machine['python']}, redis-server {machine['redis_server']}, "
        f"SQLite {machine['sqlite']}, workpool {commit}.",
        "",
        "| workload | backend | metric | median | range | unit | bar | |",
        "| --- | --- | --- | ---: | ---: | --- | --- | --- |",
    ]
    for figure in results["figures"]:
        bar = (figure["bar"] or "").replace("<=", "≤").replace(">=", "≥")
        lines.append(
            f"| {figure['workload']} {figure['title']} | {figure['backend']} | "
            f"{figure['metric']} | {_value(figure['median'])} | "
            f"{_value(figure['min'])} to {_value(figure['max'])} | {figure['unit']} | "
            f"{bar} | {_verdict(figure)} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    path = Path(argv[0]) if argv else DEFAULT
    print(render(json.loads(path.read_text())))


if __name__ == "__main__":
    main(sys.argv[1:])
