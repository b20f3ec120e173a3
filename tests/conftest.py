"""Fixtures shared by every test: real Redis and PostgreSQL servers, backends on every
store, a clock."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import psycopg
import psycopg.sql
import pytest
import redis

from tests.postgres_server import PostgresServer
from tests.redis_server import RedisServer
from workpool.backends import open_backend
from workpool.backends.base import Backend
from workpool.backends.postgres.migrate import migrate_url
from workpool.clock import ManualClock

BACKEND_NAMES = ["sqlite", "redis", "postgres"]

_schema_numbers = itertools.count(1)
"""Names of new schemas of the session's PostgreSQL database (one server per test
process, so the numbers do not collide)."""
_emptied_schemas: list[str] = []
"""Migrated schemas that a finished test left, emptied again for the next one: creating
and migrating a schema costs 0.2 to 0.7 s here, emptying its tables a few milliseconds
(as the Redis tests share one server that each test flushes)."""


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """A private redis-server for this test session; started only if a test needs it."""
    try:
        server = RedisServer().start()
    except RuntimeError as error:
        pytest.fail(str(error))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster for this test session; started only if a test needs it."""
    try:
        server = PostgresServer().start()
    except RuntimeError as error:
        pytest.fail(str(error))
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(params=BACKEND_NAMES, ids=BACKEND_NAMES)
def backend_name(request: pytest.FixtureRequest) -> str:
    """The name of the backend under test: each test using it runs once per backend."""
    name: str = request.param
    return name


@pytest.fixture
def backend_url(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """A URL naming an empty store of the backend under test."""
    if backend_name == "sqlite":
        yield f"sqlite:///{tmp_path}/workpool.db"
    elif backend_name == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        if _emptied_schemas:
            schema = _emptied_schemas.pop()
        else:
            schema = f"test_{next(_schema_numbers)}"
            # Made here, as `workpool migrate` would: the first open of a new schema
            # creates its tables, which on a loaded machine takes long enough to eat a
            # test's timings.
            asyncio.run(migrate_url(server.url(schema=schema)))
        yield server.url(schema=schema)
        if _emptied(server, schema):
            _emptied_schemas.append(schema)
    else:
        url: str = request.getfixturevalue("redis_server_url")
        client = redis.Redis.from_url(url)
        try:
            client.flushall()
        finally:
            client.close()
        yield url


def _emptied(server: PostgresServer, schema: str) -> bool:
    """Delete every row of the schema's tables but its version; False (the schema is
    then left alone) if a connection the test left open holds a lock on one of them."""
    with psycopg.connect(server.conninfo(), autocommit=True) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s"
                " AND tablename <> 'schema_version'",
                (schema,),
            )
        ]
        try:
            with connection.transaction():
                connection.execute("SET LOCAL lock_timeout = '1s'")
                for table in tables:
                    connection.execute(
                        psycopg.sql.SQL("DELETE FROM {}").format(
                            psycopg.sql.Identifier(schema, table)
                        )
                    )
        except psycopg.errors.LockNotAvailable:
            return False
    return True


@pytest.fixture
async def backend_factory(backend_url: str) -> AsyncIterator[Callable[[], Awaitable[Backend]]]:
    """Open any number of backend instances on the same store; all closed at teardown."""
    opened: list[Backend] = []

    async def open_one() -> Backend:
        instance = await open_backend(backend_url)
        opened.append(instance)
        return instance

    yield open_one
    failures: list[BaseException] = []
    for instance in reversed(opened):
        try:
            await instance.close()
        except Exception as error:  # close every instance, then report the first failure
            failures.append(error)
    if failures:
        raise failures[0]


@pytest.fixture
async def backend(backend_factory: Callable[[], Awaitable[Backend]]) -> Backend:
    """One backend instance on an empty store."""
    return await backend_factory()


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when a test advances it."""
    return ManualClock()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Escape lone surrogates in a report's captured output: the tests feed them on
    purpose, and pytest-xdist must send every report as UTF-8 to the main process."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8"))
        for title, text in report.sections
    ]
