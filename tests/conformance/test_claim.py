"""Backend.claim: order, limits, queues, promotion of scheduled runs and next_wake_at."""

from __future__ import annotations

import asyncio

from tests.conformance.helpers import (
    LEASE_SECONDS,
    QUEUE,
    RETRY,
    BackendFactory,
    claim,
    claim_one,
    claimed_ids,
    enqueue,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, ClaimedRun, Finish
from workpool.clock import ManualClock


async def test_claims_oldest_available_at_first(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    middle = await enqueue(backend, new_run(now - 20), now)
    newest = await enqueue(backend, new_run(now - 10), now)
    oldest = await enqueue(backend, new_run(now - 30), now)

    order = [(await claim_one(backend, now)).lease.run_id for _ in range(3)]

    assert order == [oldest, middle, newest]


async def test_claim_takes_at_most_limit_runs_oldest_first(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = [await enqueue(backend, new_run(now - 50 + index), now) for index in range(5)]

    taken = await claimed_ids(backend, now, limit=2)

    assert sorted(taken) == sorted(ids[:2])
    assert [await status_of(backend, run_id) for run_id in ids] == [
        "running",
        "running",
        "queued",
        "queued",
        "queued",
    ]


async def test_claim_on_empty_queue_returns_nothing(backend: Backend, clock: ManualClock) -> None:
    result = await claim(backend, clock.now())

    assert result.runs == []
    assert result.next_wake_at is None


async def test_queues_are_served_in_the_order_given(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    urgent_new = await enqueue(backend, new_run(now - 1, queue="urgent"), now)
    bulk_old = await enqueue(backend, new_run(now - 100, queue="bulk"), now)
    bulk_older = await enqueue(backend, new_run(now - 200, queue="bulk"), now)

    first = await claimed_ids(backend, now, queues=["urgent", "bulk"], limit=2)

    assert sorted(first) == sorted([urgent_new, bulk_older])
    assert await status_of(backend, bulk_old) == "queued"


async def test_first_queue_preferred_even_when_its_runs_are_newer(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now - 100, queue="a"), now)
    b_run = await enqueue(backend, new_run(now - 1, queue="b"), now)

    assert (await claim_one(backend, now, queues=["b", "a"])).lease.run_id == b_run


async def test_runs_of_other_queues_are_untouched(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    elsewhere = await enqueue(backend, new_run(now - 10, queue="other"), now)
    mine = await enqueue(backend, new_run(now, queue=QUEUE), now)

    assert await claimed_ids(backend, now, queues=[QUEUE]) == [mine]
    assert await status_of(backend, elsewhere) == "queued"
    assert (await fetch(backend, elsewhere)).attempts == 0


async def test_due_scheduled_runs_are_promoted_and_claimed(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    soon = await enqueue(backend, new_run(start + 10), start)
    later = await enqueue(backend, new_run(start + 20), start)

    assert (await claim(backend, start + 9.5)).runs == []
    assert await status_of(backend, soon) == "scheduled"

    assert await claimed_ids(backend, start + 10) == [soon]
    assert await status_of(backend, later) == "scheduled"


async def test_promoted_run_is_queued_when_limit_is_exhausted(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    queued = await enqueue(backend, new_run(start - 1), start)
    scheduled = await enqueue(backend, new_run(start + 5), start)

    assert await claimed_ids(backend, start + 5, limit=1) == [queued]
    assert await status_of(backend, scheduled) == "queued"


async def test_claim_makes_run_running_and_counts_the_attempt(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    clock.advance(3)

    await claim_one(backend, clock.now())

    record = await fetch(backend, run_id)
    assert (record.status, record.attempts, record.started_at) == ("running", 1, start + 3)
    assert (record.finished_at, record.lease_losses, record.output) == (None, 0, None)


async def test_claimed_run_carries_the_stored_fields(backend: Backend, clock: ManualClock) -> None:
    created = clock.now()
    run = new_run(created - 7, workflow="invoice", queue="billing", input='{"id": 9}', retry=RETRY)
    await enqueue(backend, run, created)
    clock.advance(1)

    claimed = await claim_one(backend, clock.now(), queues=["billing"])

    assert claimed == ClaimedRun(
        lease=claimed.lease,
        workflow="invoice",
        queue="billing",
        input='{"id": 9}',
        attempt=1,
        retry=RETRY,
        created_at=created,
        available_at=created - 7,
        fence=1,
    )
    assert claimed.lease.run_id == run.id
    assert isinstance(claimed.lease.token, str)
    assert claimed.lease.token != ""


async def test_next_wake_at_is_first_scheduled_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now + 80), now)
    await enqueue(backend, new_run(now + 50), now)

    assert (await claim(backend, now)).next_wake_at == now + 50


async def test_next_wake_at_is_first_lease_expiry_when_sooner(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    await enqueue(backend, new_run(start), start)
    await enqueue(backend, new_run(start + 50), start)
    await claim_one(backend, start)

    result = await claim(backend, start + 1)

    assert result.runs == []
    assert result.next_wake_at == start + LEASE_SECONDS


async def test_next_wake_at_is_scheduled_run_when_sooner_than_lease(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    await enqueue(backend, new_run(start), start)
    await enqueue(backend, new_run(start + 10), start)
    await claim_one(backend, start)

    assert (await claim(backend, start + 1)).next_wake_at == start + 10


async def test_next_wake_at_ignores_other_queues(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now + 5, queue="other"), now)

    assert (await claim(backend, now, queues=[QUEUE])).next_wake_at is None


async def test_next_wake_at_is_none_when_only_finished_runs_remain(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now), now)
    claimed = await claim_one(backend, now)

    assert await backend.finish([Finish(claimed.lease, "succeeded", output="null")], now) == [True]

    assert (await claim(backend, now + 1)).next_wake_at is None


async def test_concurrent_claims_from_instances_are_disjoint(
    backend_factory: BackendFactory, clock: ManualClock
) -> None:
    now = clock.now()
    instances = [await backend_factory() for _ in range(3)]
    runs = [new_run(now - 100 + index) for index in range(20)]
    await instances[0].enqueue(runs, now)

    results = await asyncio.gather(
        *(
            claim(instance, now, limit=7, worker_id=f"worker-{index}")
            for index, instance in enumerate(instances)
        )
    )

    per_instance = [[run.lease.run_id for run in result.runs] for result in results]
    all_claimed = [run_id for ids in per_instance for run_id in ids]
    assert sorted(len(ids) for ids in per_instance) == [6, 7, 7]
    assert len(all_claimed) == len(set(all_claimed)) == 20
    assert set(all_claimed) == {run.id for run in runs}


async def test_promoted_run_takes_its_place_by_available_at(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    promoted = await enqueue(backend, new_run(start + 5), start)
    queued_later = await enqueue(backend, new_run(start + 6), start + 6)

    order = [(await claim_one(backend, start + 10)).lease.run_id for _ in range(2)]

    assert order == [promoted, queued_later]
