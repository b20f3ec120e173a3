"""A real worker process behind PgBouncer in transaction pooling mode, where LISTEN
silently receives nothing: it warns once and polls, and runs still start promptly."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration import process_app
from tests.integration.processes import Workers
from tests.pgbouncer import PgBouncer
from tests.polling import wait_until
from tests.postgres_server import PostgresServer

from workpool import Workpool
from workpool.backends.postgres.migrate import migrate_url

DEAF = "PostgreSQL LISTEN receives nothing"
PROMPT_SECONDS = 10.0
"""A run enqueued to an idle polling worker starts within its slowest poll (0.5 s): the
margin is for a loaded machine."""


@pytest.fixture
def bouncer(postgres_server: PostgresServer) -> Iterator[PgBouncer]:
    try:
        started = PgBouncer(postgres_server).start()
    except RuntimeError as error:
        pytest.fail(str(error))
    yield started
    started.stop()


async def test_a_worker_behind_pgbouncer_in_transaction_mode_warns_once_and_polls(
    bouncer: PgBouncer, tmp_path: Path
) -> None:
    url = bouncer.url("behind_pgbouncer")
    await migrate_url(url)
    workers = Workers(url, tmp_path / "executions.log")
    stderr = tmp_path / "worker.log"
    pool = Workpool(url)
    try:
        workers.start("--concurrency", "4", stderr=stderr)
        await wait_until(lambda: DEAF in stderr.read_text(), limit=30)
        for number in (1, 2, 3):
            (handle,) = await pool.enqueue_many([process_app.chore.prepare(number)])
            result = await asyncio.wait_for(handle.result(timeout=30), PROMPT_SECONDS)
            assert result == number
        assert stderr.read_text().count(DEAF) == 1
        assert "listen=off" in stderr.read_text()
    finally:
        workers.stop_all()
        await pool.aclose()


async def test_listen_off_behind_pgbouncer_polls_without_a_warning(
    bouncer: PgBouncer, tmp_path: Path
) -> None:
    url = bouncer.url("told_to_poll") + "&listen=off"
    await migrate_url(url)
    workers = Workers(url, tmp_path / "executions.log")
    stderr = tmp_path / "worker.log"
    pool = Workpool(url)
    try:
        workers.start("--concurrency", "4", stderr=stderr)
        (handle,) = await pool.enqueue_many([process_app.chore.prepare(7)])
        assert await asyncio.wait_for(handle.result(timeout=30), 30) == 7
        (handle,) = await pool.enqueue_many([process_app.chore.prepare(8)])
        assert await asyncio.wait_for(handle.result(timeout=30), PROMPT_SECONDS) == 8
        assert DEAF not in stderr.read_text()
    finally:
        workers.stop_all()
        await pool.aclose()
