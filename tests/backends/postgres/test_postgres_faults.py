"""PostgreSQL faults for real: the listening connection or every connection killed, the
server stopped with ``pg_ctl stop -m immediate`` and restarted, under a backend and
under worker processes draining runs. They are ridden out as a Redis outage is: the
operations in flight fail with BackendUnavailableError, later ones work again, idle
workers are still woken, no acknowledged run is lost and every completion hook runs
exactly once. (SIGKILLed and SIGSTOPped workers: tests/integration, on every backend.)"""

from __future__ import annotations

import asyncio
import collections
import functools
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from tests.conformance.helpers import WORKFLOW, new_run
from tests.integration import process_app
from tests.integration.processes import Workers
from tests.integration.test_processes import enqueue_chores, expected_outcome
from tests.polling import wait_until
from tests.postgres_server import PostgresServer

from workpool import Workpool
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


RUNS = 200
WORKER_ARGS = ("--concurrency", "10", "--lease-seconds", "3", "--renew-seconds", "0.3")


def hooks_seen(workers: Workers) -> collections.Counter[str]:
    return collections.Counter(row[0] for row in workers.lines("hook"))


async def assert_every_run_ended_once(pool: Workpool, workers: Workers, handles: list[str]) -> None:
    """Every run ended as ``chore`` says, with exactly one completion hook run, which
    succeeded. That run, as any, may have been executed again after the outage (its
    finish lost with the server): it never ran more often than the store counted."""
    await wait_until(lambda: len(hooks_seen(workers)) >= len(handles), limit=90)
    assert len(hooks_seen(workers)) == len(handles)
    for number, run_id in enumerate(handles):
        run = await pool.get_run(run_id)
        assert run.status == expected_outcome(number)[0], number
        hook_id = f"{run_id}-0"  # the one callback run a run has
        await wait_until(functools.partial(succeeded, pool, hook_id), limit=30)  # maybe re-run
        hook_run = await pool.get_run(hook_id)
        assert hooks_seen(workers)[run_id] <= hook_run.executions, "a hook ran unrecorded"


async def succeeded(pool: Workpool, run_id: str) -> bool:
    return (await pool.get_run(run_id)).status == "succeeded"


async def test_workers_ride_out_an_immediate_stop_and_restart_of_the_server(
    private_server: PostgresServer, tmp_path: Path
) -> None:
    url = private_server.url("restarted")
    workers = Workers(url, tmp_path / "executions.log")
    pool = Workpool(url)
    try:
        handles = [handle.id for handle in await enqueue_chores(pool, RUNS)]
        for _ in range(2):
            workers.start(*WORKER_ARGS)
        await wait_until(lambda: len(hooks_seen(workers)) >= 20, limit=60)
        private_server.stop("immediate")  # mid-drain: runs leased, finishes in flight
        await asyncio.sleep(1.0)  # the outage itself: its length is the point here
        private_server.start()
        await assert_every_run_ended_once(pool, workers, handles)
        (after,) = await pool.enqueue_many([process_app.chore.prepare(1)])
        assert await after.result(timeout=30) == 1
        assert all(process.poll() is None for process in workers.processes), workers.errors()
    finally:
        workers.stop_all()
        await pool.aclose()


def terminate_sessions(server: PostgresServer) -> int:
    """``pg_terminate_backend`` every other session of the database; how many."""
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


async def test_workers_whose_connections_are_all_terminated_reconnect_and_are_woken(
    private_server: PostgresServer, tmp_path: Path
) -> None:
    url = private_server.url("terminated")
    workers = Workers(url, tmp_path / "executions.log")
    pool = Workpool(url)
    try:
        handles = [handle.id for handle in await enqueue_chores(pool, RUNS)]
        for _ in range(2):
            workers.start(*WORKER_ARGS)
        for seen in (20, 80):
            await wait_until(lambda seen=seen: len(hooks_seen(workers)) >= seen, limit=60)
            terminate_sessions(private_server)  # the LISTEN connections among them
        await assert_every_run_ended_once(pool, workers, handles)
        await wait_until(lambda: listening(private_server))
        (after,) = await pool.enqueue_many([process_app.chore.prepare(1)])
        assert await after.result(timeout=30) == 1
    finally:
        workers.stop_all()
        await pool.aclose()
