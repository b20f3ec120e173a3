"""B3 dispatch latency: an idle worker's CPU use, then open-loop enqueues at 200 runs/s."""

from __future__ import annotations

import asyncio
import time

from benchmarks.app import BenchApp
from benchmarks.b7_round_trips import command_calls, script_commands, top_level
from benchmarks.harness import (
    Env,
    Workload,
    opened_app,
    read_succeeded,
    seconds_between,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec, percentile
from benchmarks.stores import RedisTarget
from benchmarks.workers import WorkerProcess, workers

RATE = 200
"""Runs enqueued per second, on a fixed schedule."""
CONCURRENCY = 10
SETTLE_SECONDS = 1.0
"""How long the worker is left idle before anything is measured."""
IDLE_CPU = "idle worker CPU"
COMMANDS = "top-level Redis commands per run"
TAIL_SECONDS = 0.25
"""After the last enqueue: more than enough for the last runs to finish (p99 << 250 ms)."""
ACHIEVED = "enqueue rate achieved"
PERCENTILES = (50, 95, 99)


def _name(span: str, p: int) -> str:
    return f"enqueue to {span}, p{p}"


async def idle_cpu_percent(process: WorkerProcess, seconds: float) -> float:
    """CPU time the idle worker used over ``seconds``, as % of one core."""
    before, start = process.cpu_seconds(), time.monotonic()
    await asyncio.sleep(seconds)
    return 100 * (process.cpu_seconds() - before) / (time.monotonic() - start)


async def open_loop(app: BenchApp, rate: int, seconds: float) -> tuple[list[str], float]:
    """Enqueue one run per slot (slot k at start + k/rate), never waiting for results.

    Returns the run ids and the rate achieved (below ``rate`` if enqueues ran late).
    """
    count = int(rate * seconds)
    ids: list[str] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    for number in range(count):
        delay = start + number / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        ids.append((await app.noop.run(number)).id)
    return ids, count / (loop.time() - start)


async def commands_per_run(target: RedisTarget, before: dict[str, int], runs: int) -> float:
    """Top-level commands per run since ``before`` (see B7), less the INFO that took it."""
    after = await command_calls(target)
    delta = {name: calls - before.get(name, 0) for name, calls in after.items()}
    delta["info"] -= 1
    return sum(top_level(delta, script_commands()).values()) / runs


async def run(env: Env) -> Measured:
    """One repetition on a fresh store with one worker process (concurrency 10)."""
    idle_seconds, load_seconds = (3.0, 5.0) if env.quick else (5.0, 10.0)
    target = await env.store.fresh()
    async with opened_app(target) as app:
        async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            await asyncio.sleep(SETTLE_SECONDS)
            values = {IDLE_CPU: await idle_cpu_percent(procs[0], idle_seconds)}
            before = await command_calls(target) if isinstance(target, RedisTarget) else {}
            ids, achieved = await open_loop(app, RATE, load_seconds)
            if isinstance(target, RedisTarget):
                await asyncio.sleep(TAIL_SECONDS)
                values[COMMANDS] = await commands_per_run(target, before, len(ids))
            await wait_drained(target, procs)
        runs = await read_succeeded(app, ids)
    for span, end in (("start", "started_at"), ("finish", "finished_at")):
        latencies = [1000 * seconds_between(run, "created_at", end) for run in runs]
        for p in PERCENTILES:
            values[_name(span, p)] = percentile(latencies, p)
    values[ACHIEVED] = achieved
    return Measured(values, {"runs": len(runs), "idle_seconds": idle_seconds})


WORKLOAD = Workload(
    id="B3",
    title="dispatch latency",
    backends=("sqlite", "redis"),
    metrics=(
        MetricSpec(_name("start", 50), "ms", {"redis": Bar("<=", 1.0)}),
        MetricSpec(_name("start", 95), "ms"),
        MetricSpec(_name("start", 99), "ms", {"redis": Bar("<=", 1.5), "sqlite": Bar("<=", 10)}),
        MetricSpec(_name("finish", 50), "ms"),
        MetricSpec(_name("finish", 95), "ms"),
        MetricSpec(_name("finish", 99), "ms"),
        MetricSpec(ACHIEVED, "runs/s"),
        MetricSpec(IDLE_CPU, "% of a core"),
        MetricSpec(COMMANDS, "commands/run", only="redis"),
    ),
    run=run,
)
