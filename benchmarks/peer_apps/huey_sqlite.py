"""huey on SQLite (``SqliteHuey``, its defaults: WAL, SQLite's default synchronous=FULL,
a consumer that polls from 0.1 s backing off x1.15 to 10 s)."""

from __future__ import annotations

import os

from huey import SqliteHuey

from benchmarks.peer_apps import huey_tasks
from benchmarks.peer_apps.observe import SyncClient

huey = SqliteHuey("bench", filename=os.environ.get("BENCH_PEER_URL", "huey-bench.db"))
huey_tasks.tasks(huey)


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    return huey_tasks.consumer_command(__name__, processes, concurrency)


async def open_client(url: str, task: str) -> SyncClient:
    """A client on the SQLite file ``url`` (a path, not a URL)."""
    return huey_tasks.client(SqliteHuey("bench", filename=url), task)
