"""The ceiling on PostgreSQL: a bare ``FOR UPDATE SKIP LOCKED`` job loop, as a competent
engineer writes one in an afternoon.

Enqueue: one INSERT, its own (autocommit) transaction; a statement trigger NOTIFYs.
The consumer, one process and one thread on one autocommit connection, claims up to
``BATCH`` jobs with one ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED)
RETURNING`` through a partial index of the queued jobs, runs them (the no-op:
``observe``), then marks them done with one more UPDATE; the rows are kept, as workpool
keeps its runs. An idle consumer waits for a NOTIFY. No leases, retries, timeouts,
priorities or counters: a floor of cost, not a job system. The queries are in
``raw_postgres.sql``.

``python -m benchmarks.peer_apps.raw_postgres`` is the consumer (``$BENCH_PEER_URL``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import uuid
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

from benchmarks.peer_apps.observe import SyncClient, observe

BATCH = 10
"""Jobs per claim, as workpool's CLI default concurrency."""
IDLE_SECONDS = 1.0
"""Longest wait for a NOTIFY before claiming again anyway."""

QUERIES = dict(
    re.findall(
        r"^-- name: (\w+)\n(.*?)(?=^-- name: |\Z)",
        (Path(__file__).with_name("raw_postgres.sql")).read_text(),
        flags=re.DOTALL | re.MULTILINE,
    )
)


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    """The consumer: one process, one job at a time (it has no settings)."""
    return [sys.executable, "-m", __name__]


async def install(url: str) -> None:
    """The jobs table, its partial index and its NOTIFY trigger."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        await connection.execute(QUERIES["schema"].encode())


async def open_client(url: str, task: str) -> SyncClient:
    connection = psycopg.connect(url, autocommit=True)
    insert = QUERIES["enqueue"].encode()
    lock = threading.Lock()

    def send(x: float) -> None:
        payload = Jsonb({"id": uuid.uuid4().hex, "task": task, "x": x})
        with lock:
            connection.execute(insert, (payload,))

    return SyncClient(send, connection.close)


def consume(url: str) -> None:
    """Run jobs until killed."""
    connection = psycopg.connect(url, autocommit=True)
    woken = threading.Event()
    connection.add_notify_handler(lambda _: woken.set())
    connection.execute("LISTEN jobs")
    claim, done = QUERIES["claim"].encode(), QUERIES["done"].encode()
    while True:
        woken.clear()  # before the claim: a NOTIFY of a later commit is not lost
        rows = connection.execute(claim, (BATCH,)).fetchall()
        if not rows:
            if not woken.is_set():
                for _ in connection.notifies(timeout=IDLE_SECONDS, stop_after=1):
                    pass
            continue
        for _, payload in rows:
            body = payload if isinstance(payload, dict) else json.loads(payload)
            observe(float(body["x"]))
        connection.execute(done, ([job_id for job_id, _ in rows],))


if __name__ == "__main__":
    consume(os.environ.get("BENCH_PEER_URL", "postgresql:///raw"))
