"""Fixtures shared by every test: real Redis and PostgreSQL servers, backends on every
store, a clock."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

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
"""A fresh schema of the session's PostgreSQL database for each test (one server per
test process, so the numbers do not collide)."""


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
def backend_url(backend_name: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A URL naming an empty store of the backend under test."""
    if backend_name == "sqlite":
        return f"sqlite:///{tmp_path}/workpool.db"
    if backend_name == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        schema_url = server.url(schema=f"test_{next(_schema_numbers)}")
        # Made here, as `workpool migrate` would: the first open of a new schema creates
        # its tables, which on a loaded machine takes long enough to eat a test's timings.
        asyncio.run(migrate_url(schema_url))
        return schema_url
    url: str = request.getfixturevalue("redis_server_url")
    client = redis.Redis.from_url(url)
    try:
        client.flushall()
    finally:
        client.close()
    return url


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
