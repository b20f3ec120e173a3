"""Priorities: within a queue, the highest-priority claimable run first, then the oldest.

Runs carry a ``rank_offset`` that the client computes from their priority (``builder.
rank_offset``: strict, or with a queue's aging); backends order claimable runs, and
runs waiting at a gate, by ``available_at - rank_offset``. Each test checks the order
of every claim, and that times the backends report stay real times.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

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
from workpool.backends.base import Backend, Finish, NewRun, RateLimitSpec, StepRecord
from workpool.builder import STRICT_STEP, rank_offset
from workpool.clock import ManualClock
from workpool.validation import EARLIEST_TIME, LATEST_TIME


async def one_by_one(backend: Backend, now: float, count: int, **options: Any) -> list[str]:
    """Claim ``count`` times with a limit of 1 (strict at every claim); the ids taken."""
    taken: list[str] = []
    for _ in range(count):
        taken += await claimed_ids(backend, now, limit=1, **options)
    return taken


async def test_the_highest_priority_is_claimed_first_then_the_oldest(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    low = await enqueue_new(backend, now, priority=-3, available_at=now - 10)
    old = await enqueue_new(backend, now, priority=0, available_at=now - 3)
    high = await enqueue_new(backend, now, priority=5, available_at=now - 1)
    older = await enqueue_new(backend, now, priority=0, available_at=now - 4)
    higher_later = await enqueue_new(backend, now, priority=5, available_at=now - 0.5)
    top = await enqueue_new(backend, now, priority=100, available_at=now)

    assert await one_by_one(backend, now, 6) == [top, high, higher_later, older, old, low]


async def test_one_claim_of_many_runs_takes_them_in_priority_order(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = {
        priority: await enqueue_new(
            backend, now, priority=priority, available_at=now - abs(priority)
        )
        for priority in (0, -100, 7, 1, -1)
    }
    assert await claimed_ids(backend, now, limit=3) == [ids[7], ids[1], ids[0]]
    assert await claimed_ids(backend, now, limit=3) == [ids[-1], ids[-100]]


async def test_runs_one_millisecond_apart_keep_their_order_at_every_priority(
    backend: Backend, clock: ManualClock
) -> None:
    """The largest rank offsets still order runs 1 ms apart (float precision)."""
    now = clock.now()
    for priority in (100, -100):
        first = await enqueue_new(backend, now, priority=priority, available_at=now - 0.002)
        second = await enqueue_new(backend, now, priority=priority, available_at=now - 0.001)
        assert await one_by_one(backend, now, 2) == [first, second]


@pytest.mark.parametrize("now", [EARLIEST_TIME + 10, LATEST_TIME - 10])
async def test_runs_one_millisecond_apart_keep_their_order_at_the_ends_of_time(
    backend: Backend, now: float
) -> None:
    """The largest ranks in magnitude: the first and last storable times, priority ±100."""
    for priority in (100, -100):
        first = await enqueue_new(backend, now, priority=priority, available_at=now - 0.002)
        second = await enqueue_new(backend, now, priority=priority, available_at=now - 0.001)
        assert await one_by_one(backend, now, 2) == [first, second]


async def test_priority_orders_runs_across_the_served_workflows_of_a_queue(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    old_a = await enqueue_new(backend, now, workflow="a", available_at=now - 50)
    urgent_b = await enqueue_new(backend, now, workflow="b", priority=2)
    new_a = await enqueue_new(backend, now, workflow="a", priority=2, available_at=now - 1)
    await enqueue_new(backend, now, workflow="c", priority=99)  # served by nobody here

    taken = await one_by_one(backend, now, 3, workflows=["a", "b"])

    assert taken == [new_a, urgent_b, old_a]


async def test_queues_keep_their_order_whatever_the_priorities(
    backend: Backend, clock: ManualClock
) -> None:
    """Priority orders runs within a queue; the worker's queue order comes first."""
    now = clock.now()
    second_queue = await enqueue_new(backend, now, queue="bulk", priority=100)
    first_queue = await enqueue_new(backend, now, queue="default", priority=-100)

    taken = await claimed_ids(backend, now, queues=["default", "bulk"])

    assert taken == [first_queue, second_queue]


async def test_the_priority_is_stored_and_read_back(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    plain = await enqueue_new(backend, now)
    urgent = await enqueue_new(backend, now, priority=42)
    background = await enqueue_new(backend, now, priority=-100, available_at=now + 60)

    assert (await fetch(backend, plain)).priority == 0
    assert (await fetch(backend, urgent)).priority == 42
    record = await fetch(backend, background)
    assert (record.priority, record.available_at) == (-100, now + 60)
    listed = await backend.list_runs(None, None, None, 10, None)
    assert {run.id: run.priority for run in listed.runs} == {
        plain: 0,
        urgent: 42,
        background: -100,
    }


async def test_a_scheduled_run_takes_its_priority_when_it_becomes_due(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    waiting = await enqueue_new(backend, now, priority=0, available_at=now - 100)
    scheduled = await enqueue_new(backend, now, priority=9, available_at=now + 5)

    assert await claimed_ids(backend, now + 4, limit=0) == []
    later = await enqueue_new(backend, now + 6, priority=0)
    assert await one_by_one(backend, now + 6, 3) == [scheduled, waiting, later]
    record = await fetch(backend, scheduled)
    assert (record.available_at, record.priority) == (now + 5, 9)


async def test_a_retry_keeps_its_priority(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    urgent = await enqueue_new(backend, now, priority=5)
    other = await enqueue_new(backend, now, available_at=now - 100)

    run = await claim_one(backend, now)
    assert run.lease.run_id == urgent
    failed = Finish(run.lease, "retry", error=error_json(), retry_at=now + 2)
    assert await backend.finish([failed], now + 1) == [True]
    newer = await enqueue_new(backend, now + 1.5)

    assert await one_by_one(backend, now + 3, 3) == [urgent, other, newer]
    assert (await fetch(backend, urgent)).priority == 5


async def test_a_released_run_keeps_its_priority(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    urgent = await enqueue_new(backend, now, priority=3)
    run = await claim_one(backend, now)
    await backend.release([run.lease], now + 1)
    waiting = await enqueue_new(backend, now + 1, available_at=now - 100)

    assert await one_by_one(backend, now + 1, 2) == [urgent, waiting]


async def test_a_suspended_run_resumed_keeps_its_priority(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    urgent = await enqueue_new(backend, now, priority=3)
    run = await claim_one(backend, now)
    suspend = Finish(run.lease, "suspend", wake_at=now + 10)
    assert await backend.finish([suspend], now + 1) == [True]
    waiting = await enqueue_new(backend, now + 2, available_at=now - 100)

    assert await one_by_one(backend, now + 10, 2) == [urgent, waiting]


async def test_max_parallelism_starts_the_highest_priorities_first(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await backend.set_queue("default", max_parallelism=2)
    ids = {
        priority: await enqueue_new(
            backend, now, priority=priority, available_at=now - abs(priority)
        )
        for priority in (0, 4, 1, 9, 2)
    }

    first = await claim(backend, now)
    assert [run.lease.run_id for run in first.runs] == [ids[9], ids[4]]
    done = Finish(first.runs[0].lease, "succeeded", output="1")
    assert await backend.finish([done], now + 1) == [True]
    late = await enqueue_new(backend, now + 1, priority=3)

    assert await claimed_ids(backend, now + 1) == [late]
    assert await claimed_ids(backend, now + 1) == []


async def test_a_gate_admits_its_waiting_runs_highest_priority_first(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    gated = [
        await enqueue(backend, new_run(now + i, max_concurrency=1, priority=p), now + i)
        for i, p in enumerate((0, 0, -2, 6, 0, 6))
    ]
    running = await claim_one(backend, now + 10)
    assert running.lease.run_id == gated[0]
    assert [await status_of(backend, run_id) for run_id in gated[1:]] == ["queued"] * 5

    order = []
    for step in range(5):
        at = now + 11 + step
        finished = Finish(running.lease, "succeeded", output="1")
        assert await backend.finish([finished], at) == [True]
        running = await claim_one(backend, at)
        order.append(running.lease.run_id)

    assert order == [gated[3], gated[5], gated[1], gated[4], gated[2]]


async def test_a_gated_run_admitted_competes_by_priority_with_ungated_runs(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await enqueue(backend, new_run(now, max_concurrency=1), now)
    urgent = await enqueue(backend, new_run(now, max_concurrency=1, priority=8), now)
    running = await claim_one(backend, now)
    assert running.lease.run_id == first
    ungated = await enqueue_new(backend, now, available_at=now - 1000)

    assert await backend.finish([Finish(running.lease, "succeeded", output="1")], now + 1) == [True]
    assert await one_by_one(backend, now + 1, 2) == [urgent, ungated]


async def test_rate_limits_reserve_in_queueing_order_and_due_runs_go_by_priority(
    backend: Backend, clock: ManualClock
) -> None:
    """Priorities do not reorder rate limit reservations: each run reserves its start
    when it becomes queued. Once due, it is claimed by priority like any run."""
    now = clock.now()
    one_per_10s = (RateLimitSpec("workflow:send_email", 1, 10.0),)
    first = await enqueue(backend, replace(new_run(now), rate_limits=one_per_10s), now)
    second = await enqueue(backend, replace(new_run(now), rate_limits=one_per_10s), now)
    urgent = await enqueue(backend, replace(new_run(now, priority=9), rate_limits=one_per_10s), now)

    starts = [(await fetch(backend, run_id)).available_at - now for run_id in (second, urgent)]
    assert starts == [10.0, 20.0]
    assert await claimed_ids(backend, now) == [first]
    ordinary = await enqueue_new(backend, now + 20, available_at=now + 15)
    assert await one_by_one(backend, now + 20, 3) == [urgent, second, ordinary]


async def test_strict_priorities_keep_a_low_run_waiting_while_higher_ones_arrive(
    backend: Backend, clock: ManualClock
) -> None:
    """Without aging, a flood of higher-priority runs takes every claim while it lasts,
    however long the lower one has waited (here three years)."""
    now = clock.now()
    low = await enqueue_new(backend, now, priority=0, available_at=now - 1e8)
    for step in range(20):
        at = now + step
        flood = await enqueue_new(backend, at, priority=1)
        assert await claimed_ids(backend, at, limit=1) == [flood]
    assert await claimed_ids(backend, now + 20, limit=1) == [low]


async def test_with_aging_a_low_run_that_waited_long_enough_goes_first(
    backend: Backend, clock: ManualClock
) -> None:
    """Aging of 60 s: each priority level is worth 60 s of waiting. A run of priority 0
    that has waited more than 2 x 60 s is claimed before a new run of priority 2, one
    that waited less is not."""
    now = clock.now()

    def aged(available_at: float, priority: int) -> NewRun:
        return new_run(available_at, priority=priority, rank_offset=rank_offset(priority, 60.0))

    patient = await enqueue(backend, aged(now - 121, 0), now)
    recent = await enqueue(backend, aged(now - 119, 0), now)
    urgent = await enqueue(backend, aged(now, 2), now)

    assert await one_by_one(backend, now, 3) == [patient, urgent, recent]


def test_strict_step_outweighs_every_time_span_a_queue_holds() -> None:
    assert rank_offset(1, None) == STRICT_STEP >= 2**33
    assert rank_offset(-100, None) == -100 * STRICT_STEP
    assert rank_offset(3, 60.0) == 180.0


async def test_stats_and_claims_report_real_times_with_priorities(
    backend: Backend, clock: ManualClock
) -> None:
    """The oldest claimable time (the run a claim would take next) and next_wake_at are
    times, never ranks."""
    now = clock.now()
    await enqueue_new(backend, now, priority=50, available_at=now - 10.25)
    await enqueue_new(backend, now, priority=-50, available_at=now + 30.5)

    stats = await backend.get_stats(now - 60, now)
    result = await claim(backend, now, limit=0)

    assert stats.oldest_claimable == {"default": now - 10.25}
    assert result.next_wake_at == now + 30.5


async def test_a_run_to_isolate_reports_when_it_became_available(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now, priority=77)
    await claim_one(backend, now)
    expired = now + LEASE_SECONDS
    other = await enqueue_new(backend, expired, priority=-77)

    busy = await claim(backend, expired, alone=False)

    assert [run.lease.run_id for run in busy.runs] == [other]
    assert busy.isolated_since == expired


async def test_completion_hooks_and_children_take_the_priority_they_are_given(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    urgent_hook = replace(hook(queue="default"), priority=4, rank_offset=rank_offset(4, None))
    parent = await enqueue(backend, new_run(now, hooks=[urgent_hook]), now)
    run = await claim_one(backend, now)
    child = new_run(now, priority=-7, idempotency_key="child-1")
    step = StepRecord("charge", "emit", "succeeded", 1, now, output=None)
    saved = await backend.save_step(run.lease, step, now, child=child)
    assert saved is not None
    assert (await fetch(backend, child.id)).priority == -7
    plain = await enqueue_new(backend, now, available_at=now - 100)
    assert await backend.finish([Finish(run.lease, "succeeded", output="1")], now + 1) == [True]

    hook_run = f"{parent}-0"
    assert (await fetch(backend, hook_run)).priority == 4
    assert await one_by_one(backend, now + 1, 3) == [hook_run, plain, child.id]


async def test_a_rerun_keeps_its_priority(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    urgent = await enqueue_new(backend, now, priority=6)
    run = await claim_one(backend, now)
    failed = Finish(run.lease, "failed", error=error_json())
    assert await backend.finish([failed], now + 1) == [True]
    waiting = await enqueue_new(backend, now + 1, available_at=now - 100)

    again = await backend.rerun(urgent, "rerun-1", now + 2)

    assert again.run_id == "rerun-1"
    assert (await fetch(backend, "rerun-1")).priority == 6
    assert await one_by_one(backend, now + 2, 2) == ["rerun-1", waiting]


async def test_fail_unserved_fails_the_runs_that_waited_whatever_their_priority(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    recent_urgent = await enqueue_new(backend, now, workflow="lost", priority=90)
    old_low = await enqueue_new(backend, now, workflow="lost", priority=-90, available_at=now - 99)
    old_urgent = await enqueue_new(
        backend, now, workflow="lost", priority=90, available_at=now - 60
    )

    failed = await backend.fail_unserved("default", "lost", now - 50, 10, error_json(), now)

    assert failed == 2
    assert await status_of(backend, recent_urgent) == "queued"
    assert await status_of(backend, old_low) == "failed"
    assert await status_of(backend, old_urgent) == "failed"


@pytest.mark.parametrize("offset", [float("nan"), float("inf"), 2e12, -2e12])
async def test_a_rank_offset_out_of_range_is_refused(
    backend: Backend, clock: ManualClock, offset: float
) -> None:
    now = clock.now()
    with pytest.raises(ValueError, match="rank_offset"):
        await backend.enqueue([new_run(now, rank_offset=offset)], now)
    assert (await backend.list_runs(None, None, None, 10, None)).runs == []
