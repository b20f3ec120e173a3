"""Named leases (one cron leader; its ticks: see test_cron_ticks.py)."""

from __future__ import annotations

from workpool.backends.base import Backend
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
