"""The floor on SQLite: a bare job table, as a competent engineer writes one in an afternoon.

WAL, ``synchronous=FULL`` (as workpool's default: a stored job survives a power loss).
Enqueue: one INSERT, its own transaction. The consumer, one process and one thread,
claims up to ``BATCH`` jobs with one ``UPDATE ... RETURNING`` (a ``BEGIN IMMEDIATE``
transaction), runs them (the no-op: ``observe``), then marks them done in one more
transaction; the rows are kept, as workpool keeps its runs. An idle consumer polls
``PRAGMA data_version`` (a read, no lock) every millisecond until another connection
has committed. The queries are in ``raw_sqlite.sql``.

``python -m benchmarks.peer_apps.raw_sqlite`` is the consumer (``$BENCH_PEER_URL``: the
database file).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
import time
import uuid
from pathlib import Path

from benchmarks.peer_apps.observe import SyncClient, observe

BATCH = 10
"""Jobs per claim, as workpool's CLI default concurrency."""
IDLE_POLL_SECONDS = 0.001

QUERIES = dict(
    re.findall(
        r"^-- name: (\w+)\n(.*?)(?=^-- name: |\Z)",
        (Path(__file__).with_name("raw_sqlite.sql")).read_text(),
        flags=re.DOTALL | re.MULTILINE,
    )
)


def connect(path: str) -> sqlite3.Connection:
    """An autocommit connection in WAL at synchronous=FULL, the table created."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=30)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.executescript(QUERIES["schema"])
    return connection


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    """The consumer: one process, one job at a time (it has no settings)."""
    return [sys.executable, "-m", __name__]


async def open_client(url: str, task: str) -> SyncClient:
    connection = connect(url)
    insert = QUERIES["enqueue"]

    def send(x: float) -> None:
        connection.execute(insert, (json.dumps({"id": uuid.uuid4().hex, "task": task, "x": x}),))

    return SyncClient(send, connection.close)


def claim(connection: sqlite3.Connection) -> list[tuple[int, str]]:
    connection.execute("BEGIN IMMEDIATE")
    rows: list[tuple[int, str]] = connection.execute(QUERIES["claim"], (BATCH,)).fetchall()
    connection.execute("COMMIT")
    return rows


def data_version(connection: sqlite3.Connection) -> int:
    """Changes whenever another connection commits."""
    return int(connection.execute("PRAGMA data_version").fetchone()[0])


def consume(path: str) -> None:
    """Run jobs until killed."""
    connection = connect(path)
    while True:
        seen = data_version(connection)  # read before the claim: no commit slips between
        rows = claim(connection)
        if not rows:
            while data_version(connection) == seen:
                time.sleep(IDLE_POLL_SECONDS)
            continue
        for _, payload in rows:
            observe(json.loads(payload)["x"])
        connection.execute("BEGIN IMMEDIATE")
        connection.executemany(QUERIES["done"], [(job_id,) for job_id, _ in rows])
        connection.execute("COMMIT")


if __name__ == "__main__":
    consume(os.environ.get("BENCH_PEER_URL", "raw-bench.db"))
