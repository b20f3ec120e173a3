"""The floor on Redis: a bare job loop, as a competent engineer writes one in an afternoon.

A job is a small JSON object (an id, the task's name, its argument) LPUSHed onto one
list; the consumer, one process and one thread, BRPOPs it, decodes it and runs it (the
no-op: ``observe``). No leases, retries, results or records: what a run would cost with
nothing but Redis and JSON, the bar workpool's Redis figures are read against.

``python -m benchmarks.peer_apps.raw_redis`` is the consumer (``$BENCH_PEER_URL``).
"""

from __future__ import annotations

import json
import os
import sys
import uuid

from redis import Redis

from benchmarks.peer_apps.observe import SyncClient, observe

QUEUE = "jobs"


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    """The consumer: one process, one job at a time (it has no settings)."""
    return [sys.executable, "-m", __name__]


async def open_client(url: str, task: str) -> SyncClient:
    client = Redis.from_url(url)

    def send(x: float) -> None:
        client.lpush(QUEUE, json.dumps({"id": uuid.uuid4().hex, "task": task, "x": x}))

    return SyncClient(send, client.close)


def consume(url: str) -> None:
    """Run jobs until killed."""
    client = Redis.from_url(url)
    while True:
        popped = client.brpop([QUEUE])
        if popped is not None:
            observe(json.loads(popped[1])["x"])


if __name__ == "__main__":
    consume(os.environ.get("BENCH_PEER_URL", "redis://localhost:6379/0"))
