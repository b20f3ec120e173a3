"""B6 footprint: store bytes per queued run, worker RSS idle and after 10,000 runs."""

from __future__ import annotations

import asyncio

from benchmarks.harness import (
    Env,
    Workload,
    enqueue_batched,
    opened_app,
    read_succeeded,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.stores import RedisTarget, SqliteTarget, Target
from benchmarks.workers import BenchmarkError, workers

PER_RUN = "store bytes per queued run"
RSS_IDLE = "worker RSS, idle"
RSS_AFTER = "worker RSS, after 10,000 runs"
DRAINED = 10_000
CONCURRENCY = 100
MIB = 1024 * 1024


async def store_bytes(target: Target) -> int:
    """Redis ``used_memory``; SQLite file + WAL size after a checkpoint."""
    if isinstance(target, RedisTarget):
        return int((await target.info("memory"))["used_memory"])
    if isinstance(target, SqliteTarget):
        return target.size_bytes()
    raise TypeError(f"unknown target {target!r}")


async def bytes_per_run(env: Env, count: int) -> float:
    """The growth of the store per run when ``count`` no-op runs are queued."""
    target = await env.store.fresh()
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(count)]
        before = await store_bytes(target)
        await enqueue_batched(app, prepared)
        after = await store_bytes(target)
        stored = await target.active_count()
    if stored != count:
        raise BenchmarkError(f"LOST RUNS: {count} enqueued, {stored} stored")
    return (after - before) / count


async def worker_rss(env: Env) -> tuple[float, float]:
    """(MiB) of an idle worker process, and after it ran 10,000 no-op runs."""
    target = await env.store.fresh()
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(DRAINED)]
        async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            await asyncio.sleep(1.0)
            idle = procs[0].rss_bytes()
            handles = await app.pool.enqueue_many(prepared)
            await wait_drained(target, procs)
            after = procs[0].rss_bytes()
        await read_succeeded(app, [handle.id for handle in handles])
    return idle / MIB, after / MIB


async def run(env: Env) -> Measured:
    """One repetition: the store's growth (fresh store), then a worker's RSS (another)."""
    count = 20_000 if env.quick else 100_000
    per_run = await bytes_per_run(env, count)
    idle, after = await worker_rss(env)
    return Measured({PER_RUN: per_run, RSS_IDLE: idle, RSS_AFTER: after}, {"runs": count})


WORKLOAD = Workload(
    id="B6",
    title="footprint",
    backends=("sqlite", "redis"),
    metrics=(
        MetricSpec(PER_RUN, "bytes/run", {"redis": Bar("<=", 1_024)}),
        MetricSpec(RSS_IDLE, "MiB"),
        MetricSpec(RSS_AFTER, "MiB"),
    ),
    run=run,
)
