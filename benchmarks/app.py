"""The benchmark application: the pool and workflows that worker processes load.

Worker processes run ``python -m workpool worker benchmarks.app:pool`` with the store in
``$WORKPOOL_URL``; the harness builds its own instance per store with ``build(url)``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from workpool import RunContext, Workflow, Workpool

IO_SLEEP_SECONDS = 0.01
"""How long an ``io_sleep`` run waits, standing for one I/O call."""


@dataclass(frozen=True, slots=True)
class BenchApp:
    """A pool on one store and its workflows."""

    pool: Workpool
    noop: Workflow[Any, Any]
    io_sleep: Workflow[Any, Any]


def build(url: str | None = None) -> BenchApp:
    """The benchmark pool on ``url`` (default ``$WORKPOOL_URL``) with its workflows."""
    pool = Workpool(url, app="bench")

    @pool.workflow()
    async def noop(ctx: RunContext, data: Any) -> Any:
        """Returns its input: the cost of a run is all workpool's."""
        return data

    @pool.workflow()
    async def io_sleep(ctx: RunContext, data: Any) -> Any:
        """Waits 10 ms without using the CPU, like a call to another service."""
        await asyncio.sleep(IO_SLEEP_SECONDS)
        return data

    return BenchApp(pool, noop, io_sleep)


app = build()
pool = app.pool
