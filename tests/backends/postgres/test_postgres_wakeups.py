"""How PostgreSQL wakes idle workers: NOTIFY after the commit, coalesced; polling when
LISTEN is turned off (``?listen=off``) or deaf (PgBouncer in transaction mode, see
test_pgbouncer)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import psycopg
import pytest
from tests.conformance.helpers import QUEUE, WORKFLOW, new_run
from tests.postgres_server import PostgresServer

from workpool.backends import open_backend
from workpool.backends.base import Backend
from workpool.backends.postgres.migrate import migrate_url
from workpool.backends.postgres.url import parse_postgres_url
from workpool.errors import ConfigurationError

BURST = 60


@pytest.fixture
async def url(postgres_server: PostgresServer, request: pytest.FixtureRequest) -> str:
    schema = f"wake_{request.node.name[5:30].lower()}"
    url = postgres_server.url(schema)
    await migrate_url(url)
    return url


@pytest.fixture
async def backend(url: str) -> AsyncIterator[Backend]:
    opened = await open_backend(url)
    yield opened
    await opened.close()


async def notifications_of(server: PostgresServer, channel: str, burst: object) -> list[str]:
    """The payloads a separate session LISTENing on ``channel`` hears while ``burst``
    (an awaitable) runs, until one more NOTIFY of its own comes back after it."""
    async with await psycopg.AsyncConnection.connect(
        server.conninfo(), autocommit=True
    ) as connection:
        await connection.execute(f"LISTEN {channel}")
        await burst  # type: ignore[misc]
        await connection.execute(f"NOTIFY {channel}, 'end'")
        heard: list[str] = []
        async for notification in connection.notifies(timeout=30):
            if notification.payload == "end":
                return heard
            heard.append(notification.payload)
    raise AssertionError("the closing NOTIFY never came back")


async def test_a_burst_of_enqueues_sends_fewer_notifies_than_commits(
    postgres_server: PostgresServer, url: str, backend: Backend
) -> None:
    async def burst() -> None:
        await asyncio.gather(
            *(backend.enqueue([new_run(time.time())], time.time()) for _ in range(BURST))
        )

    channel = parse_postgres_url(url).channel
    heard = await notifications_of(postgres_server, channel, burst())

    assert set(heard) == {QUEUE}  # the last commit's wake-up was not left out
    assert len(heard) < BURST


async def test_a_long_schema_name_still_has_a_channel_that_wakes(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url("s" * 63)
    waiter, other = await open_backend(url), await open_backend(url)
    try:
        await waiter.claim([QUEUE], "w", 1, 30.0, 3, time.time(), workflows=[WORKFLOW])
        wait = asyncio.ensure_future(waiter.wait_for_work([QUEUE], 60.0))
        await asyncio.sleep(0.1)
        await other.enqueue([new_run(time.time())], time.time())
        await asyncio.wait_for(wait, 20)
    finally:
        await waiter.close()
        await other.close()


def listening_sessions(server: PostgresServer) -> int:
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%'"
        ).fetchone()
    return 0 if row is None else int(row[0])


async def test_listen_off_polls_without_a_listening_connection(
    postgres_server: PostgresServer, url: str, backend: Backend
) -> None:
    before = listening_sessions(postgres_server)
    polling = await open_backend(url + "&listen=off")
    try:
        await polling.claim([QUEUE], "w", 1, 30.0, 3, time.time(), workflows=[WORKFLOW])
        wait = asyncio.ensure_future(polling.wait_for_work([QUEUE], 60.0))
        await backend.enqueue([new_run(time.time())], time.time())
        await asyncio.wait_for(wait, 20)  # a poll, long before the wait's 60 s
        claimed = await polling.claim([QUEUE], "w", 1, 30.0, 3, time.time(), workflows=[WORKFLOW])
        assert len(claimed.runs) == 1
        assert listening_sessions(postgres_server) == before
    finally:
        await polling.close()


@pytest.mark.parametrize("value", ["no", "", "OFF"])
def test_a_listen_option_other_than_on_or_off_is_refused(value: str) -> None:
    with pytest.raises(ConfigurationError, match="listen must be on or off"):
        parse_postgres_url(f"postgresql://u@h/d?listen={value}")


def test_listen_on_and_off_are_taken_out_of_libpqs_url() -> None:
    assert parse_postgres_url("postgresql://u@h/d?listen=off").listen is False
    target = parse_postgres_url("postgresql://u@h/d?listen=on&sslmode=disable")
    assert (target.listen, target.conninfo) == (True, "postgresql://u@h/d?sslmode=disable")
