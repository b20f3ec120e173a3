"""procrastinate on PostgreSQL (``PsycopgConnector``: a psycopg pool; async tasks, which
its docs recommend for I/O-bound work, run on the worker's event loop).

Worker: ``procrastinate worker --concurrency 10`` (its default is 1 job at a time; its
docs raise ``concurrency`` for throughput: 10 matches workpool's default), LISTEN/NOTIFY
on (its default), finished jobs kept (its default ``--delete-jobs never``).
"""

from __future__ import annotations

import asyncio
import os
import sys

import procrastinate

from benchmarks.peer_apps.observe import IO_SECONDS, AsyncClient, observe

CONCURRENCY = 10


def make(url: str) -> procrastinate.App:
    """An App on ``url`` with the two tasks."""
    instance = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @instance.task(name="noop")
    async def noop(x: float) -> float:
        """The no-op job: returns its input."""
        observe(x)
        return x

    @instance.task(name="io_sleep")
    async def io_sleep(x: float) -> float:
        """The I/O-bound job: 10 ms asleep."""
        observe(x)
        await asyncio.sleep(IO_SECONDS)
        return x

    return instance


app = make(os.environ.get("BENCH_PEER_URL", "postgresql:///procrastinate"))


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    module = f"{__name__}.app"
    count = str(concurrency or CONCURRENCY)
    return [sys.executable, "-m", "procrastinate", "--app", module, "worker", "-c", count]


async def install(url: str) -> None:
    """Create procrastinate's tables and procedures in the (new) database."""
    instance = make(url)
    async with instance.open_async():
        await instance.schema_manager.apply_schema_async()


async def open_client(url: str, task: str) -> AsyncClient:
    """``await task.defer_async(x=x)``: one INSERT through procrastinate_defer_jobs."""
    instance = make(url)
    await instance.open_async()
    bound = instance.tasks[task]

    async def send(x: float) -> None:
        await bound.defer_async(x=x)

    return AsyncClient(send, instance.close_async)
