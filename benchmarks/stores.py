"""The stores under test: a fresh SQLite file, an emptied Redis or a new PostgreSQL schema
per repetition.

Each ``Target`` also answers cheap read-only questions without going through
workpool (how many runs are still active, how big the store is), so the harness can
tell when a batch is done without loading the backend it measures.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any, Protocol

import psutil
from psycopg import AsyncConnection, sql
from redis.asyncio import Redis
from tests.postgres_server import DATABASE, PostgresServer
from tests.redis_server import RedisServer

from benchmarks.app import pool

QUEUE = "default"
PREFIX = "workpool"
"""The benchmark pool's key prefix (Workpool's default)."""

# Key names of one queue, built by hand from src/workpool/backends/redis/keys.py
# ("{<prefix>}:ready:<pair>" per (queue, workflow), "{<prefix>}:queue:<queue>:scheduled|
# leases"), so the harness needs no internals.
WORKFLOWS = tuple(pool.workflows)
"""The benchmark app's workflows: one ready set each."""
READY_KEYS = [
    "{" + PREFIX + "}:ready:" + f"{len(QUEUE)}:{QUEUE}:{workflow}" for workflow in WORKFLOWS
]
SCHEDULED_KEY = "{" + PREFIX + "}:queue:" + QUEUE + ":scheduled"
LEASES_KEY = "{" + PREFIX + "}:queue:" + QUEUE + ":leases"


class Target(Protocol):
    """One empty store of one backend."""

    backend: str
    url: str

    async def active_count(self, *, scheduled: bool = True) -> int:
        """Runs queued or running (and scheduled, unless ``scheduled=False``)."""
        ...

    async def workers_idle(self, processes: list[psutil.Process]) -> bool:
        """Whether these worker processes are connected and waiting for work."""
        ...

    async def close(self) -> None:
        """Drop the harness's own connections."""
        ...


class SqliteTarget:
    """A new SQLite file; ``active_count`` reads it over a separate read-only connection."""

    backend = "sqlite"

    def __init__(self, path: Path, query: str = "") -> None:
        self.path = path
        self.url = f"sqlite:///{path}" + (f"?{query}" if query else "")
        self._reader: sqlite3.Connection | None = None

    async def active_count(self, *, scheduled: bool = True) -> int:
        if self._reader is None:
            self._reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        states = ("queued", "running", "scheduled") if scheduled else ("queued", "running")
        # One count per (queue, workflow, state) range of the runs_listed index (see
        # migrations/0004_observability.sql): it reads the active runs only, never the
        # finished ones, so the harness's polls do not take CPU from the workers.
        total = 0
        for state in states:
            row = self._reader.execute(
                "SELECT count(*) FROM run_pairs AS p CROSS JOIN runs AS r"
                " WHERE r.queue = p.queue AND r.workflow = p.workflow AND r.status = ?",
                (state,),
            ).fetchone()
            total += int(row[0])
        return total

    async def workers_idle(self, processes: list[psutil.Process]) -> bool:
        for process in processes:
            if not any(Path(f.path) == self.path for f in process.open_files()):
                return False
        before = [_cpu_seconds(process) for process in processes]
        await asyncio.sleep(0.15)
        after = [_cpu_seconds(process) for process in processes]
        return all(b - a < 0.005 for a, b in zip(before, after, strict=True))

    def size_bytes(self) -> int:
        """The database file plus its WAL, after checkpointing the WAL into the file."""
        with sqlite3.connect(self.path, timeout=30) as connection:
            for _ in range(100):
                busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"could not checkpoint {self.path}: readers stay busy")
        wal = self.path.with_name(self.path.name + "-wal")
        return self.path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


class RedisTarget:
    """The suite's redis-server, emptied; ``active_count`` is ZCARDs of the queue's sets
    (the ready set of each of the app's workflows, the leases and the scheduled set)."""

    backend = "redis"

    def __init__(self, url: str, client: Redis) -> None:
        self.url = url
        self.client = client
        self.zcard_calls = 0
        """ZCARD commands this harness sent (B7 subtracts them from the server's count)."""

    async def active_count(self, *, scheduled: bool = True) -> int:
        keys = [*READY_KEYS, LEASES_KEY, *([SCHEDULED_KEY] if scheduled else [])]
        async with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.zcard(key)
            counts: list[int] = await pipe.execute()
        self.zcard_calls += len(keys)
        return sum(counts)

    async def workers_idle(self, processes: list[psutil.Process]) -> bool:
        # A worker blocks in BLPOP only once connected and after a claim found nothing.
        info: dict[str, Any] = await self.client.info("clients")
        return int(info["blocked_clients"]) >= len(processes)

    async def info(self, section: str) -> dict[str, Any]:
        """``INFO <section>`` as a dict."""
        result: dict[str, Any] = await self.client.info(section)
        return result

    async def close(self) -> None:
        """The client belongs to the store; nothing to do."""


class PostgresTarget:
    """A new schema of the suite's PostgreSQL server; ``active_count`` reads the partial
    indexes of queued, running (and scheduled) runs over the harness's own connection."""

    backend = "postgres"

    def __init__(
        self, server: PostgresServer, schema: str, connection: AsyncConnection, databases: list[str]
    ) -> None:
        self.server = server
        self.schema = schema
        self.url = server.url(schema)
        self.connection = connection
        self._databases = databases

    async def database(self, name: str) -> str:
        """A new database of this repetition (for a peer: each installs its own tables),
        dropped with the schema; its ``postgresql://`` URL."""
        database = f"{self.schema}_{name}"
        await self.connection.execute(
            sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database))
        )
        self._databases.append(database)
        url = self.server.url()
        return url.replace(f"/{DATABASE}?", f"/{database}?", 1)

    async def active_count(self, *, scheduled: bool = True) -> int:
        states = ["queued", "running", *(["scheduled"] if scheduled else [])]
        # One count per status (each an index-only read of that status's partial index,
        # see migrations/0001_initial.sql), never a scan of the finished runs.
        total = 0
        for state in states:
            query = sql.SQL("SELECT count(*) FROM {}.runs WHERE status = %s").format(
                sql.Identifier(self.schema)
            )
            cursor = await self.connection.execute(query, (state,))
            row = await cursor.fetchone()
            total += int(row[0]) if row else 0
        return total

    async def workers_idle(self, processes: list[psutil.Process]) -> bool:
        # A worker listens (one connection per process) once it has claimed and found
        # nothing; then its CPU goes quiet.
        cursor = await self.connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s AND state = 'idle'",
            (f'LISTEN "%{self.schema}"',),
        )
        row = await cursor.fetchone()
        if row is None or int(row[0]) < len(processes):
            return False
        before = [_cpu_seconds(process) for process in processes]
        await asyncio.sleep(0.15)
        after = [_cpu_seconds(process) for process in processes]
        return all(b - a < 0.005 for a, b in zip(before, after, strict=True))

    async def close(self) -> None:
        """The connection belongs to the store; nothing to do."""


class Store(Protocol):
    """Hands out a fresh, empty Target of one backend."""

    backend: str

    async def fresh(self) -> Target: ...

    async def close(self) -> None: ...


class SqliteStore:
    """New files in a directory; the previous repetition's file is deleted.

    ``query`` is appended to every URL (``synchronous=normal`` for B8).
    """

    backend = "sqlite"

    def __init__(self, directory: Path, query: str = "") -> None:
        self.directory = directory
        self.query = query
        self._count = 0

    async def fresh(self) -> SqliteTarget:
        for old in self.directory.glob("bench-*.db*"):
            old.unlink()
        self._count += 1
        return SqliteTarget(self.directory / f"bench-{self._count}.db", self.query)

    async def close(self) -> None:
        for old in self.directory.glob("bench-*.db*"):
            old.unlink()


class RedisStore:
    """A private redis-server (no persistence), flushed before each repetition."""

    backend = "redis"

    def __init__(self) -> None:
        self.server = RedisServer().start()
        self.client = Redis.from_url(self.server.url, decode_responses=True)

    async def fresh(self) -> RedisTarget:
        await self.client.flushall()
        return RedisTarget(self.server.url, self.client)

    async def version(self) -> str:
        info: dict[str, Any] = await self.client.info("server")
        return str(info["redis_version"])

    async def close(self) -> None:
        await self.client.aclose()
        self.server.stop()


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


class PostgresStore:
    """A private PostgreSQL server (tests/postgres_server.py), durable as production runs
    it (fsync and synchronous commits on), with pg_stat_statements loaded for B7; each
    repetition gets a new schema and the previous one is dropped."""

    backend = "postgres"

    def __init__(self, connection: AsyncConnection, server: PostgresServer) -> None:
        self.server = server
        self.connection = connection
        self._count = 0
        self._schema: str | None = None
        self._databases: list[str] = []

    @classmethod
    async def start(cls) -> PostgresStore:
        server = PostgresServer(
            durable=True, settings={"shared_preload_libraries": "pg_stat_statements"}
        ).start()
        try:
            connection = await AsyncConnection.connect(server.conninfo(), autocommit=True)
            await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        except BaseException:
            server.remove()
            raise
        return cls(connection, server)

    async def fresh(self) -> PostgresTarget:
        await self._drop()
        self._count += 1
        self._schema = f"bench_{self._count}"
        return PostgresTarget(self.server, self._schema, self.connection, self._databases)

    async def version(self) -> str:
        cursor = await self.connection.execute("SHOW server_version")
        row = await cursor.fetchone()
        return str(row[0]) if row else "?"

    async def _drop(self) -> None:
        while self._databases:
            await self.connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(self._databases.pop())
                )
            )
        if self._schema is not None:
            await self.connection.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self._schema))
            )
            self._schema = None

    async def close(self) -> None:
        try:
            await self._drop()
            await self.connection.close()
        finally:
            self.server.remove()
