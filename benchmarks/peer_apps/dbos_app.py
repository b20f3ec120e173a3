"""DBOS on PostgreSQL: durable workflows on a queue (``DBOS.register_queue``), enqueued
by ``DBOSClient`` (its client for other processes: synchronous, SQLAlchemy over psycopg).

Worker: one process that launches DBOS and serves the queue at its defaults (polled
every ``polling_interval_sec`` = 1 s, no worker concurrency limit); the workflows are
async (run on DBOS's event loop). ``python -m benchmarks.peer_apps.dbos_app`` is the
worker (``$BENCH_PEER_URL``), ``... --install`` launches once to create its tables.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig

from benchmarks.peer_apps.observe import IO_SECONDS, SyncClient, observe

QUEUE = "bench"


def config(url: str) -> DBOSConfig:
    return {"name": "bench", "system_database_url": url, "log_level": "WARNING"}


def serve(url: str, install_only: bool) -> None:
    """Launch DBOS with the two workflows and the queue; serve until killed."""
    DBOS(config=config(url))

    @DBOS.workflow(name="noop")
    async def noop(x: float) -> float:
        observe(x)
        return x

    @DBOS.workflow(name="io_sleep")
    async def io_sleep(x: float) -> float:
        observe(x)
        await asyncio.sleep(IO_SECONDS)
        return x

    DBOS.launch()
    DBOS.register_queue(QUEUE)
    if install_only:
        DBOS.destroy()
        return
    threading.Event().wait()


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    return [sys.executable, "-m", __name__]


async def install(url: str) -> None:
    """Launch DBOS once (in a process of its own) so its system tables exist."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", __name__, "--install", env={**os.environ, "BENCH_PEER_URL": url}
    )
    if await process.wait() != 0:
        raise RuntimeError(f"DBOS install exited with {process.returncode}")


async def open_client(url: str, task: str) -> SyncClient:
    """``client.enqueue({"queue_name": ..., "workflow_name": task}, x)``."""
    client = DBOSClient(system_database_url=url)
    options: Any = {"queue_name": QUEUE, "workflow_name": task}

    def send(x: float) -> None:
        client.enqueue(options, x)

    return SyncClient(send, client.destroy)


if __name__ == "__main__":
    serve(os.environ.get("BENCH_PEER_URL", "postgresql:///dbos"), "--install" in sys.argv)
