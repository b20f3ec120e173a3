"""B4 I/O-bound: one worker (concurrency 50) running handlers that sleep 10 ms."""

from __future__ import annotations

from benchmarks.app import IO_SLEEP_SECONDS
from benchmarks.harness import Env, Workload, drain_rate, opened_app, read_succeeded, wait_drained
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.workers import workers

CONCURRENCY = 50
IDEAL = CONCURRENCY / IO_SLEEP_SECONDS
"""5,000 runs/s: every slot always busy sleeping, no overhead at all."""
RATE = "runs/s"
SHARE = "share of ideal 5,000 runs/s"


async def run(env: Env) -> Measured:
    """One repetition: the worker idles, all runs arrive in one enqueue_many, it drains."""
    count = 5_000 if env.quick else 10_000
    target = await env.store.fresh()
    async with opened_app(target) as app:
        prepared = [app.io_sleep.prepare(number) for number in range(count)]
        async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            handles = await app.pool.enqueue_many(prepared)
            await wait_drained(target, procs, timeout=60 + count / 100)
        runs = await read_succeeded(app, [handle.id for handle in handles])
    rate = drain_rate(runs)
    return Measured({RATE: rate, SHARE: 100 * rate / IDEAL})


WORKLOAD = Workload(
    id="B4",
    title="I/O-bound",
    backends=("sqlite", "redis"),
    metrics=(
        MetricSpec(RATE, "runs/s"),
        MetricSpec(SHARE, "%", {"sqlite": Bar(">=", 70), "redis": Bar(">=", 70)}),
    ),
    run=run,
)
