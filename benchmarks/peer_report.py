"""PEERS: the rows of issue 15's table, and the tables made of their figures.

``python -m benchmarks.peers [results.json]`` prints both tables of a finished run: the
side-by-side figures and the ratio table (workpool / best peer, and workpool / raw bar).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.peer_subjects import SUBJECTS
from benchmarks.workers import ROOT

WORKLOAD_ID = "PEERS"


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the table: what workpool does, and the peers' row it is compared with."""

    name: str
    unit: str
    higher: bool
    """Whether higher is better."""
    who: frozenset[str]
    """Who reports it: ``workpool``, ``peer``, ``raw``."""
    settings: str
    """The settings each side runs at (the ratio table says it)."""
    compared_with: Row | None = None
    """The peers' row it is read against (default: this one)."""
    sync_peers_only: bool = False
    """Compared only with peers whose client is synchronous."""

    @property
    def peers_row(self) -> Row:
        return self.compared_with or self


ALL = frozenset({"workpool", "peer", "raw"})
SHARED = frozenset({"workpool", "peer"})
OWN = frozenset({"workpool"})
DEFAULTS = "workpool --concurrency 10 (its CLI default); peers at their defaults"
TWO_PROCESSES = "workpool --processes 2 --concurrency {}; peers at their defaults, 2 processes"
ENQUEUE = Row(
    "enqueue one at a time",
    "runs/s",
    True,
    ALL,
    "workpool `await run()`, taskiq `await kiq()`; huey, dramatiq, raw: sync clients",
)
ENQUEUE_SYNC = Row(
    "enqueue one at a time, run_sync",
    "runs/s",
    True,
    OWN,
    "workpool `run_sync()`; peers: huey's and dramatiq's clients (sync already)",
    ENQUEUE,
    sync_peers_only=True,
)
GATHER = Row(
    "enqueue, 100 concurrent callers",
    "runs/s",
    True,
    SHARED,
    "workpool, taskiq: `asyncio.gather`; huey, dramatiq: 100 threads",
)
DRAIN_ONE = Row("drain, 1 process, default settings", "runs/s", True, ALL, DEFAULTS)
DRAIN_TWO = Row(
    "drain, 2 processes, default settings", "runs/s", True, SHARED, TWO_PROCESSES.format(10)
)
DRAIN_ONE_100 = Row(
    "drain, 1 process, concurrency 100",
    "runs/s",
    True,
    OWN,
    "workpool --concurrency 100; peers at their defaults",
    DRAIN_ONE,
)
DRAIN_TWO_100 = Row(
    "drain, 2 processes, concurrency 100",
    "runs/s",
    True,
    OWN,
    TWO_PROCESSES.format(100),
    DRAIN_TWO,
)
IO = Row(
    "I/O-bound, 10 ms sleeps, concurrency 50",
    "runs/s",
    True,
    SHARED,
    "1 process, 50 at once (huey, dramatiq: 50 threads); ideal 5,000",
)
LATENCY = "1 process, 200 jobs/s; " + DEFAULTS
P50 = Row("enqueue to start, p50", "ms", False, ALL, LATENCY)
P99 = Row("enqueue to start, p99", "ms", False, ALL, LATENCY)
ROWS = (
    ENQUEUE,
    ENQUEUE_SYNC,
    GATHER,
    DRAIN_ONE,
    DRAIN_TWO,
    DRAIN_ONE_100,
    DRAIN_TWO_100,
    IO,
    P50,
    P99,
)


BACKENDS = ("redis", "sqlite", "postgres")
POSTGRES_ROWS = (ENQUEUE, GATHER, DRAIN_ONE, P50, P99)
"""Issue 24's rows on PostgreSQL (its peers' figures there are these only)."""


POSTGRES_SETTINGS = {
    ENQUEUE.name: "workpool `await run()`, procrastinate `await defer_async()`, pgqueuer "
    "`await enqueue()`; DBOS, raw: sync clients",
    GATHER.name: "workpool, procrastinate, pgqueuer: `asyncio.gather`; DBOS: 100 threads",
    DRAIN_ONE.name: "10,000 no-ops; workpool --concurrency 10 (its CLI default); procrastinate "
    "-c 10; pgqueuer, DBOS at their defaults",
}
"""The settings of PostgreSQL's rows where they differ from Redis's and SQLite's."""


def rows_of(backend: str) -> tuple[Row, ...]:
    """The rows measured on ``backend``."""
    return POSTGRES_ROWS if backend == "postgres" else ROWS


def metric(subject: str, row: Row) -> str:
    return f"{subject}: {row.name}"


def ratio_rows(medians: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
    """Per backend and row: workpool's median, the best peer's (of the row it is compared
    with) and the raw bar's, and workpool over each. ``medians``: (backend, metric)."""
    rows: list[dict[str, Any]] = []
    for backend in BACKENDS:
        subjects = [s for s in SUBJECTS if s.backend == backend]
        for row in rows_of(backend):
            mine = medians.get((backend, metric("workpool", row)))
            peers = {
                s.name: medians[(backend, metric(s.name, row.peers_row))]
                for s in subjects
                if not s.raw
                and (s.sync_client or not row.sync_peers_only)
                and (backend, metric(s.name, row.peers_row)) in medians
            }
            if mine is None or not peers:
                continue
            best = (max if row.higher else min)(peers, key=lambda name: peers[name])
            floor = medians.get((backend, metric("raw", row.peers_row)))
            rows.append(
                {
                    "backend": backend,
                    "row": row.name,
                    "unit": row.unit,
                    "settings": POSTGRES_SETTINGS.get(row.name, row.settings)
                    if backend == "postgres"
                    else row.settings,
                    "workpool": mine,
                    "best_peer": best,
                    "best_peer_value": peers[best],
                    "ratio": mine / peers[best],
                    "raw": floor,
                    "ratio_to_raw": None if floor is None else mine / floor,
                    "higher_is_better": row.higher,
                    "workpool_leads": mine >= peers[best] if row.higher else mine <= peers[best],
                }
            )
    return rows


def ratio_table(rows: Sequence[dict[str, Any]]) -> str:
    """The ratio rows as Markdown (printed, and written beside results.json)."""
    lines = [
        "| backend | workload | settings | workpool | best peer | workpool / best peer | "
        "raw bar | workpool / raw |",
        "| --- | --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for r in rows:
        lead = "" if r["workpool_leads"] else " **behind**"
        better = "higher is better" if r["higher_is_better"] else "lower is better"
        raw = "" if r["raw"] is None else _shown(r["raw"], r["unit"])
        to_raw = "" if r["ratio_to_raw"] is None else f"{r['ratio_to_raw']:.2f}"
        lines.append(
            f"| {r['backend']} | {r['row']} ({r['unit']}, {better}) | {r['settings']} | "
            f"{_shown(r['workpool'], r['unit'])} | {r['best_peer']} "
            f"{_shown(r['best_peer_value'], r['unit'])} | {r['ratio']:.2f}{lead} | "
            f"{raw} | {to_raw} |"
        )
    return "\n".join(lines)


def _shown(value: float, unit: str) -> str:
    return f"{value:,.3g}" if unit == "ms" else f"{value:,.0f}"


def side_by_side(results: dict[str, Any]) -> str:
    """``results.json``'s PEERS figures as Markdown: one row per workload, one column per
    subject and backend, median (range)."""
    cells: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    for entry in results["figures"]:
        if entry["workload"] != WORKLOAD_ID or entry["median"] is None:
            continue
        subject, row = entry["metric"].split(": ", 1)
        column = f"{subject} ({entry['backend']})"
        if column not in columns:
            columns.append(column)
        low, high, unit = entry["min"], entry["max"], entry["unit"]
        cells.setdefault(row, {})[column] = _shown(entry["median"], unit) + (
            f" ({_shown(low, unit)} to {_shown(high, unit)})" if low != high else ""
        )
    lines = [
        "| workload | " + " | ".join(columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for row in ROWS:
        if row.name in cells:
            shown = [cells[row.name].get(column, "") for column in columns]
            lines.append(f"| {row.name} ({row.unit}) | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> None:
    """The side-by-side and ratio tables of a results.json (default: the PEERS run's)."""
    path = Path(argv[0]) if argv else ROOT / "benchmarks" / "results" / "peers" / "results.json"
    results = json.loads(path.read_text())
    print(side_by_side(results))
    print()
    print(ratio_table(results.get("peer_ratios") or []))
