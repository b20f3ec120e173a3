"""pgqueuer on PostgreSQL (``PsycopgDriver`` on one autocommit psycopg connection, as its
docs set it up; async entrypoints).

Worker: ``pgq run`` at its defaults (``--batch-size 10`` jobs per dequeue, LISTEN/NOTIFY
wake-ups, ``--dequeue-timeout 30``), no concurrency limit per entrypoint (its default).
"""

from __future__ import annotations

import asyncio
import os
import sys

import psycopg
from pgqueuer import PgQueuer, PsycopgDriver, Queries
from pgqueuer.models import Job

from benchmarks.peer_apps.observe import IO_SECONDS, AsyncClient, observe


def url() -> str:
    return os.environ.get("BENCH_PEER_URL", "postgresql:///pgqueuer")


async def main() -> PgQueuer:
    """The factory ``pgq run`` calls: a PgQueuer with the two entrypoints."""
    connection = await psycopg.AsyncConnection.connect(url(), autocommit=True)
    pgq = PgQueuer(PsycopgDriver(connection))

    @pgq.entrypoint("noop")
    async def noop(job: Job) -> None:
        observe(float(job.payload or b"0"))

    @pgq.entrypoint("io_sleep")
    async def io_sleep(job: Job) -> None:
        observe(float(job.payload or b"0"))
        await asyncio.sleep(IO_SECONDS)

    return pgq


def worker_command(processes: int, concurrency: int | None) -> list[str]:
    factory = f"{__name__}:main"
    return [sys.executable, "-m", "pgqueuer", "run", factory, "--log-level", "WARNING"]


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
