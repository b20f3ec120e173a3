"""taskiq on Redis streams (``taskiq_redis.RedisStreamBroker``: acknowledged deliveries).

The consumer group is created at id 0 (not the default "$"), so that a worker started
after the jobs were enqueued (the drain) sees them; nothing else differs from defaults.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from taskiq_redis import RedisStreamBroker

from benchmarks.peer_apps.observe import CALLERS, IO_SECONDS, observe


async def noop(x: float) -> float:
    """The no-op job: returns its input."""
    observe(x)
    return x


async def io_sleep(x: float) -> float:
    """The I/O-bound job: 10 ms asleep (``await asyncio.sleep``)."""
    observe(x)
    await asyncio.sleep(IO_SECONDS)
    return x


def make(url: str) -> tuple[Any, dict[str, Any]]:
    """A RedisStreamBroker on ``url`` and its two tasks."""
    instance = RedisStreamBroker(url, consumer_id="0")
    # Named here: decorating renames the function it wraps.
    functions = {"noop": noop, "io_sleep": io_sleep}
    return instance, {name: instance.task(task_name=name)(f) for name, f in functions.items()}


broker, tasks = make(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    """``taskiq worker`` with ``processes`` (its default is 2: stated explicitly); 100
    async tasks each (its default), or ``concurrency``."""
    extra = [] if concurrency is None else ["--max-async-tasks", str(concurrency)]
    module = f"{__name__}:broker"
    return [sys.executable, "-m", "taskiq", "worker", module, "--workers", str(processes), *extra]


class TaskiqClient:
    """taskiq's client is async: ``await noop.kiq(x)`` (XADD); concurrent callers are
    rounds of ``CALLERS`` calls under ``asyncio.gather``, as B1's."""

    def __init__(self, task: Any, owner: Any) -> None:
        self.task = task
        self.owner = owner

    async def enqueue(self, x: float) -> None:
        await self.task.kiq(x)

    async def enqueue_concurrently(self, xs: Sequence[float]) -> None:
        for first in range(0, len(xs), CALLERS):
            await asyncio.gather(*(self.task.kiq(x) for x in xs[first : first + CALLERS]))

    async def close(self) -> None:
        await self.owner.shutdown()


async def open_client(url: str, task: str) -> TaskiqClient:
    instance, bound = make(url)
    await instance.startup()
    return TaskiqClient(bound[task], instance)
