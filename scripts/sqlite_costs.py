"""The SQLite backend's own share of an enqueue and a drain (docs/benchmarks.md, issue 15).

Run: ``python scripts/sqlite_costs.py [RUNS]`` (default 2,000), with ``PYTHONPATH`` naming
the ``src/`` of the version to measure. In a fresh temporary directory, at
``synchronous=FULL`` in WAL mode, it prints runs/s of:

- the raw bar: a bare table, one ``INSERT`` per ``BEGIN IMMEDIATE`` transaction, from
  a plain loop (measured before and after the backend, averaged: the disk drifts);
- ``backend.enqueue`` of one run at a time, called directly (no client);
- ``backend.claim`` of 10 then ``backend.finish`` of those 10, until RUNS are done (the
  runs stored first in batches of 500), as µs per run of each.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from workpool.backends.base import Finish, NewRun
from workpool.backends.sqlite.backend import SQLiteBackend

CLAIM = 10


def raw_bar(folder: Path, runs: int) -> float:
    connection = sqlite3.connect(folder / "raw.db", isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    connection.execute("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, body TEXT)")
    started = time.perf_counter()
    for number in range(runs):
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("INSERT INTO jobs (body) VALUES (?)", (f"[{number}]",))
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - started
    connection.close()
    return runs / elapsed


def new_runs(prefix: str, count: int, now: float) -> list[NewRun]:
    return [
        NewRun(
            id=f"{prefix}{n:012d}", workflow="noop", queue="default", input="1", available_at=now
        )
        for n in range(count)
    ]


async def enqueue_rate(folder: Path, runs: int) -> float:
    backend = await SQLiteBackend.open(folder / "enqueue.db")
    now = time.time()
    batch = new_runs("e", runs, now)
    started = time.perf_counter()
    for run in batch:
        await backend.enqueue([run], now)
    elapsed = time.perf_counter() - started
    await backend.close()
    return runs / elapsed


async def drain_costs(folder: Path, runs: int) -> tuple[float, float]:
    backend = await SQLiteBackend.open(folder / "drain.db")
    now = time.time()
    stored = new_runs("d", runs, now)
    for first in range(0, runs, 500):
        await backend.enqueue(stored[first : first + 500], now)
    claiming = finishing = 0.0
    done = 0
    while done < runs:
        started = time.perf_counter()
        claimed = await backend.claim(["default"], "w", CLAIM, 30.0, 3, now, workflows=["noop"])
        claiming += time.perf_counter() - started
        started = time.perf_counter()
        finishes = [Finish(lease=run.lease, status="succeeded", output="1") for run in claimed.runs]
        await backend.finish(finishes, now)
        finishing += time.perf_counter() - started
        done += len(claimed.runs)
    await backend.close()
    return claiming / runs * 1e6, finishing / runs * 1e6


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    folder = Path(tempfile.mkdtemp())
    before = raw_bar(folder, runs)
    enqueue = asyncio.run(enqueue_rate(folder, runs))
    after = raw_bar(folder, runs)
    claim, finish = asyncio.run(drain_costs(folder, runs))
    bar = (before + after) / 2
    print(
        f"raw bar {bar:,.0f}/s; backend.enqueue {enqueue:,.0f}/s ({enqueue / bar:.0%} of the "
        f"bar); claim {claim:.0f} µs/run, finish {finish:.0f} µs/run (claims of {CLAIM})"
    )


if __name__ == "__main__":
    main()
