"""taskiq on Redis streams (``taskiq_redis.RedisStreamBroker``: acknowledged deliveries).

The consumer group is created at id 0 (not the default "$"), so that a worker started
after the jobs were enqueued (the drain) sees them; nothing else differs from defaults.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from taskiq_redis import RedisStreamBroker

from benchmarks.peer_apps.observe import observe


async def noop(x: float) -> float:
    """The no-op job: returns its input."""
    observe(x)
    return x


def make(url: str) -> tuple[Any, Any]:
    """A RedisStreamBroker on ``url`` and its ``noop`` task."""
    instance = RedisStreamBroker(url, consumer_id="0")
    return instance, instance.task(task_name="noop")(noop)


broker, task = make(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))


def worker_command(concurrency: int | None) -> list[str]:
    """``taskiq worker``, one process (default 2); 100 async tasks (default) or ``concurrency``."""
    extra = [] if concurrency is None else ["--max-async-tasks", str(concurrency)]
    return [
        sys.executable,
        "-m",
        "taskiq",
        "worker",
        f"{__name__}:broker",
        "--workers",
        "1",
        *extra,
    ]


class TaskiqClient:
    """taskiq's client is async: ``await noop.kiq(x)`` (XADD)."""

    def __init__(self, task: Any, owner: Any) -> None:
        self.task = task
        self.owner = owner

    async def enqueue(self, x: float) -> None:
        await self.task.kiq(x)

    async def close(self) -> None:
        await self.owner.shutdown()


async def open_client(url: str) -> TaskiqClient:
    instance, bound = make(url)
    await instance.startup()
    return TaskiqClient(bound, instance)
