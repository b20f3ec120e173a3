"""huey on Redis (``RedisHuey``, its defaults: a blocking BRPOP consumer, results kept)."""

from __future__ import annotations

import os

from huey import RedisHuey

from benchmarks.peer_apps import huey_tasks
from benchmarks.peer_apps.observe import SyncClient

huey = RedisHuey("bench", url=os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))
huey_tasks.tasks(huey)


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    return huey_tasks.consumer_command(__name__, processes, concurrency)


async def open_client(url: str, task: str) -> SyncClient:
    return huey_tasks.client(RedisHuey("bench", url=url), task)
