"""The PostgreSQL store under test: a private server at its durable defaults (fsync and
synchronous commits on, as in production), a fresh schema per repetition."""

from __future__ import annotations

import asyncio
import itertools

import psutil
from psycopg import AsyncConnection
from tests.postgres_server import PostgresServer

from workpool.backends.postgres.migrate import migrate_url


class PostgresTarget:
    """A new schema of the suite's server; ``active_count`` counts its active runs over
    a connection of the harness's own."""

    backend = "postgres"

    def __init__(self, server: PostgresServer, schema: str) -> None:
        self.server = server
        self.schema = schema
        self.url = server.url(schema)
        self._reader: AsyncConnection[tuple[int]] | None = None

    async def active_count(self, *, scheduled: bool = True) -> int:
        if self._reader is None:
            self._reader = await AsyncConnection.connect(self.server.conninfo(), autocommit=True)
        states = ["queued", "running", *(["scheduled"] if scheduled else [])]
        cursor = await self._reader.execute(
            f"SELECT count(*) FROM {self.schema}.runs WHERE status = ANY(%s)", (states,)
        )
        row = await cursor.fetchone()
        return 0 if row is None else int(row[0])

    async def workers_idle(self, processes: list[psutil.Process]) -> bool:
        before = [_cpu_seconds(process) for process in processes]
        await asyncio.sleep(0.15)
        after = [_cpu_seconds(process) for process in processes]
        return all(b - a < 0.005 for a, b in zip(before, after, strict=True))

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
            self._reader = None


class PostgresStore:
    """A private durable PostgreSQL server; each repetition gets a new, migrated schema."""

    backend = "postgres"

    def __init__(self) -> None:
        self.server = PostgresServer(durable=True).start()
        self._numbers = itertools.count(1)

    async def fresh(self) -> PostgresTarget:
        target = PostgresTarget(self.server, f"bench_{next(self._numbers)}")
        await migrate_url(target.url)
        return target

    async def close(self) -> None:
        self.server.remove()


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)
