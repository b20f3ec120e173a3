"""Fixtures for end-to-end tests: a pool on each backend and an in-process worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.integration.processes import Workers
from workpool import Worker, Workpool


def fast_worker(pool: Workpool, concurrency: int = 10, *, claim_ahead: bool = True) -> Worker:
    """A worker with settings that keep end-to-end tests quick (cancels seen in 0.1 s)."""
    return pool.worker(
        concurrency=concurrency,
        claim_ahead=claim_ahead,
        lease=timedelta(seconds=2),
        renew_every=timedelta(milliseconds=100),
        shutdown_grace=timedelta(seconds=2),
    )


@pytest.fixture
async def pool(backend_url: str) -> AsyncIterator[Workpool]:
    """A pool on an empty store of the backend under test."""
    instance = Workpool(backend_url, app="tests")
    yield instance
    await instance.aclose()
    instance.close()


@pytest.fixture
def workers(backend_url: str, tmp_path: Path) -> Iterator[Workers]:
    """Worker processes on the backend under test; killed at teardown."""
    started = Workers(backend_url, tmp_path / "executions.log")
    yield started
    started.stop_all()
