"""Concurrency gates: at most max_concurrency runs of a (workflow, key) admitted at once."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    claim_one,
    claimed_ids,
    enqueue,
    enqueue_new,
    error_json,
    fetch,
    hook,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Finish, StepRecord
from workpool.clock import ManualClock


async def gated(
    backend: Backend, now: float, count: int, limit: int = 1, queue: str = "default"
) -> list[str]:
    """Enqueue ``count`` runs behind one gate, one after the other; return their ids."""
    ids = []
    for index in range(count):
        run = new_run(now + index * 0.001, max_concurrency=limit, queue=queue)
        ids.append(await enqueue(backend, run, now + index * 0.001))
    return ids


async def test_a_gate_admits_its_limit_and_the_rest_wait_queued(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await gated(backend, now, 5, limit=2)
    assert await claimed_ids(backend, now + 1) == ids[:2]
    assert await claimed_ids(backend, now + 1) == []
    assert [await status_of(backend, run_id) for run_id in ids[2:]] == ["queued"] * 3


async def test_a_finished_run_lets_the_next_one_in(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    ids = await gated(backend, now, 3)
    first = await claim_one(backend, now + 1)
    assert await backend.finish([Finish(first.lease, "succeeded", output="1")], now + 2) == [True]
    assert await claimed_ids(backend, now + 2) == [ids[1]]


async def test_each_way_of_leaving_frees_the_place(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    ids = await gated(backend, now, 6)
    running = await claim_one(backend, now + 1)
    await backend.finish([Finish(running.lease, "failed", error=error_json())], now + 2)
    running = await claim_one(backend, now + 2)
    assert running.lease.run_id == ids[1]
    await backend.finish(
        [Finish(running.lease, "retry", error=error_json(), retry_at=now + 3600)], now + 3
    )
    running = await claim_one(backend, now + 3)
    assert running.lease.run_id == ids[2]
    await backend.finish([Finish(running.lease, "suspend", wake_at=now + 3600)], now + 4)
    running = await claim_one(backend, now + 4)
    assert running.lease.run_id == ids[3]
    await backend.release([running.lease], now + 5)  # requeued: it waits behind ids[4]
    assert await claimed_ids(backend, now + 5) == [ids[4]]


async def test_keys_have_separate_gates(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    a1 = await enqueue_new(backend, now, max_concurrency=1, concurrency_key="a")
    a2 = await enqueue_new(backend, now + 0.1, max_concurrency=1, concurrency_key="a")
    b1 = await enqueue_new(backend, now + 0.2, max_concurrency=1, concurrency_key="b")
    other = await enqueue_new(
        backend, now + 0.3, max_concurrency=1, workflow="other", concurrency_key="a"
    )
    assert await claimed_ids(backend, now + 1) == [a1, b1, other]
    assert await status_of(backend, a2) == "queued"


async def test_canceling_a_waiting_run_keeps_the_place_and_an_admitted_one_frees_it(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await gated(backend, now, 4)
    assert await backend.cancel(ids[1], None, now + 1) == "canceled"  # waiting
    assert await backend.cancel(ids[0], None, now + 1) == "canceled"  # admitted, unclaimed
    assert await claimed_ids(backend, now + 2) == [ids[2]]
    assert await backend.cancel_many(None, None, None, 10, now + 3) == 2
    assert await claimed_ids(backend, now + 4) == []
    assert await status_of(backend, ids[3]) == "canceled"


async def test_a_scheduled_run_joins_the_gate_when_due(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    later = await enqueue(backend, new_run(now + 60, max_concurrency=1), now)
    first = (await gated(backend, now, 1))[0]
    assert await claimed_ids(backend, now + 61) == [first]
    assert await status_of(backend, later) == "queued"  # promoted, waiting at the gate
    running = await fetch(backend, first)
    assert running.status == "running"


async def test_a_reaped_run_goes_back_through_the_gate(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await gated(backend, now, 2)
    await claim_one(backend, now + 1)
    after_expiry = now + 1 + LEASE_SECONDS
    assert await claimed_ids(backend, after_expiry) == [ids[1]]  # ids[0] requeued behind it
    assert await status_of(backend, ids[0]) == "queued"


async def test_a_resumed_parent_waits_at_its_gate(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    parent_ids = await gated(backend, now, 2, queue="parents")
    parent = await claim_one(backend, now + 1, queues=("parents",))
    step = StepRecord("charge", "workflow", "waiting", 1, now + 1)
    saved = await backend.save_step(parent.lease, step, now + 1, new_run(now + 1, workflow="child"))
    assert saved is not None
    await backend.finish(
        [Finish(parent.lease, "suspend", waiting_on=(saved.child_run_id or "",))], now + 1
    )
    # Suspended runs do not count: the second parent is admitted.
    second = await claim_one(backend, now + 2, queues=("parents",))
    assert second.lease.run_id == parent_ids[1]
    child = await claim_one(backend, now + 3)
    await backend.finish([Finish(child.lease, "succeeded", output="1")], now + 3)
    assert await status_of(backend, parent_ids[0]) == "queued"
    assert await claimed_ids(backend, now + 4, queues=("parents",)) == []  # gate full
    await backend.finish([Finish(second.lease, "succeeded", output="2")], now + 5)
    assert await claimed_ids(backend, now + 5, queues=("parents",)) == [parent_ids[0]]


async def test_a_raised_limit_admits_waiting_runs_at_the_next_change(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await gated(backend, now, 4, limit=1)
    await claim_one(backend, now + 1)
    newer = await enqueue(backend, new_run(now + 2, max_concurrency=3), now + 2)
    assert await claimed_ids(backend, now + 3) == ids[1:3]
    assert await status_of(backend, newer) == "queued"


async def test_hook_runs_are_gated_by_their_workflow(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    gated_hook = replace(hook("notify", queue="default"), max_concurrency=1)
    owners = [
        await enqueue(backend, new_run(now + i * 0.01, workflow="w", hooks=(gated_hook,)), now)
        for i in range(2)
    ]
    claimed = (await claim(backend, now + 1, limit=2)).runs
    await backend.finish([Finish(run.lease, "succeeded", output="1") for run in claimed], now + 2)
    hook_ids = [f"{owner}-0" for owner in owners]
    assert await claimed_ids(backend, now + 3) == hook_ids[:1]
