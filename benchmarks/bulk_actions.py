"""Bulk actions on 100,000 matching runs: how long ``retry_runs`` and ``cancel_runs``
take on each backend, and that a worker keeps completing other runs meanwhile.

Not part of ``make test`` or ``make bench``; run it on its own::

    .venv/bin/python -m benchmarks.bulk_actions [--runs 100000] [--backend sqlite|redis|postgres]

On a fresh store (a SQLite file, a private redis-server, a private PostgreSQL), N runs
of ``doomed`` (queue ``bulk``, served by no worker) are stored failed with a
ValueError, through the backend in batches of 500 (enqueue, claim, finish). A worker
(in this process, concurrency 8) serves queue ``live``, where a feeder keeps 50 runs of
``ping`` waiting. Then, timed: ``retry_runs`` of the failed runs (N new queued runs),
and ``cancel_runs`` of those N queued runs. For each, the figure is its seconds, runs
per second, and how many ``ping`` runs the worker completed during it (with its
completions per second before the action, as the baseline).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer

from workpool import RunContext, RunFilter, Workpool
from workpool.backends.base import Backend, Finish, NewRun
from workpool.builder import new_run_id

BATCH = 500
ERROR = json.dumps({"type": "ValueError", "message": "doomed", "traceback": None})


@asynccontextmanager
async def store(backend: str) -> AsyncIterator[str]:
    """The URL of a fresh store of ``backend``, removed afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'bulk.db'}"
    elif backend == "redis":
        server = RedisServer().start()
        try:
            yield server.url
        finally:
            server.stop()
    else:
        postgres = PostgresServer().start()
        try:
            yield postgres.url(schema="bulk")
        finally:
            postgres.remove()


async def seed_failed(backend: Backend, count: int) -> None:
    """``count`` failed runs of ``doomed`` in queue ``bulk``."""
    for start in range(0, count, BATCH):
        now = time.time()
        runs = [
            NewRun(id=new_run_id(now), workflow="doomed", queue="bulk", input="0", available_at=now)
            for _ in range(min(BATCH, count - start))
        ]
        await backend.enqueue(runs, now)
        claimed = await backend.claim(["bulk"], "seeder", len(runs), 300.0, 3, now)
        finishes = [Finish(run.lease, "failed", error=ERROR) for run in claimed.runs]
        await backend.finish(finishes, now)


async def measure(backend_name: str, count: int) -> dict[str, float]:
    async with store(backend_name) as url:
        pool = Workpool(url, app="bulk-bench", retention=None)
        pool.queue("live")

        @pool.workflow(queue="live", max_concurrency=None)
        async def ping(ctx: RunContext, n: int) -> int:
            return n

        completed = 0

        async def feed() -> None:
            nonlocal completed
            while True:
                handles = [await ping.run(n) for n in range(50)]
                for handle in handles:
                    await handle.result(timeout=60)
                    completed += 1

        await seed_failed(await pool.backend(), count)
        figures: dict[str, float] = {}
        async with pool.worker(queues=["live"], concurrency=8):
            feeder = asyncio.create_task(feed())
            before, started = completed, time.perf_counter()
            await asyncio.sleep(3)
            figures["baseline pings/s"] = (completed - before) / (time.perf_counter() - started)
            doomed = RunFilter(workflow="doomed", queue="bulk")
            actions: list[tuple[str, Callable[[], Awaitable[int]]]] = [
                ("retry", lambda: pool.retry_runs(doomed)),
                ("cancel", lambda: pool.cancel_runs(doomed)),
            ]
            for name, action in actions:
                before, started = completed, time.perf_counter()
                changed = await action()
                seconds = time.perf_counter() - started
                assert changed == count, (name, changed)
                figures[f"{name} seconds"] = seconds
                figures[f"{name} runs/s"] = count / seconds
                figures[f"{name}: pings completed meanwhile"] = completed - before
                figures[f"{name}: pings/s meanwhile"] = (completed - before) / seconds
            feeder.cancel()
        await pool.aclose()
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--backend", choices=["sqlite", "redis", "postgres"], action="append")
    arguments = parser.parse_args()
    for backend in arguments.backend or ["sqlite", "redis", "postgres"]:
        figures = asyncio.run(measure(backend, arguments.runs))
        print(backend, json.dumps({key: round(value, 1) for key, value in figures.items()}))


if __name__ == "__main__":
    main()
