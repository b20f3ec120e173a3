"""B4 I/O-bound: one worker (concurrency 50) running handlers that sleep 10 ms."""

from __future__ import annotations

import statistics
import time

from benchmarks.app import IO_SLEEP_SECONDS
from benchmarks.harness import (
    Env,
    Workload,
    drain_rate,
    opened_app,
    read_succeeded,
    seconds_between,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.workers import workers

CONCURRENCY = 50
IDEAL = CONCURRENCY / IO_SLEEP_SECONDS
"""5,000 runs/s: every slot always busy sleeping, no overhead at all."""
RATE = "runs/s"
SHARE = "share of ideal 5,000 runs/s"


async def io_drain(env: Env, count: int) -> tuple[float, dict[str, float]]:
    """Runs/s of one idle worker (concurrency 50) draining ``count`` runs of ``io_sleep``
    that arrive in one enqueue_many, and where the time went (also used by PEERS)."""
    target = await env.store.fresh()
    async with opened_app(target) as app:
        prepared = [app.io_sleep.prepare(number) for number in range(count)]
        async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            cpu_before, started = procs[0].cpu_seconds(), time.monotonic()
            handles = await app.pool.enqueue_many(prepared)
            await wait_drained(target, procs, timeout=60 + count / 100)
            cpu = (procs[0].cpu_seconds() - cpu_before) / (time.monotonic() - started)
        runs = await read_succeeded(app, [handle.id for handle in handles])
    rate = drain_rate(runs)
    # Where the time goes: a slot serves one run per cycle, so the mean cycle is
    # concurrency / rate; the run itself (claim to start of its finish) is the rest.
    held = statistics.median(seconds_between(run, "started_at", "finished_at") for run in runs)
    details = {
        "slot_cycle_ms": 1000 * CONCURRENCY / rate,
        "median_start_to_finish_ms": 1000 * held,
        "worker_cpu_percent_of_a_core": 100 * cpu,
    }
    return rate, details


async def run(env: Env) -> Measured:
    """One repetition: the worker idles, all runs arrive in one enqueue_many, it drains."""
    rate, details = await io_drain(env, 5_000 if env.quick else 10_000)
    return Measured({RATE: rate, SHARE: 100 * rate / IDEAL}, details)


WORKLOAD = Workload(
    id="B4",
    title="I/O-bound",
    backends=("sqlite", "redis", "postgres"),
    metrics=(
        MetricSpec(RATE, "runs/s"),
        MetricSpec(SHARE, "%", {"sqlite": Bar(">=", 70), "redis": Bar(">=", 70)}),
    ),
    run=run,
)
