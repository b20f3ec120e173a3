"""huey on SQLite (``SqliteHuey``, its defaults: a consumer that polls with backoff)."""

from __future__ import annotations

import os
import sys
from typing import Any

from huey import SqliteHuey

from benchmarks.peer_apps.observe import SyncClient, observe


def make(filename: str) -> tuple[Any, Any]:
    """A SqliteHuey on ``filename`` and its no-op task."""
    instance = SqliteHuey("bench", filename=filename)

    @instance.task()
    def noop(x: float) -> float:
        """The no-op job: returns its input."""
        observe(x)
        return x

    return instance, noop


huey, noop = make(os.environ.get("BENCH_PEER_URL", "huey-bench.db"))


def worker_command(concurrency: int | None) -> list[str]:
    """``huey_consumer`` (default: 1 worker thread); with ``concurrency``: that many threads."""
    extra = [] if concurrency is None else ["-w", str(concurrency), "-k", "thread"]
    return [sys.executable, "-m", "huey.bin.huey_consumer", f"{__name__}.huey", "-q", *extra]


async def open_client(url: str) -> SyncClient:
    """A client on the SQLite file ``url`` (a path, not a URL)."""
    return SyncClient(make(url)[1])
