"""B10 retention: storage after a steady run of short runs returns to its baseline.

In process, on a fresh store: a pool with ``retention=1 minute`` whose clock is the
system clock plus an offset the harness can jump (so the minute of retention passes
at once instead of being waited out). Warm-up: 1,000 runs, drained, the clock jumped
61 s, one housekeeping step (deletes them): the store now holds every structure that
outlives runs, and its size is the baseline. Then N runs (100,000; 10,000 quick) are
enqueued in batches of 500 while a worker (concurrency 50, housekeeping every 5 s)
drains them; the size at the end is the peak. The clock is jumped 61 s and one
housekeeping step deletes every run; the figure is the size after / the baseline
(bar: at most 1.05), and the purge rate is N / the seconds that step took.

Size: SQLite, the pages in use (page_count - freelist_count) x page_size, so space
SQLite keeps for reuse after deletes is not counted (the file does not shrink without
VACUUM; the details give the file size too); Redis, ``used_memory`` of INFO memory,
and the number of keys in the details. Counters (kept per minute for a day, whatever
the number of runs) are in both figures.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import timedelta
from typing import Any

from benchmarks.harness import BATCH, Env, Workload
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.stores import RedisTarget, SqliteTarget, Target
from workpool import RunContext, Workpool
from workpool.worker.housekeeping import Housekeeper

RATIO = "storage after retention / before"
PURGE = "purge rate"
RETENTION = timedelta(minutes=1)
WARM_UP = 1_000


class JumpClock:
    """The system clock plus an offset that only grows."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset

    def jump(self, seconds: float) -> None:
        self.offset += seconds


async def size(target: Target) -> dict[str, int]:
    """The store's size in bytes, and what explains it."""
    if isinstance(target, SqliteTarget):
        file_bytes = target.size_bytes()  # checkpoints the WAL first
        with sqlite3.connect(target.path) as connection:
            pages, free, page_size = (
                connection.execute(f"PRAGMA {name}").fetchone()[0]
                for name in ("page_count", "freelist_count", "page_size")
            )
        return {"bytes": (pages - free) * page_size, "file_bytes": file_bytes}
    assert isinstance(target, RedisTarget)
    memory = await target.info("memory")
    keys = await target.client.dbsize()
    return {"bytes": int(memory["used_memory"]), "keys": int(keys)}


async def drain(pool: Workpool, count: int, start: int) -> None:
    """Enqueue ``count`` short runs in batches and wait until none is active."""
    short = pool.get_workflow("short")
    for first in range(start, start + count, BATCH):
        last = min(first + BATCH, start + count)
        await pool.enqueue_many([short.prepare(n) for n in range(first, last)])
    while True:
        total = (await pool.stats(timedelta(minutes=1))).total
        if total.pending + total.running == 0:
            return
        await asyncio.sleep(0.2)


async def run(env: Env) -> Measured:
    """One repetition on a fresh store."""
    count = 10_000 if env.quick else 100_000
    target = await env.store.fresh()
    clock = JumpClock()
    pool = Workpool(target.url, app="bench-retention", clock=clock, retention=RETENTION)

    @pool.workflow(max_concurrency=None)
    async def short(ctx: RunContext, n: int) -> int:
        return n

    try:
        backend = await pool.backend()
        keeper = Housekeeper(pool.settings, "bench-keeper")
        worker = pool.worker(concurrency=50, housekeeping_every=timedelta(seconds=5))
        async with worker:
            await drain(pool, WARM_UP, 0)
            clock.jump(RETENTION.total_seconds() + 1)
            await keeper.step(backend, clock.now())
            before = await size(target)
            started = time.perf_counter()
            await drain(pool, count, WARM_UP)
            steady_seconds = time.perf_counter() - started
        peak = await size(target)
        clock.jump(RETENTION.total_seconds() + 1)
        started = time.perf_counter()
        deleted = await keeper.step(backend, clock.now())
        purge_seconds = time.perf_counter() - started
        after = await size(target)
    finally:
        await pool.aclose()
        await target.close()
    details: dict[str, Any] = {
        "runs": count,
        "deleted": deleted,
        "before": before,
        "peak": peak,
        "after": after,
        "steady_runs_per_second": count / steady_seconds,
        "purge_seconds": purge_seconds,
    }
    values = {RATIO: after["bytes"] / before["bytes"], PURGE: (deleted or 0) / purge_seconds}
    return Measured(values, details)


WORKLOAD = Workload(
    id="B10",
    title="retention",
    backends=("sqlite", "redis"),
    metrics=(
        MetricSpec(RATIO, "x", {"sqlite": Bar("<=", 1.05), "redis": Bar("<=", 1.05)}),
        MetricSpec(PURGE, "runs/s"),
    ),
    run=run,
)
