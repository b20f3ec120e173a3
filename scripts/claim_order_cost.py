"""What claiming out of enqueue order costs the SQLite backend (docs/benchmarks.md, issue 14).

Run: ``python scripts/claim_order_cost.py [ROUNDS]``. Each round enqueues 2,000 queued
runs into a fresh file (batches of 500), then claims them 100 at a time and finishes
each batch, directly on the backend (no worker process), timing claims and finishes
apart. Three orders, interleaved: *enqueue order* (no priorities); *priorities*, run n
having priority (37 n mod 201) - 100 as in B5's mixed configuration; *same order by
time*, no priorities, each run's available_at making the very order priorities give.
Prints each order's median claim and finish time per 2,000 runs.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from workpool.backends.base import Finish, NewRun
from workpool.backends.sqlite.backend import SQLiteBackend
from workpool.builder import rank_offset

RUNS = 2_000
NOW = 1_700_000_000.0
ORDERS = ("enqueue order", "priorities", "same order by time")


def new_runs(order: str) -> list[NewRun]:
    runs = []
    for n in range(RUNS):
        priority = (n * 37) % 201 - 100
        run = NewRun(f"run-{n:05d}", "noop", "default", "{}", NOW - 1)
        if order == "priorities":
            run = replace(run, priority=priority, rank_offset=rank_offset(priority, None))
        elif order == "same order by time":
            run = replace(run, available_at=NOW - 1000 + (100 - priority) + n / 1e4)
        runs.append(run)
    return runs


async def drain(order: str) -> tuple[float, float]:
    """Seconds spent in claims and in finishes to drain 2,000 runs enqueued in ``order``."""
    with tempfile.TemporaryDirectory() as folder:
        backend = await SQLiteBackend.open(Path(folder) / "order.db")
        runs = new_runs(order)
        for start in range(0, RUNS, 500):
            await backend.enqueue(runs[start : start + 500], NOW)
        claiming = finishing = 0.0
        done = 0
        while done < RUNS:
            started = time.perf_counter()
            claimed = (await backend.claim(["default"], "w", 100, 30, 3, NOW)).runs
            claiming += time.perf_counter() - started
            started = time.perf_counter()
            outcomes = [Finish(run.lease, "succeeded", output="1") for run in claimed]
            await backend.finish(outcomes, NOW)
            finishing += time.perf_counter() - started
            done += len(claimed)
        await backend.close()
        return claiming, finishing


async def main(rounds: int) -> None:
    times: dict[str, list[tuple[float, float]]] = {order: [] for order in ORDERS}
    for _ in range(rounds):
        for order in ORDERS:
            times[order].append(await drain(order))
    for order, measured in times.items():
        claim_ms = 1000 * statistics.median(claim for claim, _ in measured)
        finish_ms = 1000 * statistics.median(finish for _, finish in measured)
        print(f"{order:20} claims {claim_ms:6.0f} ms  finishes {finish_ms:6.0f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9))
