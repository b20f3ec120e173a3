"""B1 enqueue: runs stored per second by one client, one at a time (``run``, and
``run_sync`` from synchronous code), by 100 concurrent callers (``asyncio.gather``), and
in batches of 500."""

from __future__ import annotations

import asyncio
import time

from benchmarks.app import BenchApp
from benchmarks.harness import Env, Workload, enqueue_batched, opened_app
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.stores import RedisTarget, Target
from benchmarks.workers import BenchmarkError

ONE = "one at a time"
SYNC = "one at a time, run_sync"
BATCHED = "enqueue_many, batches of 500"
GATHER = "100 concurrent callers (gather)"
CALLERS = 100


async def one_at_a_time(app: BenchApp, count: int) -> float:
    """Runs/s of ``count`` sequential ``await noop.run(i)`` calls."""
    start = time.perf_counter()
    for number in range(count):
        await app.noop.run(number)
    return count / (time.perf_counter() - start)


async def sync_one_at_a_time(app: BenchApp, count: int) -> float:
    """Runs/s of ``count`` sequential ``noop.run_sync(i)`` calls from a thread without an
    event loop, as synchronous code makes them (one warm-up call first opens the
    connection of the sync methods' own loop, as ``opened_app`` does for ``run``)."""

    def calls() -> float:
        app.noop.run_sync(-1)
        start = time.perf_counter()
        for number in range(count):
            app.noop.run_sync(number)
        return count / (time.perf_counter() - start)

    try:
        return await asyncio.to_thread(calls)
    finally:
        await asyncio.to_thread(app.pool.close)


async def concurrent(app: BenchApp, count: int) -> float:
    """Runs/s of ``count`` ``noop.run(i)`` calls, ``CALLERS`` at a time under
    ``asyncio.gather`` (an async server's concurrent requests): group commit's case."""
    start = time.perf_counter()
    for first in range(0, count, CALLERS):
        await asyncio.gather(*(app.noop.run(number) for number in range(first, first + CALLERS)))
    return count / (time.perf_counter() - start)


async def batched(app: BenchApp, count: int) -> float:
    """Runs/s of ``count`` runs prepared and stored by ``enqueue_many`` in batches of 500."""
    start = time.perf_counter()
    await enqueue_batched(app, [app.noop.prepare(number) for number in range(count)])
    return count / (time.perf_counter() - start)


async def script_usec(target: Target) -> float:
    """Microseconds Redis has spent in EVALSHA so far (0 on SQLite)."""
    if not isinstance(target, RedisTarget):
        return 0.0
    stats = await target.info("commandstats")
    return float(stats.get("cmdstat_evalsha", {}).get("usec", 0))


async def run(env: Env) -> Measured:
    """One repetition on a fresh store: each way of enqueueing, then a count check.

    On Redis the details also give the server's own time per run (EVALSHA's usec in
    INFO commandstats), which tells the client's share of the cost from the server's.
    """
    singles = 5_000 if env.quick else 20_000
    gathered = 5_000 if env.quick else 20_000
    batch_total = 20_000
    target = await env.store.fresh()
    async with opened_app(target) as app:
        usec = [await script_usec(target)]
        values = {ONE: await one_at_a_time(app, singles)}
        usec.append(await script_usec(target))
        values[SYNC] = await sync_one_at_a_time(app, singles)
        usec.append(await script_usec(target))
        values[GATHER] = await concurrent(app, gathered)
        usec.append(await script_usec(target))
        values[BATCHED] = await batched(app, batch_total)
        usec.append(await script_usec(target))
        stored = await target.active_count()
    total = 2 * singles + 1 + gathered + batch_total  # + the run_sync warm-up
    if stored != total:
        raise BenchmarkError(f"LOST RUNS: {total} enqueued, {stored} stored")
    details: dict[str, float] = {
        "runs_one_at_a_time": singles,
        "runs_one_at_a_time_run_sync": singles,
        "runs_gathered": gathered,
        "runs_batched": batch_total,
    }
    if isinstance(target, RedisTarget):
        details["server_us_per_run_one_at_a_time"] = (usec[1] - usec[0]) / singles
        details["server_us_per_run_run_sync"] = (usec[2] - usec[1]) / (singles + 1)
        details["server_us_per_run_gathered"] = (usec[3] - usec[2]) / gathered
        details["server_us_per_run_batched"] = (usec[4] - usec[3]) / batch_total
    return Measured(values, details)


WORKLOAD = Workload(
    id="B1",
    title="enqueue",
    backends=("sqlite", "redis", "postgres"),
    metrics=(
        MetricSpec(ONE, "runs/s", {"redis": Bar(">=", 4_000)}),
        MetricSpec(SYNC, "runs/s"),
        MetricSpec(GATHER, "runs/s"),
        MetricSpec(BATCHED, "runs/s", {"redis": Bar(">=", 50_000)}),
    ),
    run=run,
)
