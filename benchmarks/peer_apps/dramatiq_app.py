"""dramatiq on Redis (``RedisBroker``, default middleware; no result backend)."""

from __future__ import annotations

import os
import sys
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from benchmarks.peer_apps.observe import SyncClient, observe


def noop(x: float) -> float:
    """The no-op job: returns its input."""
    observe(x)
    return x


def make(url: str) -> Any:
    """The ``noop`` actor on a RedisBroker of ``url``."""
    return dramatiq.actor(actor_name="noop", broker=RedisBroker(url=url))(noop)


actor = make(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))
dramatiq.set_broker(actor.broker)


def worker_command(concurrency: int | None) -> list[str]:
    """``dramatiq`` with one process (its default is 2); default threads 8, else ``concurrency``."""
    extra = [] if concurrency is None else ["--threads", str(concurrency)]
    return [sys.executable, "-m", "dramatiq", __name__, "--processes", "1", *extra]


async def open_client(url: str) -> SyncClient:
    return SyncClient(make(url).send)
