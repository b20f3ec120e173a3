"""B5 depth: do enqueue and claim+finish slow down with a deep backlog or a long history?

The backlog is runs of ``noop`` scheduled a year ahead in the default queue, the queue
the worker serves: they sit in the same indexes a claim reads (SQLite's partial index of
scheduled runs; Redis's scheduled sorted set), and every claim looks at the earliest one,
so this stresses exactly the structures a busy queue would. History is finished runs.

The configuration "mixed priorities" measures the cost of priorities on the same deep
store: the 2,000 runs carry priorities spread over -100..100 (the claimable set is then
ordered unlike enqueue order), where the others carry none.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta

from benchmarks.app import BenchApp
from benchmarks.harness import (
    BATCH,
    Env,
    Workload,
    drain_rate,
    enqueue_batched,
    opened_app,
    read_succeeded,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.stores import Target
from benchmarks.workers import BenchmarkError, workers

SHALLOW = 1_000
MEASURED = 2_000
SAMPLES = 3
"""Measurements per configuration and repetition (their median is the repetition's);
1 in quick mode."""
CONCURRENCY = 100
FAR = timedelta(days=365)
CONFIGS = ("shallow", "deep backlog", "mixed priorities", "long history")
PRIORITY_STRIDE = 37
"""Run n of a measurement gets priority (n * 37) % 201 - 100: every value of -100..100,
in an order unlike n's (37 and 201 are coprime)."""
RATIO_BAR = Bar("<=", 1.25)


def deep_size(backend: str, quick: bool) -> int:
    """Runs in the deep backlog (and in the long history)."""
    if backend == "redis":
        return 100_000 if quick else 1_000_000
    return 20_000 if quick else 100_000  # SQLite and PostgreSQL


async def park(app: BenchApp, count: int) -> None:
    """Enqueue ``count`` runs due in a year, in batches of 500 (not timed)."""
    for start in range(0, count, BATCH):
        size = min(BATCH, count - start)
        await app.pool.enqueue_many([app.noop.prepare(n, run_after=FAR) for n in range(size)])


async def measure(
    env: Env, target: Target, app: BenchApp, *, priorities: bool = False
) -> tuple[float, float]:
    """Median of 3 ``measure_once`` (1 if quick): a 2,000-run drain lasts a fraction of
    a second, so one alone is at the mercy of the scheduler."""
    samples = [
        await measure_once(env, target, app, priorities) for _ in range(1 if env.quick else SAMPLES)
    ]
    return (
        statistics.median(enqueue for enqueue, _ in samples),
        statistics.median(rate for _, rate in samples),
    )


async def measure_once(
    env: Env, target: Target, app: BenchApp, priorities: bool
) -> tuple[float, float]:
    """(µs per run to enqueue 2,000 runs in batches of 500, claim+finish runs/s); with
    ``priorities``, run n has priority (n * PRIORITY_STRIDE) % 201 - 100."""
    prepared = [
        app.noop.prepare(n, priority=(n * PRIORITY_STRIDE) % 201 - 100)
        if priorities
        else app.noop.prepare(n)
        for n in range(MEASURED)
    ]
    start = time.perf_counter()
    ids = await enqueue_batched(app, prepared)
    enqueue_us = 1e6 * (time.perf_counter() - start) / MEASURED
    # The worker starts after the enqueue so the two costs do not mix; its start-up
    # does not count (runs/s is measured from the first claim to the last finish).
    async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
        await wait_drained(target, procs, scheduled=False)
    runs = await read_succeeded(app, ids)
    return enqueue_us, drain_rate(runs)


async def run(env: Env) -> Measured:
    """Shallow, then deep backlog, then long history, on one store."""
    deep = deep_size(env.backend, env.quick)
    enqueue: dict[str, float] = {}
    drain: dict[str, float] = {}
    target = await env.store.fresh()
    async with opened_app(target) as app:
        await park(app, SHALLOW)
        enqueue["shallow"], drain["shallow"] = await measure(env, target, app)
        started = time.monotonic()
        await park(app, deep - SHALLOW)
        park_seconds = time.monotonic() - started
        enqueue["deep backlog"], drain["deep backlog"] = await measure(env, target, app)
        mixed = await measure(env, target, app, priorities=True)
        enqueue["mixed priorities"], drain["mixed priorities"] = mixed
        started = time.monotonic()
        canceled = await app.pool.cancel_all(reason="history")
        cancel_seconds = time.monotonic() - started
        if canceled != deep:
            raise BenchmarkError(f"cancel_all canceled {canceled} runs, expected {deep}")
        await park(app, SHALLOW)
        enqueue["long history"], drain["long history"] = await measure(env, target, app)
    values: dict[str, float] = {}
    for config in CONFIGS:
        values[f"enqueue, {config}"] = enqueue[config]
        values[f"claim+finish, {config}"] = drain[config]
    for config in CONFIGS[1:]:
        values[f"enqueue {config}/shallow"] = enqueue[config] / enqueue["shallow"]
        # Time per run is 1/rate, so the ratio of times is shallow rate / deep rate.
        values[f"claim+finish {config}/shallow"] = drain["shallow"] / drain[config]
    values["enqueue mixed priorities/deep backlog"] = (
        enqueue["mixed priorities"] / enqueue["deep backlog"]
    )
    values["claim+finish mixed priorities/deep backlog"] = (
        drain["deep backlog"] / drain["mixed priorities"]
    )
    details = {"deep": deep, "park_seconds": park_seconds, "cancel_all_seconds": cancel_seconds}
    return Measured(values, details)


def _metrics() -> tuple[MetricSpec, ...]:
    specs = [MetricSpec(f"enqueue, {config}", "µs/run") for config in CONFIGS]
    specs += [MetricSpec(f"claim+finish, {config}", "runs/s") for config in CONFIGS]
    bars = {"sqlite": RATIO_BAR, "redis": RATIO_BAR, "postgres": RATIO_BAR}
    for cost in ("enqueue", "claim+finish"):
        specs += [MetricSpec(f"{cost} {config}/shallow", "ratio", bars) for config in CONFIGS[1:]]
    specs += [
        MetricSpec(f"{cost} mixed priorities/deep backlog", "ratio", bars)
        for cost in ("enqueue", "claim+finish")
    ]
    return tuple(specs)


WORKLOAD = Workload(
    id="B5",
    title="queue depth",
    backends=("sqlite", "redis", "postgres"),
    metrics=_metrics(),
    run=run,
)
