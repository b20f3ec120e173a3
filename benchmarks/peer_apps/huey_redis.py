"""huey on Redis (``RedisHuey``, its defaults: a blocking BRPOP consumer, results kept)."""

from __future__ import annotations

import os
import sys
from typing import Any

from huey import RedisHuey

from benchmarks.peer_apps.observe import SyncClient, observe


def make(url: str) -> tuple[Any, Any]:
    """A RedisHuey on ``url`` and its no-op task."""
    instance = RedisHuey("bench", url=url)

    @instance.task()
    def noop(x: float) -> float:
        """The no-op job: returns its input."""
        observe(x)
        return x

    return instance, noop


huey, noop = make(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))


def worker_command(concurrency: int | None) -> list[str]:
    """``huey_consumer`` (default: 1 worker thread); with ``concurrency``: that many threads."""
    extra = [] if concurrency is None else ["-w", str(concurrency), "-k", "thread"]
    return [sys.executable, "-m", "huey.bin.huey_consumer", f"{__name__}.huey", "-q", *extra]


async def open_client(url: str) -> SyncClient:
    return SyncClient(make(url)[1])
