"""Rate limits: starts spaced by each limiter, waiting on timers, no attempt used."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import (
    claim,
    claimed_ids,
    enqueue,
    error_json,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Finish, RateLimitSpec
from workpool.clock import ManualClock

TWO_PER_10S = RateLimitSpec("workflow:send_email", 2, 10.0)


async def limited(backend: Backend, now: float, count: int, *limits: RateLimitSpec) -> list[str]:
    """Enqueue ``count`` runs under ``limits`` at ``now``; return their ids."""
    ids = []
    for _ in range(count):
        run = replace(new_run(now), rate_limits=limits or (TWO_PER_10S,))
        ids.append(await enqueue(backend, run, now))
    return ids


async def test_a_burst_starts_at_once_and_the_rest_get_spaced_start_times(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await limited(backend, now, 5)
    assert [await status_of(backend, run_id) for run_id in ids] == ["queued"] * 2 + [
        "scheduled"
    ] * 3
    assert [(await fetch(backend, run_id)).available_at - now for run_id in ids[2:]] == [
        5.0,
        10.0,
        15.0,
    ]
    assert sorted(await claimed_ids(backend, now)) == sorted(ids[:2])  # a tie: any order
    assert await claimed_ids(backend, now + 4.9) == []
    result = await claim(backend, now + 4.9)
    assert result.next_wake_at == now + 5
    assert await claimed_ids(backend, now + 5) == [ids[2]]
    assert await claimed_ids(backend, now + 15) == ids[3:]


async def test_waiting_for_a_start_time_uses_no_attempt(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await limited(backend, now, 3)
    assert (await fetch(backend, ids[2])).attempts == 0
    claimed = (await claim(backend, now + 5)).runs
    assert [run.attempt for run in claimed] == [1, 1, 1]


async def test_a_retry_reserves_a_new_start_time(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await limited(backend, now, 2)
    [running, _] = (await claim(backend, now)).runs
    retry = Finish(running.lease, "retry", error=error_json(), retry_at=now)
    assert await backend.finish([retry], now) == [True]
    record = await fetch(backend, running.lease.run_id)
    assert (record.status, record.available_at) == ("scheduled", now + 5)


async def test_every_limiter_of_a_run_is_respected(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    per_queue = RateLimitSpec("queue:default", 1, 1.0)
    ids = await limited(backend, now, 3, TWO_PER_10S, per_queue)
    starts = [(await fetch(backend, run_id)).available_at - now for run_id in ids]
    assert starts == [0.0, 1.0, 5.0]


async def test_other_limiters_do_not_wait(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await limited(backend, now, 3)
    other = await limited(backend, now, 1, RateLimitSpec("workflow:other", 1, 60.0))
    assert await status_of(backend, other[0]) == "queued"
