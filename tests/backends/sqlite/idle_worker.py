"""A worker process for the wake-up tests.

``python -m tests.backends.sqlite.idle_worker URL`` serves the ``note`` workflow on
the SQLite store at URL. An idle wait lasts up to ``IDLE_WAIT`` (a minute), so a run
that starts sooner was started by a wake-up.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

from workpool import RunContext, Workflow, Workpool
from workpool.worker.options import WorkerOptions
from workpool.worker.worker import Worker

APP = "wakeups"
IDLE_WAIT = timedelta(seconds=60)


def define_note(pool: Workpool) -> Workflow[int, int]:
    """The workflow the tests enqueue: returns its input."""

    @pool.workflow(max_concurrency=None)
    async def note(ctx: RunContext, value: int) -> int:
        return value

    return note


async def serve(url: str) -> None:
    pool = Workpool(url, app=APP)
    define_note(pool)
    await Worker(pool, WorkerOptions(max_idle_wait=IDLE_WAIT)).run()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
