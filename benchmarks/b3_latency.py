"""B3 dispatch latency: an idle worker's CPU use, then open-loop enqueues at 200 runs/s."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from benchmarks.app import BenchApp
from benchmarks.b7_round_trips import calls_of, cpu_seconds, script_commands, top_level, usec
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
WARM_UP_SECONDS = 1.0
WARM_P99 = "enqueue to start, p99, first second left out"


def _name(span: str, p: int) -> str:
    return f"enqueue to {span}, p{p}"


async def idle_cpu_percent(process: WorkerProcess, seconds: float) -> float:
    """CPU time the idle worker used over ``seconds``, as % of one core."""
    before, start = process.cpu_seconds(), time.monotonic()
    await asyncio.sleep(seconds)
    return 100 * (process.cpu_seconds() - before) / (time.monotonic() - start)


@dataclass(frozen=True, slots=True)
class OpenLoop:
    """What the open-loop client did."""

    run_ids: list[str]
    achieved: float
    """Runs/s actually enqueued (below the rate asked for if enqueues ran late)."""
    enqueue_ms: list[float]
    """How long each ``run()`` call took."""


async def open_loop(app: BenchApp, rate: int, seconds: float) -> OpenLoop:
    """Enqueue one run per slot (slot k at start + k/rate), never waiting for results."""
    count = int(rate * seconds)
    ids: list[str] = []
    durations: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    for number in range(count):
        delay = start + number / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        called = loop.time()
        ids.append((await app.noop.run(number)).id)
        durations.append(1000 * (loop.time() - called))
    return OpenLoop(ids, count / (loop.time() - start), durations)


@dataclass(frozen=True, slots=True)
class ServerWindow:
    """What redis-server did while the open loop ran (see B7 for the method)."""

    commands_per_run: float
    """Top-level commands per run, less the INFO that opened the window."""
    top_level: dict[str, float]
    """The same, per command name."""
    cpu_us_per_run: float
    """redis-server's CPU time (user + system) per run."""
    evalsha_us_per_run: float
    """The scripts' own time (EVALSHA's usec) per run."""


async def server_window(
    target: RedisTarget, before: dict[str, Any], cpu_before: float, runs: int
) -> ServerWindow:
    """The server's work per run since ``before`` (an INFO commandstats reply) and
    ``cpu_before`` (its CPU seconds, read just before)."""
    after = await target.info("commandstats")
    cpu_after = await cpu_seconds(target)
    calls_before, calls_after = calls_of(before), calls_of(after)
    delta = {name: calls - calls_before.get(name, 0) for name, calls in calls_after.items()}
    delta["info"] -= 1
    top = {name: calls / runs for name, calls in top_level(delta, script_commands()).items()}
    return ServerWindow(
        commands_per_run=sum(top.values()),
        top_level={name: share for name, share in top.items() if share},
        cpu_us_per_run=1e6 * (cpu_after - cpu_before) / runs,
        evalsha_us_per_run=(usec(after, "evalsha") - usec(before, "evalsha")) / runs,
    )


async def run(env: Env) -> Measured:
    """One repetition on a fresh store with one worker process (concurrency 10)."""
    idle_seconds, load_seconds = (3.0, 5.0) if env.quick else (5.0, 10.0)
    target = await env.store.fresh()
    async with opened_app(target) as app:
        async with workers(target, 1, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            await asyncio.sleep(SETTLE_SECONDS)
            values = {IDLE_CPU: await idle_cpu_percent(procs[0], idle_seconds)}
            window: ServerWindow | None = None
            if isinstance(target, RedisTarget):
                cpu_before = await cpu_seconds(target)
                before = await target.info("commandstats")
            client = await open_loop(app, RATE, load_seconds)
            if isinstance(target, RedisTarget):
                await asyncio.sleep(TAIL_SECONDS)
                window = await server_window(target, before, cpu_before, len(client.run_ids))
                values[COMMANDS] = window.commands_per_run
            await wait_drained(target, procs)
        runs = await read_succeeded(app, client.run_ids)
    for span, end in (("start", "started_at"), ("finish", "finished_at")):
        latencies = [1000 * seconds_between(run, "created_at", end) for run in runs]
        for p in PERCENTILES:
            values[_name(span, p)] = percentile(latencies, p)
    # The first runs find the worker idle (an idle SQLite worker polls every 200 ms), so
    # p99 also shows without them: the dispatch latency of a worker already busy.
    first = min(run.created_at for run in runs).timestamp()
    warm = [
        1000 * seconds_between(run, "created_at", "started_at")
        for run in runs
        if run.created_at.timestamp() - first >= WARM_UP_SECONDS
    ]
    values[WARM_P99] = percentile(warm, 99)
    values[ACHIEVED] = client.achieved
    details = {
        "runs": len(runs),
        "idle_seconds": idle_seconds,
        # The client's own enqueue calls: a slow tail here is time spent waiting (locks).
        "enqueue_call_ms": {f"p{p}": percentile(client.enqueue_ms, p) for p in (50, 99, 100)},
    }
    if window is not None:
        details["server_cpu_us_per_run"] = window.cpu_us_per_run
        details["evalsha_us_per_run"] = window.evalsha_us_per_run
        details["top_level_per_run"] = window.top_level
    return Measured(values, details)


WORKLOAD = Workload(
    id="B3",
    title="dispatch latency",
    backends=("sqlite", "redis", "postgres"),
    metrics=(
        MetricSpec(_name("start", 50), "ms", {"redis": Bar("<=", 1.0)}),
        MetricSpec(_name("start", 95), "ms"),
        MetricSpec(_name("start", 99), "ms", {"redis": Bar("<=", 1.5), "sqlite": Bar("<=", 10)}),
        MetricSpec(WARM_P99, "ms"),
        MetricSpec(_name("finish", 50), "ms"),
        MetricSpec(_name("finish", 95), "ms"),
        MetricSpec(_name("finish", 99), "ms"),
        MetricSpec(ACHIEVED, "runs/s"),
        MetricSpec(IDLE_CPU, "% of a core"),
        MetricSpec(COMMANDS, "commands/run", only="redis"),
    ),
    run=run,
)
