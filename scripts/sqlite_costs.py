"""The SQLite backend's own share of an enqueue and a drain (docs/benchmarks.md, issue 15).

Run: ``python scripts/sqlite_costs.py [RUNS]`` (default 2,000), with ``PYTHONPATH`` naming
the ``src/`` of the version to measure. In a fresh temporary directory, at
``synchronous=FULL`` in WAL mode, it prints runs/s of:

- the raw bar: a bare table, one ``INSERT`` per ``BEGIN IMMEDIATE`` transaction, from
  a plain loop (measured before and after the backend, averaged: the disk drifts);
- the raw bar again with an index on each of five columns of the row (workpool's
  ``runs`` keeps its own indexes for claims, listings, gates, batches and parents):
  what one fsync'd transaction costs once it writes several B-tree pages;
- ``backend.enqueue`` of one run at a time, called directly (no client), and
  ``await wf.run(i)`` through a pool (the whole client path);
- the WAL bytes each one-run transaction appends (automatic checkpoints off while it is
  measured), for the raw bar, the indexed bar and ``backend.enqueue``;
- ``backend.claim`` of 10 then ``backend.finish`` of those 10, until RUNS are done (the
  runs stored first in batches of 500), as µs per run of each.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workpool import RunContext, Workpool
from workpool.backends.base import Finish, NewRun
from workpool.backends.sqlite.backend import SQLiteBackend
from workpool.backends.sqlite.operations import Operations

CLAIM = 10


INDEXED_TABLE = (
    "CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, queue TEXT, workflow TEXT, "
    "status TEXT, created_at REAL, available_at REAL, body TEXT)",
    "CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (queue, available_at)",
    "CREATE INDEX IF NOT EXISTS jobs_workflow ON jobs (workflow, created_at)",
    "CREATE INDEX IF NOT EXISTS jobs_created ON jobs (created_at)",
    "CREATE INDEX IF NOT EXISTS jobs_listed ON jobs (queue, workflow, status, id)",
    "CREATE INDEX IF NOT EXISTS jobs_status ON jobs (status, available_at)",
)


def raw_bar(folder: Path, runs: int, *, indexed: bool = False) -> tuple[float, float]:
    """Runs/s of one INSERT per transaction, and the WAL bytes each appends."""
    name = "indexed.db" if indexed else "raw.db"
    connection = sqlite3.connect(folder / name, isolation_level=None)
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = FULL")
    schema = (
        INDEXED_TABLE
        if indexed
        else ("CREATE TABLE IF NOT EXISTS jobs (id INTEGER PRIMARY KEY, body TEXT)",)
    )
    for statement in schema:
        connection.execute(statement)
    insert = (
        "INSERT INTO jobs VALUES (?, 'default', 'noop', 'queued', ?, ?, ?)"
        if indexed
        else "INSERT INTO jobs (body) VALUES (?)"
    )

    def write(number: int) -> None:
        now = time.time()
        values = (f"{number:012d}-{now}", now, now, "[1]") if indexed else (f"[{number}]",)
        connection.execute(insert, values)

    started = time.perf_counter()
    for number in range(runs):
        connection.execute("BEGIN IMMEDIATE")
        write(number)
        connection.execute("COMMIT")
    elapsed = time.perf_counter() - started
    bytes_each = wal_bytes_per_transaction(connection, runs // 4, write)
    connection.close()
    return runs / elapsed, bytes_each


def wal_bytes_per_transaction(
    connection: sqlite3.Connection, count: int, write: Callable[[int], object]
) -> float:
    """The WAL bytes one transaction of ``write`` appends, checkpoints off meanwhile."""
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute("PRAGMA wal_autocheckpoint = 0")
    wal = Path(connection.execute("PRAGMA database_list").fetchone()[2] + "-wal")
    before = wal.stat().st_size
    for number in range(count):
        connection.execute("BEGIN IMMEDIATE")
        write(number)
        connection.execute("COMMIT")
    grown = wal.stat().st_size - before
    connection.execute("PRAGMA wal_autocheckpoint = 1000")
    return grown / count


def new_runs(prefix: str, count: int, now: float) -> list[NewRun]:
    return [
        NewRun(
            id=f"{prefix}{n:012d}", workflow="noop", queue="default", input="1", available_at=now
        )
        for n in range(count)
    ]


async def enqueue_rate(folder: Path, runs: int) -> tuple[float, float]:
    """``backend.enqueue`` of one run at a time: runs/s, and WAL bytes per enqueue."""
    backend = await SQLiteBackend.open(folder / "enqueue.db")
    now = time.time()
    batch = new_runs("e", runs, now)
    started = time.perf_counter()
    for run in batch:
        await backend.enqueue([run], now)
    elapsed = time.perf_counter() - started
    more = new_runs("f", runs // 4, now)

    def measured(connection: sqlite3.Connection) -> float:
        def write(number: int) -> None:
            Operations(connection, backend._queries).enqueue([more[number]], now)

        return wal_bytes_per_transaction(connection, len(more), write)

    bytes_each = await backend._thread.read(measured)
    await backend.close()
    return runs / elapsed, bytes_each


async def client_rate(folder: Path, runs: int) -> float:
    """``await wf.run(i)`` one at a time through a pool: runs/s."""
    pool = Workpool(f"sqlite:///{folder / 'client.db'}", app="costs")

    @pool.workflow(max_concurrency=None)
    async def noop(ctx: RunContext, value: int) -> int:
        return value

    await noop.run(-1)  # opens the store
    started = time.perf_counter()
    for number in range(runs):
        await noop.run(number)
    elapsed = time.perf_counter() - started
    await pool.aclose()
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
    before, raw_bytes = raw_bar(folder, runs)
    indexed, indexed_bytes = raw_bar(folder, runs, indexed=True)
    enqueue, enqueue_bytes = asyncio.run(enqueue_rate(folder, runs))
    client = asyncio.run(client_rate(folder, runs))
    after, _ = raw_bar(folder, runs)
    claim, finish = asyncio.run(drain_costs(folder, runs))
    bar = (before + after) / 2
    print(
        f"raw bar {bar:,.0f}/s ({before:,.0f} before, {after:,.0f} after; "
        f"{raw_bytes:,.0f} WAL bytes each); with five indexes "
        f"{indexed:,.0f}/s ({indexed / bar:.0%} of the bar, {indexed_bytes:,.0f} bytes); "
        f"backend.enqueue {enqueue:,.0f}/s ({enqueue / bar:.0%}, {enqueue_bytes:,.0f} bytes); "
        f"await wf.run {client:,.0f}/s ({client / bar:.0%}); "
        f"claim {claim:.0f} µs/run, finish {finish:.0f} µs/run (claims of {CLAIM})"
    )


if __name__ == "__main__":
    main()
