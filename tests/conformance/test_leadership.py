"""Named leases (one cron leader) and skip_if_busy enqueues (which cron ticks no longer use:
see test_cron_ticks.py)."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import claim_one, enqueue, new_run
from workpool.backends.base import Backend, Enqueued
from workpool.clock import ManualClock


async def test_one_holder_at_a_time_until_its_lease_expires(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    assert await backend.acquire_lease("cron", "worker-a", 10, now)
    assert not await backend.acquire_lease("cron", "worker-b", 10, now + 1)
    assert await backend.acquire_lease("cron", "worker-a", 10, now + 5)  # renewed to +15
    assert not await backend.acquire_lease("cron", "worker-b", 10, now + 14)
    assert await backend.acquire_lease("cron", "worker-b", 10, now + 15)
    assert not await backend.acquire_lease("cron", "worker-a", 10, now + 16)
    assert await backend.acquire_lease("other", "worker-a", 10, now + 16)  # names apart


async def test_a_busy_gate_skips_a_skip_if_busy_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    first = await enqueue(backend, new_run(now, max_concurrency=1), now)
    tick = replace(new_run(now + 1, max_concurrency=1), skip_if_busy=True)
    assert await backend.enqueue([tick], now + 1) == [
        Enqueued(tick.id, created=False, skipped=True)
    ]
    assert await backend.get_run(tick.id) is None
    running = await claim_one(backend, now + 2)
    assert running.lease.run_id == first
    idle = replace(new_run(now + 3, workflow="other", max_concurrency=1), skip_if_busy=True)
    assert await backend.enqueue([idle], now + 3) == [Enqueued(idle.id, created=True)]
