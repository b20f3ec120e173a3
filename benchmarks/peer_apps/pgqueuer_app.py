"""pgqueuer on PostgreSQL (``PsycopgDriver`` on one autocommit psycopg connection, as its
docs set it up; async entrypoints).

Worker: ``pgqueuer.run(main)``, what ``pgq run`` calls, at its defaults (batch size 10
jobs per dequeue, LISTEN/NOTIFY wake-ups, dequeue timeout 30 s), no concurrency limit per
entrypoint (its default). Not the ``pgq`` command itself: 1.6.0's sets up its logging
with a level it parsed as text and exits at once (``'str' object has no attribute
'name'``). ``python -m benchmarks.peer_apps.pgqueuer_app`` is the worker.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg
from pgqueuer import PgQueuer, PsycopgDriver, Queries, run
from pgqueuer.models import Job

from benchmarks.peer_apps.observe import IO_SECONDS, AsyncClient, observe


def url() -> str:
    return os.environ.get("BENCH_PEER_URL", "postgresql:///pgqueuer")


@asynccontextmanager
async def main() -> AsyncIterator[PgQueuer]:
    """The factory ``pgq run`` takes: a PgQueuer with the two entrypoints."""
    connection = await psycopg.AsyncConnection.connect(url(), autocommit=True)
    pgq = PgQueuer(PsycopgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        observe(float(job.payload or b"0"))

    @pgq.entrypoint("io_sleep")
    async def io_sleep(job: Job) -> None:
        observe(float(job.payload or b"0"))
        await asyncio.sleep(IO_SECONDS)

    async with connection:
        yield pgq


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    return [sys.executable, "-m", "benchmarks.peer_apps.pgqueuer_app"]


async def install(target: str) -> None:
    """``pgq install``: pgqueuer's tables, trigger and functions in the (new) database."""
    async with await psycopg.AsyncConnection.connect(target, autocommit=True) as connection:
        await Queries(PsycopgDriver(connection)).install()


async def open_client(target: str, task: str) -> AsyncClient:
    """``await queries.enqueue(task, payload)``: one INSERT (its trigger NOTIFYs)."""
    connection = await psycopg.AsyncConnection.connect(target, autocommit=True)
    queries = Queries(PsycopgDriver(connection))

    async def send(x: float) -> None:
        await queries.enqueue(task, repr(x).encode())

    return AsyncClient(send, connection.close)


if __name__ == "__main__":
    asyncio.run(run(main))
