"""Fixtures of the dashboard's browser tests: one headless Chromium per test process,
and per backend one store with a real worker, the dashboard served by ``workpool
dashboard`` (with a token) and a host app serving it read-only at /ops.

Everything lives on the session's event loop (the tests are marked for it), so that the
browser and the servers start once per backend, not once per test.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
import pytest_asyncio
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from tests.dashboard import chromium
from tests.dashboard.app import SERVED, make_pool
from tests.polling import wait_until
from tests.redis_server import RedisServer
from workpool import Workpool

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123456789"
"""The token of the dashboard that ``workpool dashboard`` serves in these tests."""
START_DEADLINE = 30.0
"""Seconds a server process gets to print its address."""

expect.set_options(timeout=20_000)  # a loaded machine: a deadline, not a pause


@dataclass(frozen=True)
class Site:
    """One backend's store, its worker and its two dashboards."""

    backend: str
    pool: Workpool
    """A pool on the store, to enqueue and check what the pages did."""
    url: str
    """The token-guarded dashboard of ``workpool dashboard`` (ends with /)."""
    mounted_url: str
    """The read-only dashboard mounted at /ops of a host app (ends with /ops/)."""


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for every test of this process."""
    try:
        path = chromium.executable()
    except RuntimeError as error:
        pytest.fail(str(error))
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=path, args=chromium.ARGUMENTS)
        yield launched
        await launched.close()


class Sites:
    """Each backend's site, started when a test first needs it and kept until the end of
    the session: the tests of both backends may come in any order."""

    def __init__(self, folders: pytest.TempPathFactory) -> None:
        self._folders = folders
        self._open: dict[str, Site] = {}
        self._stack = contextlib.AsyncExitStack()

    async def get(self, backend: str) -> Site:
        if backend not in self._open:
            folder = self._folders.mktemp(f"dashboard-{backend}")
            self._open[backend] = await self._stack.enter_async_context(
                _running_site(backend, folder)
            )
        return self._open[backend]

    async def close(self) -> None:
        await self._stack.aclose()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def sites(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sites]:
    """The sites of this test process."""
    opened = Sites(tmp_path_factory)
    yield opened
    await opened.close()


@pytest_asyncio.fixture(loop_scope="session", params=["sqlite", "redis"])
async def site(request: pytest.FixtureRequest, sites: Sites) -> Site:
    """A store of each backend with a worker and both dashboards running."""
    return await sites.get(request.param)


@contextlib.asynccontextmanager
async def _running_site(backend: str, folder: Path) -> AsyncIterator[Site]:
    """A store (SQLite in ``folder``, or a private redis-server: the other tests flush
    the shared one), its worker and its two dashboards, all started at once."""
    with contextlib.ExitStack() as stack:
        if backend == "sqlite":
            store_url = f"sqlite:///{folder}/store.db"
        else:
            store_url = stack.enter_context(RedisServer()).url
        pool = make_pool(store_url)
        await pool.stats()  # creates the store: the dashboard never does
        env = {**os.environ, "WORKPOOL_URL": store_url}
        worker = stack.enter_context(
            _process(
                ["workpool", "worker", "tests.dashboard.app:pool", "--queues", ",".join(SERVED),
                 "--concurrency", "8", "--lease-seconds", "2", "--renew-seconds", "0.2",
                 "--shutdown-grace", "0"],
                env, folder / "worker.log", stdout=subprocess.DEVNULL,
            )
        )  # fmt: skip
        dashboard = stack.enter_context(
            _process(
                ["workpool", "dashboard", "tests.dashboard.app:pool", "--port", "0",
                 "--token", TOKEN, "--refresh-seconds", "0.3"],
                env, folder / "dashboard.log",
            )
        )  # fmt: skip
        mounted = stack.enter_context(
            _process(["tests.dashboard.mounted"], env, folder / "mounted.log")
        )
        url = (await _address(dashboard)).split()[2]
        mounted_url = await _address(mounted)
        await wait_until(lambda: _serving(pool), limit=START_DEADLINE)
        yield Site(backend, pool, url, mounted_url)
        assert worker.poll() is None, "the worker died during the tests"
        await pool.aclose()


@pytest_asyncio.fixture(loop_scope="session")
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh browser profile (no cookies) for one test."""
    opened = await browser.new_context(viewport={"width": 1400, "height": 900})
    yield opened
    await opened.close()


@pytest_asyncio.fixture(loop_scope="session")
async def page(context: BrowserContext, site: Site) -> Page:
    """A tab logged in to the token-guarded dashboard (``?token=`` once, then its cookie)."""
    opened = await context.new_page()
    await opened.goto(f"{site.url}?token={TOKEN}")
    await expect(opened).to_have_url(site.url)
    return opened


async def has_status(site: Site, run_id: str, status: str) -> bool:
    """Whether the run is in ``status`` now."""
    return (await site.pool.get_run(run_id)).status == status


async def failed_run(site: Site, message: str) -> str:
    """The id of a run of ``explode`` (raises ValueError(message)), once it has failed."""
    handle = await site.pool.run_by_name("explode", message)
    await wait_until(lambda: has_status(site, handle.id, "failed"))
    return handle.id


async def _serving(pool: Workpool) -> bool:
    return bool(await pool.live_workers())


@contextlib.contextmanager
def _process(
    arguments: list[str], env: dict[str, str], log: Path, stdout: int = subprocess.PIPE
) -> Iterator[subprocess.Popen[str]]:
    """``python -m <arguments>`` in the repository, its stderr to ``log``; stopped
    (SIGTERM, then SIGKILL) at exit."""
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", *arguments],
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=errors,
            text=True,
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            _close(process.stdout)


def _close(stream: IO[str] | None) -> None:
    if stream is not None:
        stream.close()


async def _address(process: subprocess.Popen[str]) -> str:
    """The first line a server process prints: its address."""
    assert process.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), START_DEADLINE)
    assert line, f"the process exited ({process.poll()}) before printing its address"
    return line.strip()
