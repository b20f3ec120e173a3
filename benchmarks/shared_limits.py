"""Drain with a shared limit, side by side with the same workload without it.

``python -m benchmarks.shared_limits [--runs 3000] [--repeat 3]
[--backends sqlite,redis,postgres]`` enqueues ``--runs`` no-op runs of three workflows in
two queues (one ``enqueue_many``, not timed) on a fresh store, then times one in-process
worker (concurrency 50, both queues) emptying them: with the workflows under no limit;
under their own ``max_concurrency`` of 1,000 (the gates there were before, for scale);
under one shared limit (``pool.limit``) of 1,000; under two such limits (every run
admitted at two shared gates at once); and under one shared limit of 20. A limit of
1,000 is above the worker's 50 slots, so it is not what slows the drain, but below the
backlog, so every finish frees a place and admits the next waiting run: what the
mechanism costs. The limit of 20 is below the slots: fewer runs in flight, so a drain
of no-op runs is slower by design.
Each figure is runs/s from the worker's start to the last run's end, the median of
``--repeat`` repetitions (range in parentheses). Not part of ``make test``.

Every finish of a limited run frees its places and admits the next run in the same
operation; this measures what that costs a drain where the limit is not what slows it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer

from workpool import Limit, RunContext, Workflow, Workpool

WORKFLOWS = (("sync", "crm"), ("refund", "crm"), ("invoice", "billing"))
CONCURRENCY = 50
BELOW = 20
"""A limit below the worker's concurrency: full the whole drain."""
ABOVE = 1_000
"""A limit above the worker's concurrency (50) and below the backlog: never what slows
the drain, while every finish admits the next waiting run."""
CONFIGURATIONS = (
    "no limit",
    "own max_concurrency 1,000",
    "shared limit 1,000",
    "two shared limits 1,000",
    "shared limit 20",
)


def define(pool: Workpool, configuration: str) -> list[Workflow[int, int]]:
    """The three workflows, under the configuration's shared limits."""
    limits: list[Limit] = []
    if configuration == "shared limit 20":
        limits.append(pool.limit("partner", max_concurrency=BELOW))
    elif configuration != "no limit":
        limits.append(pool.limit("partner", max_concurrency=ABOVE))
    if configuration == "two shared limits 1,000":
        limits.append(pool.limit("database", max_concurrency=ABOVE))

    async def call(ctx: RunContext, number: int) -> int:
        return number

    own = ABOVE if configuration == "own max_concurrency 1,000" else None
    return [
        pool.workflow(name, queue=queue, limits=limits, max_concurrency=own)(call)
        for name, queue in WORKFLOWS
    ]


async def drain(url: str, configuration: str, runs: int) -> float:
    """Runs/s of one worker emptying ``runs`` runs under ``configuration``."""
    pool = Workpool(url, app="bench-limits")
    try:
        workflows = define(pool, configuration)
        await pool.enqueue_many([workflows[number % 3].prepare(number) for number in range(runs)])
        started = time.perf_counter()
        async with pool.worker(queues=["crm", "billing"], concurrency=CONCURRENCY):
            while (await pool.stats(timedelta(minutes=30))).total.succeeded < runs:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        return runs / (time.perf_counter() - started)
    finally:
        await pool.aclose()
        pool.close()


@contextmanager
def stores(backend: str, folder: Path) -> Iterator[Iterator[str]]:
    """Fresh store URLs of ``backend``, one per call of the yielded iterator."""
    if backend == "sqlite":
        yield (f"sqlite:///{folder}/store{n}.db" for n in range(1_000))
    elif backend == "redis":
        with RedisServer() as server:  # a database each (16: 3 repetitions at most)
            yield (f"redis://127.0.0.1:{server.port}/{n}" for n in range(16))
    else:
        with PostgresServer() as server:
            yield (server.url(f"bench{n}") for n in range(1_000))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.shared_limits")
    parser.add_argument("--runs", type=int, default=3_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,redis,postgres")
    args = parser.parse_args()
    print(f"| backend | {' | '.join(CONFIGURATIONS)} |")
    print(f"| --- |{' ---: |' * len(CONFIGURATIONS)}")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as folder, stores(backend, Path(folder)) as urls:
            figures: dict[str, list[float]] = {name: [] for name in CONFIGURATIONS}
            for _ in range(args.repeat):  # alternated, so drift hits every configuration
                for name in CONFIGURATIONS:
                    rate = asyncio.run(drain(next(urls), name, args.runs))
                    figures[name].append(rate)
        cells = [
            f"{statistics.median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f})"
            for rates in figures.values()
        ]
        print(f"| {backend} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
