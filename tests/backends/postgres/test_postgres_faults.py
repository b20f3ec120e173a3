"""PostgreSQL faults for real: the listening connection killed, the server restarted.
A backend rides them out as it does a Redis outage: the operations in flight fail with
BackendUnavailableError, later ones work again, and idle workers are still woken."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
from tests.conformance.helpers import WORKFLOW, new_run
from tests.polling import wait_until
from tests.postgres_server import PostgresServer

from workpool.backends import open_backend
from workpool.backends.base import Backend
from workpool.errors import BackendUnavailableError


@pytest.fixture
async def private_server() -> AsyncIterator[PostgresServer]:
    """A server of this test's own, which it may stop and start: durable, so that what it
    acknowledged survives ``pg_ctl stop -m immediate``."""
    server = PostgresServer(durable=True).start()
    try:
        yield server
    finally:
        server.remove()


def terminate_listeners(server: PostgresServer) -> int:
    """``pg_terminate_backend`` every session that LISTENs; how many."""
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
        ).fetchall()
    return len(rows)


async def woken_within(waiter: Backend, other: Backend, limit: float) -> float:
    """Seconds from an enqueue by ``other`` to the end of ``waiter``'s wait (at most
    ``limit``: the wait's own timeout is far longer)."""
    wait = asyncio.ensure_future(waiter.wait_for_work(["default"], 30.0, workflows=[WORKFLOW]))
    await asyncio.sleep(0)
    started = time.monotonic()
    await other.enqueue([new_run(time.time())], time.time())
    await asyncio.wait_for(wait, limit)
    return time.monotonic() - started


async def test_a_killed_listening_connection_is_replaced_and_waits_still_wake(
    private_server: PostgresServer,
) -> None:
    url = private_server.url("faults")
    waiter, other = await open_backend(url), await open_backend(url)
    try:
        await waiter.claim(["default"], "w", 1, 30.0, 3, time.time(), workflows=[WORKFLOW])
        await wait_until(lambda: bool(terminate_listeners(private_server)))

        assert await woken_within(waiter, other, limit=5.0) < 5.0
        await wait_until(lambda: listening(private_server))
        assert await woken_within(waiter, other, limit=5.0) < 5.0
    finally:
        await waiter.close()
        await other.close()


def listening(server: PostgresServer) -> bool:
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
        ).fetchone()
    return row is not None and row[0] > 0


async def test_a_restarted_server_is_an_outage_that_ends(private_server: PostgresServer) -> None:
    url = private_server.url("faults")
    backend = await open_backend(url)
    try:
        run = new_run(time.time())
        await backend.enqueue([run], time.time())
        private_server.stop("immediate")

        with pytest.raises(BackendUnavailableError, match="PostgreSQL"):
            await backend.get_run(run.id)

        private_server.start()

        async def readable() -> bool:
            try:
                return await backend.get_run(run.id) is not None
            except BackendUnavailableError:
                return False

        await wait_until(readable)
        await backend.enqueue([new_run(time.time())], time.time())
    finally:
        await backend.close()
