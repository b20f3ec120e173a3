"""Queue settings: cluster-wide max_parallelism and pause, enforced by claim."""

from __future__ import annotations

import asyncio
import time

from tests.conformance.helpers import (
    BackendFactory,
    claim,
    claim_one,
    claimed_ids,
    enqueue_new,
    status_of,
)
from workpool.backends.base import Backend, Finish, QueueSettings
from workpool.clock import ManualClock

LONG_TIMEOUT = 8.0


async def test_a_queue_without_settings_has_no_limit(backend: Backend) -> None:
    assert await backend.get_queue("mail") == QueueSettings("mail", None, False)


async def test_settings_change_one_field_at_a_time(backend: Backend) -> None:
    assert await backend.set_queue("mail", max_parallelism=3) == QueueSettings("mail", 3, False)
    assert await backend.set_queue("mail", paused=True) == QueueSettings("mail", 3, True)
    assert await backend.set_queue("mail", max_parallelism=None) == QueueSettings(
        "mail", None, True
    )
    assert await backend.get_queue("mail") == QueueSettings("mail", None, True)
    assert await backend.get_queue("other") == QueueSettings("other", None, False)


async def test_declared_defaults_do_not_undo_an_operators_change(backend: Backend) -> None:
    await backend.set_queue("mail", paused=True)
    declared = await backend.set_queue("mail", max_parallelism=10, only_if_new=True)
    assert declared == QueueSettings("mail", None, True)
    fresh = await backend.set_queue("sms", max_parallelism=10, only_if_new=True)
    assert fresh == QueueSettings("sms", 10, False)


async def test_claims_start_no_more_than_max_parallelism(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = [await enqueue_new(backend, now + i * 0.01) for i in range(5)]
    await backend.set_queue("default", max_parallelism=2)
    assert await claimed_ids(backend, now + 1) == ids[:2]
    assert await claimed_ids(backend, now + 1, worker_id="worker-2") == []


async def test_a_finished_run_makes_room_for_the_next(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    ids = [await enqueue_new(backend, now + i * 0.01) for i in range(3)]
    await backend.set_queue("default", max_parallelism=1)
    running = await claim_one(backend, now + 1)
    assert await backend.finish([Finish(running.lease, "succeeded", output="1")], now + 2) == [True]
    assert await claimed_ids(backend, now + 2) == [ids[1]]


async def test_a_paused_queue_starts_nothing_but_finishes_what_runs(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    running_id = await enqueue_new(backend, now)
    running = await claim_one(backend, now)
    waiting = [await enqueue_new(backend, now + 1 + i) for i in range(2)]
    later = await enqueue_new(backend, now, available_at=now + 5)
    await backend.set_queue("default", paused=True)
    assert await claimed_ids(backend, now + 10) == []
    assert await status_of(backend, later) == "queued"  # promoted while paused
    assert await backend.finish([Finish(running.lease, "succeeded", output="1")], now + 10) == [
        True
    ]
    assert await status_of(backend, running_id) == "succeeded"
    await backend.set_queue("default", paused=False)
    assert await claimed_ids(backend, now + 11) == [*waiting, later]


async def test_each_queue_has_its_own_limit_within_one_claim(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    capped = [await enqueue_new(backend, now + i * 0.01, queue="capped") for i in range(3)]
    free = [await enqueue_new(backend, now + i * 0.01, queue="free") for i in range(3)]
    await backend.set_queue("capped", max_parallelism=1)
    result = await claim(backend, now + 1, queues=("capped", "free"), limit=10)
    assert [run.lease.run_id for run in result.runs] == [capped[0], *free]


async def test_resuming_a_queue_wakes_its_idle_workers(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()
    await enqueue_new(backend, clock.now())
    await backend.set_queue("default", paused=True)
    await backend.wait_for_work(["default"], 0.1)  # take the enqueue's own wake-up
    started = time.monotonic()
    task = asyncio.create_task(backend.wait_for_work(["default"], LONG_TIMEOUT))
    await asyncio.sleep(0.2)
    await other.set_queue("default", paused=False)
    await task
    assert time.monotonic() - started < LONG_TIMEOUT / 2


async def test_a_run_leaving_a_full_queue_wakes_its_idle_workers(
    backend: Backend, backend_factory: BackendFactory, clock: ManualClock
) -> None:
    other = await backend_factory()
    now = clock.now()
    for i in range(2):
        await enqueue_new(backend, now + i * 0.01)
    await backend.set_queue("default", max_parallelism=1)
    running = await claim_one(other, now)
    assert await claimed_ids(backend, now) == []  # full: this worker goes idle
    await backend.wait_for_work(["default"], 0.1)  # take any earlier wake-up
    started = time.monotonic()
    task = asyncio.create_task(backend.wait_for_work(["default"], LONG_TIMEOUT))
    await asyncio.sleep(0.2)
    await other.finish([Finish(running.lease, "succeeded", output="1")], now + 1)
    await task
    assert time.monotonic() - started < LONG_TIMEOUT / 2
