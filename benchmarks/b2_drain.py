"""B2 drain: how fast 1 and 2 worker processes (concurrency 100 each) empty a queue, the
two started as two worker commands and as one with ``--processes 2``; and one process
at the CLI's default concurrency (10), which most users run."""

from __future__ import annotations

from benchmarks.harness import (
    Env,
    Workload,
    drain_rate,
    opened_app,
    read_succeeded,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.workers import workers

CONCURRENCY = 100
ONE = "1 process"
TWO = "2 processes"
SUPERVISED = "2 processes, one command (--processes 2)"
DEFAULTS = "1 process, default --concurrency 10"
DEFAULT_CONCURRENCY = 10


async def drain(
    env: Env,
    processes: int,
    count: int,
    *,
    supervised: bool = False,
    concurrency: int = CONCURRENCY,
) -> float:
    """Runs/s of ``processes`` idle workers emptying ``count`` no-op runs on a fresh store.

    The workers start first and go idle; then all runs are stored by ONE enqueue_many
    call (one atomic operation, not timed), so every run exists before the first claim
    and no worker's start-up lag counts. Runs/s = count / (last finish - first start).
    ``supervised``: one ``workpool worker --processes N`` command instead of N commands.
    """
    target = await env.store.fresh()
    commands, args = (1, ("--processes", str(processes))) if supervised else (processes, ())
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(count)]
        started = workers(target, commands, concurrency, env.log_dir, env.worker_env, args)
        async with started as procs:
            handles = await app.pool.enqueue_many(prepared)
            await wait_drained(target, procs, timeout=60 + count / 100)
        runs = await read_succeeded(app, [handle.id for handle in handles])
    return drain_rate(runs)


async def run(env: Env) -> Measured:
    """One repetition: a drain by one process, by two commands, by one command of two
    processes, and by one process at the default concurrency, each on a fresh store."""
    count = 10_000 if env.quick else 20_000
    return Measured(
        {
            ONE: await drain(env, 1, count),
            TWO: await drain(env, 2, count),
            SUPERVISED: await drain(env, 2, count, supervised=True),
            DEFAULTS: await drain(env, 1, count, concurrency=DEFAULT_CONCURRENCY),
        }
    )


WORKLOAD = Workload(
    id="B2",
    title="drain",
    backends=("sqlite", "redis", "postgres"),
    metrics=(
        MetricSpec(ONE, "runs/s"),
        MetricSpec(TWO, "runs/s", {"redis": Bar(">=", 7_000), "sqlite": Bar(">=", 4_000)}),
        MetricSpec(SUPERVISED, "runs/s"),
        MetricSpec(DEFAULTS, "runs/s"),
    ),
    run=run,
)
