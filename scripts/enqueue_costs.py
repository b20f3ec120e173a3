"""Where the time of one enqueue goes, on Redis (docs/benchmarks.md, issue 15).

Run: ``python scripts/enqueue_costs.py REDIS_URL`` against a private, empty redis-server
(it flushes it), with ``PYTHONPATH`` naming the ``src/`` of the version to measure. Prints
µs per run, each the median of 7 blocks:

- the client's own steps, timed alone: ``prepare`` (validation and JSON), the run builder
  (ids included), a run id alone, the ``enqueued`` log record (when a handler would show
  it; none is made without one), packing the script's arguments;
- the script on the server: EVALSHA's ``usec`` per call in ``INFO commandstats``;
- whole calls: ``await wf.run(i)``, ``wf.run_sync(i)``, and for scale a bare ``LPUSH`` of
  a small JSON job with redis-py's sync client (what huey's enqueue sends) and its asyncio
  client.
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
import time
from collections.abc import Awaitable, Callable

import redis
import redis.asyncio as aredis

from workpool import RunContext, Workflow, Workpool
from workpool.backends.base import Enqueued
from workpool.backends.redis.codec.runs import encode_runs
from workpool.builder import build_new_run, new_run_id
from workpool.client import _log_enqueued

BLOCK = 2_000
BLOCKS = 7


def per_run(block: Callable[[], None]) -> float:
    """Median µs per run of ``block`` (which does BLOCK runs) over BLOCKS blocks."""
    samples = []
    for _ in range(BLOCKS):
        started = time.perf_counter()
        block()
        samples.append((time.perf_counter() - started) / BLOCK * 1e6)
    return statistics.median(samples)


async def per_run_async(block: Callable[[], Awaitable[None]]) -> float:
    samples = []
    for _ in range(BLOCKS):
        started = time.perf_counter()
        await block()
        samples.append((time.perf_counter() - started) / BLOCK * 1e6)
    return statistics.median(samples)


def client_figures(pool: Workpool, noop: Workflow[[int], int]) -> dict[str, float]:
    """The client's own steps, each timed alone."""
    prepared = noop.prepare(1)
    new_run = build_new_run(pool.registry, pool.settings, prepared, time.time())
    handler = logging.NullHandler()
    logging.getLogger("workpool.client").addHandler(handler)
    try:
        return {
            "prepare (validation, JSON)": per_run(lambda: [noop.prepare(n) for n in range(BLOCK)]),
            "run builder (id included)": per_run(
                lambda: [
                    build_new_run(pool.registry, pool.settings, prepared, 1.7e9)
                    for _ in range(BLOCK)
                ]
            ),
            "run id alone": per_run(lambda: [new_run_id(1.7e9) for _ in range(BLOCK)]),
            "log record (a handler attached)": per_run(
                lambda: [
                    _log_enqueued([new_run], [Enqueued(new_run.id, created=True)])
                    for _ in range(BLOCK)
                ]
            ),
            "script arguments packed": per_run(
                lambda: [encode_runs([new_run], 1.7e9) for _ in range(BLOCK)]
            ),
        }
    finally:
        logging.getLogger("workpool.client").removeHandler(handler)


async def async_figures(
    url: str, server: redis.Redis, noop: Workflow[[int], int]
) -> dict[str, float]:
    """Whole awaited calls, the script's server time, and a bare asyncio LPUSH."""

    async def enqueue_block() -> None:
        for number in range(BLOCK):
            await noop.run(number)

    await enqueue_block()  # connections, scripts, caches
    server.config_resetstat()
    awaited = await per_run_async(enqueue_block)
    stats = server.info("commandstats")["cmdstat_evalsha"]
    client = aredis.Redis.from_url(url)

    async def lpush_block() -> None:
        for number in range(BLOCK):
            await client.lpush("bare", json.dumps({"id": number, "args": [number]}))

    await lpush_block()
    bare_async = await per_run_async(lpush_block)
    await client.aclose()
    return {
        "server: EVALSHA per enqueue (usec)": float(stats["usec_per_call"]),
        "await wf.run(i), whole": awaited,
        "bare LPUSH, redis-py asyncio": bare_async,
    }


def sync_figures(server: redis.Redis, noop: Workflow[[int], int]) -> dict[str, float]:
    """Whole ``run_sync`` calls and a bare sync LPUSH (what huey's enqueue sends)."""

    def sync_block() -> None:
        for number in range(BLOCK):
            noop.run_sync(number)

    def lpush_sync_block() -> None:
        for number in range(BLOCK):
            server.lpush("bare", json.dumps({"id": number, "args": [number]}))

    sync_block()
    return {
        "wf.run_sync(i), whole": per_run(sync_block),
        "bare LPUSH, redis-py sync (huey's client)": per_run(lpush_sync_block),
    }


def main(url: str) -> None:
    server = redis.Redis.from_url(url)
    server.flushall()
    pool = Workpool(url, app="costs")

    @pool.workflow()
    async def noop(ctx: RunContext, value: int) -> int:
        return value

    figures = client_figures(pool, noop)
    figures.update(asyncio.run(async_figures(url, server, noop)))
    figures.update(sync_figures(server, noop))
    pool.close()
    server.flushall()
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"{name:<{width}}  {value:8.1f} µs")


if __name__ == "__main__":
    main(sys.argv[1])
