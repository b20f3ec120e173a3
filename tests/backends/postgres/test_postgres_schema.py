"""PostgreSQL URLs, schemas and versioned migrations: first use, concurrent first uses,
a newer schema refused, and ``workpool migrate`` for deploys."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest
from tests.cli.helpers import workpool
from tests.postgres_server import PostgresServer

from workpool.backends import describe_store, open_backend
from workpool.backends.base import NewRun
from workpool.backends.postgres.sql import load_migrations
from workpool.backends.postgres.url import parse_postgres_url
from workpool.errors import BackendUnavailableError, ConfigurationError

LATEST = len(load_migrations())


def versions(server: PostgresServer, schema: str) -> list[int]:
    with psycopg.connect(server.conninfo()) as connection:
        rows = connection.execute(f"SELECT version FROM {schema}.schema_version ORDER BY 1")
        return [row[0] for row in rows]


def a_run(run_id: str) -> NewRun:
    return NewRun(id=run_id, workflow="w", queue="q", input="{}", available_at=0.0)


def test_the_schema_option_goes_to_workpool_and_the_rest_to_libpq() -> None:
    target = parse_postgres_url("postgres://u:secret@db:5433/app?schema=billing&sslmode=require")

    assert target.schema == "billing"
    assert target.conninfo == "postgresql://u:secret@db:5433/app?sslmode=require"
    assert parse_postgres_url("postgresql:///app").schema == "workpool"


def test_a_schema_that_is_no_plain_identifier_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="schema must be a lower-case identifier"):
        parse_postgres_url("postgresql://u:secret@db/app?schema=Bad-Name")


def test_the_store_is_described_without_its_password() -> None:
    described = describe_store("postgresql://u:secret@db/app?password=hidden&schema=s")

    assert "secret" not in described
    assert "hidden" not in described
    assert described.endswith("(schema s)")


async def test_first_use_migrates_and_reopening_applies_nothing_again(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url("first_use")
    backend = await open_backend(url)
    await backend.close()
    backend = await open_backend(url)
    await backend.close()

    assert versions(postgres_server, "first_use") == list(range(1, LATEST + 1))


async def test_concurrent_first_uses_migrate_once(postgres_server: PostgresServer) -> None:
    url = postgres_server.url("raced")

    backends = await asyncio.gather(*(open_backend(url) for _ in range(6)))
    await asyncio.gather(*(backend.close() for backend in backends))

    assert versions(postgres_server, "raced") == list(range(1, LATEST + 1))


async def test_pools_in_two_schemas_of_one_database_do_not_see_each_other(
    postgres_server: PostgresServer,
) -> None:
    billing = await open_backend(postgres_server.url("billing"))
    mail = await open_backend(postgres_server.url("mail"))
    try:
        await billing.enqueue([a_run("r1")], now=1.0)

        assert await billing.get_run("r1") is not None
        assert await mail.get_run("r1") is None
    finally:
        await billing.close()
        await mail.close()


async def test_a_schema_newer_than_this_workpool_is_refused(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.url("from_the_future")
    backend = await open_backend(url)
    await backend.close()
    with psycopg.connect(postgres_server.conninfo()) as connection:
        connection.execute("INSERT INTO from_the_future.schema_version VALUES (999)")

    with pytest.raises(BackendUnavailableError, match=r"newer than the .* upgrade workpool"):
        await open_backend(url)


async def test_an_unreachable_server_fails_at_once(postgres_server: PostgresServer) -> None:
    url = f"postgresql://workpool@/workpool?host={postgres_server.directory}&port=1&schema=x"
    started = time.monotonic()

    with pytest.raises(BackendUnavailableError, match=r"PostgreSQL .* is unavailable"):
        await open_backend(url)
    assert time.monotonic() - started < 5


def test_the_migrate_command_creates_and_migrates_the_schema(
    postgres_server: PostgresServer,
) -> None:
    done = workpool(None, "migrate", postgres_server.url("deployed"))

    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f"(schema deployed): at schema version {LATEST}\n")
    assert versions(postgres_server, "deployed") == list(range(1, LATEST + 1))


def test_the_migrate_command_refuses_a_newer_schema(postgres_server: PostgresServer) -> None:
    url = postgres_server.url("newer")
    assert workpool(url, "migrate").returncode == 0
    with psycopg.connect(postgres_server.conninfo()) as connection:
        connection.execute("INSERT INTO newer.schema_version VALUES (999)")

    refused = workpool(url, "migrate")

    assert refused.returncode == 2
    assert "newer than the" in refused.stderr
