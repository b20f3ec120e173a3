"""What both huey adapters share: their two tasks, their client and the consumer command."""

from __future__ import annotations

import sys
import time
from typing import Any

from benchmarks.peer_apps.observe import IO_SECONDS, SyncClient, observe


def tasks(instance: Any) -> dict[str, Any]:
    """``noop`` and ``io_sleep`` registered on the huey ``instance``."""

    @instance.task()
    def noop(x: float) -> float:
        """The no-op job: returns its input."""
        observe(x)
        return x

    @instance.task()
    def io_sleep(x: float) -> float:
        """The I/O-bound job: 10 ms asleep (the consumer's threads run them side by side)."""
        observe(x)
        time.sleep(IO_SECONDS)
        return x

    return {"noop": noop, "io_sleep": io_sleep}


def client(instance: Any, task: str) -> SyncClient:
    """huey's client is synchronous: calling the task enqueues it."""
    return SyncClient(tasks(instance)[task])


def consumer_command(module: str, processes: int, concurrency: int | None) -> list[str]:
    """``huey_consumer`` for ``module.huey``: its default is 1 worker thread; 2 processes
    are ``-w 2 -k process`` (huey's own way); ``concurrency`` is that many threads."""
    if processes > 1:
        extra = ["-w", str(processes), "-k", "process"]
    elif concurrency is not None:
        extra = ["-w", str(concurrency), "-k", "thread"]
    else:
        extra = []
    return [sys.executable, "-m", "huey.bin.huey_consumer", f"{module}.huey", "-q", *extra]
