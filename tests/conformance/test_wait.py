"""Backend.wait_for_work: woken by enqueues from other instances, else waits its timeout.

The only conformance tests that use real time. Bounds are loose on purpose: CI machines
are slow and loaded, and the spec allows spurious early returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from tests.conformance.helpers import WORKFLOW, BackendFactory, claim, enqueue, new_run
from workpool.backends import open_backend
from workpool.backends.base import Backend
from workpool.clock import ManualClock
from workpool.errors import BackendUnavailableError

LONG_TIMEOUT = 8.0


async def _elapsed_until_woken(
    waiter: Backend, enqueuer: Backend, watched: list[str], queue: str, now: float
) -> float:
    started = time.monotonic()
    task = asyncio.create_task(waiter.wait_for_work(watched, LONG_TIMEOUT, workflows=[WORKFLOW]))
    await asyncio.sleep(0.2)
    await enqueue(enqueuer, new_run(now, queue=queue), now)
    await task
    return time.monotonic() - started


async def test_enqueue_from_another_instance_wakes_the_waiter(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()

    elapsed = await _elapsed_until_woken(backend, other, ["jobs"], "jobs", clock.now())

    assert elapsed < LONG_TIMEOUT / 2


async def test_enqueue_to_any_watched_queue_wakes_the_waiter(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()

    elapsed = await _elapsed_until_woken(backend, other, ["first", "second"], "second", clock.now())

    assert elapsed < LONG_TIMEOUT / 2


async def test_enqueue_of_a_scheduled_run_wakes_the_waiter(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()
    started = time.monotonic()
    task = asyncio.create_task(backend.wait_for_work(["jobs"], LONG_TIMEOUT, workflows=[WORKFLOW]))
    await asyncio.sleep(0.2)
    now = clock.now()

    await enqueue(other, new_run(now + 3600, queue="jobs"), now)
    await task

    assert time.monotonic() - started < LONG_TIMEOUT / 2


async def test_an_enqueue_between_a_claim_and_the_next_wait_is_not_lost(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()
    now = clock.now()
    await backend.wait_for_work(["jobs"], 0.05, workflows=[WORKFLOW])  # listening from now
    assert not (await claim(backend, now, queues=["jobs"])).runs  # the last look

    await enqueue(other, new_run(now, queue="jobs"), now)
    await asyncio.sleep(0.05)  # whatever wakes the backend arrives before it waits
    started = time.monotonic()
    await backend.wait_for_work(["jobs"], LONG_TIMEOUT, workflows=[WORKFLOW])

    assert time.monotonic() - started < LONG_TIMEOUT / 2


async def test_a_first_wait_sees_an_enqueue_made_after_the_claim_before_it(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()
    now = clock.now()
    assert not (await claim(backend, now, queues=["jobs"])).runs  # never waited before

    await enqueue(other, new_run(now, queue="jobs"), now)
    started = time.monotonic()
    await backend.wait_for_work(["jobs"], LONG_TIMEOUT, workflows=[WORKFLOW])

    assert time.monotonic() - started < LONG_TIMEOUT / 2


async def test_waits_about_its_timeout_when_nothing_happens(backend: Backend) -> None:
    started = time.monotonic()

    await backend.wait_for_work(["idle"], 0.6, workflows=[WORKFLOW])

    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 5.0


@pytest.mark.slow
async def test_a_wait_longer_than_a_client_read_timeout_returns_quietly(backend: Backend) -> None:
    # Client libraries time reads out after a few seconds by default (redis-py: 5 s);
    # an idle worker's wait is longer than that and must not be reported as an outage.
    started = time.monotonic()

    await backend.wait_for_work(["idle"], 5.5, workflows=[WORKFLOW])

    assert time.monotonic() - started >= 5.0


async def test_a_wait_begun_after_close_ends_at_once(backend_url: str) -> None:
    """A worker's last wait may start as its backend closes (shutdown): it returns or
    says the backend is closed, and never waits out its timeout."""
    backend = await open_backend(backend_url)
    await backend.close()
    with contextlib.suppress(BackendUnavailableError):
        await asyncio.wait_for(backend.wait_for_work(["q"], 30, workflows=["wf"]), timeout=5)
