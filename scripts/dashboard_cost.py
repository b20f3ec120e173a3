"""What the dashboard's pages cost to read, as the history and the backlog grow:
``.venv/bin/python -m scripts.dashboard_cost [--history 0,20000,100000] [--backlog 10000]``.

For each backend (a SQLite file in a temporary folder, a private redis-server), it
stores finished runs up to each history size (enqueued with ``enqueue_many``, then
claimed and finished through the backend in batches of 500, with per-minute counters
spread over the last hour), then times the reads behind each page (median of
``--repeat`` calls, in milliseconds): an overview refresh, a run's page, a page of the
runs list and the workflows page. Last, it enqueues ``--backlog`` runs that no worker
takes and times the overview again: the active counts are the one read that grows,
with the runs waiting (on SQLite).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tests.redis_server import RedisServer

from workpool import RunContext, Workpool
from workpool.backends.base import Finish
from workpool.clock import ManualClock
from workpool.dashboard.overview import read_overview
from workpool.dashboard.runs import Filters, read_run, read_runs
from workpool.dashboard.workflows import read_workflows

BATCH = 500


def shop(url: str) -> Workpool:
    pool = Workpool(url, app="cost", retention=None, log_level="WARNING")

    @pool.workflow(max_concurrency=None)
    async def charge(ctx: RunContext, amount: int) -> int:
        return amount

    @pool.workflow(queue="waiting", max_concurrency=None)
    async def later(ctx: RunContext, amount: int) -> int:
        return amount

    return pool


async def add_history(pool: Workpool, clock: ManualClock, count: int) -> str:
    """Store ``count`` succeeded runs, a batch per simulated minute; return one's id."""
    backend = await pool.backend()
    charge = pool.workflows["charge"]
    last = ""
    for done in range(0, count, BATCH):
        handles = await pool.enqueue_many(
            [charge.prepare(n) for n in range(min(BATCH, count - done))]
        )
        claimed = await backend.claim(
            ["default"], "cost", BATCH, 60.0, 3, clock.now(), workflows=["charge"]
        )
        await backend.finish(
            [Finish(run.lease, "succeeded", output="1") for run in claimed.runs], clock.now()
        )
        last = handles[-1].id
        clock.advance(60 * 60 / max(1, count / BATCH))  # spread over the hour
    return last


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> float:
    """Median milliseconds of ``repeat`` calls."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        await call()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds) * 1000


async def measure(url: str, histories: list[int], backlog: int, repeat: int) -> list[str]:
    pool = shop(url)
    clock = ManualClock(time.time() - 3600)
    pool.clock = clock
    backend = await pool.backend()
    await backend.sync_registry("cost", pool.registry_records(), clock.now(), 0.0)
    rows, stored, run_id = [], 0, ""
    for history in histories:
        if history > stored:
            run_id = await add_history(pool, clock, history - stored)
            stored = history
        rows.append(await _row(pool, f"{history:,} finished", run_id, repeat))
    later = pool.workflows["later"]
    for done in range(0, backlog, BATCH):
        await pool.enqueue_many([later.prepare(n) for n in range(min(BATCH, backlog - done))])
    rows.append(await _row(pool, f"{stored:,} finished + {backlog:,} queued", run_id, repeat))
    await pool.aclose()
    return rows


async def _row(pool: Workpool, label: str, run_id: str, repeat: int) -> str:
    overview = await timed(lambda: read_overview(pool), repeat)
    run = await timed(lambda: read_run(pool, run_id), repeat) if run_id else 0.0
    runs = await timed(lambda: read_runs(pool, Filters(), None), repeat)
    workflows = await timed(lambda: read_workflows(pool), repeat)
    return f"| {label} | {overview:.2f} | {run:.2f} | {runs:.2f} | {workflows:.2f} |"


async def main(arguments: argparse.Namespace) -> None:
    histories = [int(size) for size in arguments.history.split(",")]
    header = (
        "| store | overview | run page | runs list (50) | workflows |\n"
        "| --- | ---: | ---: | ---: | ---: |"
    )
    with tempfile.TemporaryDirectory() as folder:
        sqlite_rows = await measure(
            f"sqlite:///{folder}/cost.db", histories, arguments.backlog, arguments.repeat
        )
    with RedisServer() as server:
        redis_rows = await measure(server.url, histories, arguments.backlog, arguments.repeat)
    for name, rows in (("SQLite", sqlite_rows), ("Redis", redis_rows)):
        print(f"\n{name} (median ms of {arguments.repeat} reads)\n{header}")
        print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", default="0,20000,100000")
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    asyncio.run(main(parser.parse_args()))
