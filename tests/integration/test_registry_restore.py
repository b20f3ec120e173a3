"""Live workers put back the registry records a store lost (issue 23, defect 5).

A Redis restarted without persistence, a FLUSHALL, or rows deleted from SQLite's (or
PostgreSQL's) ``workflows`` table leave the registry empty while workers still serve:
``workpool workflows`` would say nothing is registered and ``run_by_name`` would take
any name.
Each live worker's heartbeat notices that its records are missing and restores them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from psycopg import sql

from tests.cli.helpers import workpool
from tests.integration.processes import Workers
from tests.polling import wait_until
from tests.redis_server import RedisServer
from workpool import UnknownWorkflowError, Workpool
from workpool.backends import sqlite_path
from workpool.backends.postgres.url import parse_postgres_url
from workpool.worker.registration import HEARTBEAT_EVERY

DEFINED = ["chore", "completed", "sleepy"]
"""What process_app's pool defines (its first workflows, by name)."""
RESTORED_WITHIN = 4 * HEARTBEAT_EVERY
"""The deadline: a heartbeat period, and as much again three times for a loaded machine."""


async def registered(pool: Workpool) -> list[str]:
    return [workflow.name for workflow in await pool.list_workflows()]


async def wait_until_registered(pool: Workpool, limit: float) -> None:
    async def all_there() -> bool:
        return set(DEFINED) <= set(await registered(pool))

    await wait_until(all_there, limit=limit, every=0.2)


def lose_the_registry(url: str) -> None:
    """Delete every registry record as a lost store would: FLUSHALL on Redis (the
    worker records go too), the table's rows on SQLite and PostgreSQL."""
    if url.startswith("redis"):
        client = redis.Redis.from_url(url)
        try:
            client.flushall()
        finally:
            client.close()
        return
    if url.startswith("postgres"):
        target = parse_postgres_url(url)
        with psycopg.connect(target.conninfo) as server:
            server.execute(
                sql.SQL("DELETE FROM {}").format(sql.Identifier(target.schema, "workflows"))
            )
        return
    with sqlite3.connect(sqlite_path(url)) as connection:
        connection.execute("DELETE FROM workflows")
    connection.close()


async def check_restored(pool: Workpool, url: str) -> None:
    """The records are back for the API, the CLI and ``run_by_name``."""
    await wait_until_registered(pool, RESTORED_WITHIN)
    listed = workpool(url, "workflows")
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in DEFINED), listed.stdout
    with pytest.raises(UnknownWorkflowError, match="did you mean 'chore'"):
        await pool.run_by_name("chroe", 1)


@pytest.mark.timeout(180)
async def test_a_live_worker_restores_the_records_the_store_lost(
    backend_url: str, workers: Workers
) -> None:
    workers.start()
    pool = Workpool(backend_url)
    try:
        await wait_until_registered(pool, limit=60)
        lose_the_registry(backend_url)
        assert await registered(pool) == []
        await check_restored(pool, backend_url)
        assert "restored" in workers.errors()  # said at WARNING: the store lost data
    finally:
        await pool.aclose()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[Callable[[], RedisServer]]:
    """A redis-server of this test alone, without persistence, so it can be restarted."""
    servers: list[RedisServer] = []

    def start() -> RedisServer:
        server = RedisServer(arguments=["--dir", str(tmp_path)])
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()


@pytest.mark.timeout(180)
async def test_a_live_worker_registers_again_after_a_restart_without_persistence(
    private_redis: Callable[[], RedisServer], tmp_path: Path
) -> None:
    server = private_redis()
    workers = Workers(server.url, tmp_path / "executions.log")
    try:
        workers.start()
        async with Workpool(server.url) as before:
            await wait_until_registered(before, limit=60)
        server.stop()
        server.start()  # same port, nothing kept
        async with Workpool(server.url) as pool:  # a new client: no connection to lose
            assert await registered(pool) == []
            await check_restored(pool, server.url)
            assert await pool.live_workers()  # its worker record is back too
    finally:
        workers.stop_all()
