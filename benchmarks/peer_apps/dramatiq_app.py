"""dramatiq on Redis (``RedisBroker``, default middleware; no result backend)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from benchmarks.peer_apps.observe import IO_SECONDS, SyncClient, observe


def noop(x: float) -> float:
    """The no-op job: returns its input."""
    observe(x)
    return x


def io_sleep(x: float) -> float:
    """The I/O-bound job: 10 ms asleep (the worker's threads run them side by side)."""
    observe(x)
    time.sleep(IO_SECONDS)
    return x


def make(url: str) -> dict[str, Any]:
    """The two actors on a RedisBroker of ``url``."""
    broker = RedisBroker(url=url)
    return {
        f.__name__: dramatiq.actor(actor_name=f.__name__, broker=broker)(f)
        for f in (noop, io_sleep)
    }


actors = make(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))
dramatiq.set_broker(actors["noop"].broker)


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    """``dramatiq`` with ``processes`` (its default is one per core: stated explicitly);
    8 threads each (its default), or ``concurrency``."""
    extra = [] if concurrency is None else ["--threads", str(concurrency)]
    return [sys.executable, "-m", "dramatiq", __name__, "--processes", str(processes), *extra]


async def open_client(url: str, task: str) -> SyncClient:
    broker_actors = make(url)
    return SyncClient(broker_actors[task].send, broker_actors[task].broker.close)
