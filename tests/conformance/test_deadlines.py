"""A run's deadline (``NewRun.deadline``): past it, a run that is not running ends
``failed`` with a DeadlineExceededError in the claim's expire step, wherever it waits
(queued, at its gate, scheduled for a retry, suspended on a timer, an event or a child),
with hooks and counts as for any failure, once."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.conformance.helpers import (
    LEASE_SECONDS,
    RETRY,
    WORKFLOW,
    claim,
    claim_one,
    enqueue,
    error_json,
    fetch,
    hook,
    new_run,
)
from tests.conformance.test_batches import start_batch
from workpool.backends.base import Backend, Finish, StepRecord
from workpool.clock import ManualClock

DEADLINE_AFTER = 100.0
ON_FAILURE = hook("compensate", context='{"undo": true}', on_failure_only=True)


async def failed_by_deadline(backend: Backend, run_id: str, waited: str) -> None:
    record = await fetch(backend, run_id)
    assert record.status == "failed"
    assert record.error is not None
    error = json.loads(record.error)
    assert error["type"] == "DeadlineExceededError"
    assert f"while {waited}" in error["message"]


async def test_deadline_is_stored_and_returned_by_claims(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run = dataclasses.replace(new_run(now), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, run, now)

    assert (await fetch(backend, run.id)).deadline == now + DEADLINE_AFTER
    assert (await claim_one(backend, now)).deadline == now + DEADLINE_AFTER
    plain = await enqueue(backend, new_run(now), now)
    assert (await fetch(backend, plain)).deadline is None


async def test_a_queued_run_past_its_deadline_fails_with_hooks_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run = dataclasses.replace(new_run(now, hooks=[ON_FAILURE]), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, run, now)
    # A worker that does not serve its workflow still expires it (no claim takes it).
    result = await claim(backend, now + 10, workflows=["other"])
    assert result.next_wake_at == now + DEADLINE_AFTER

    result = await claim(backend, now + DEADLINE_AFTER)
    assert result.runs == []
    await failed_by_deadline(backend, run.id, "queued")
    hook_run = await fetch(backend, f"{run.id}-0")
    assert hook_run.workflow == "compensate"
    assert json.loads(hook_run.input)["result"]["error"]["type"] == "DeadlineExceededError"

    await claim(backend, now + DEADLINE_AFTER + 1)  # nothing ends twice
    stats = await backend.get_stats(now - 60, now + DEADLINE_AFTER + 60)
    counted = [pair for pair in stats.counters if pair.workflow == WORKFLOW]
    assert [(pair.failed, pair.executions) for pair in counted] == [(1, 0)]


async def test_a_run_backing_off_past_its_deadline_fails(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run = dataclasses.replace(new_run(now, retry=RETRY), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, run, now)
    claimed = await claim_one(backend, now)
    retry_at = now + 1000.0
    assert await backend.finish(
        [Finish(claimed.lease, "retry", error=error_json(), retry_at=retry_at)], now + 1
    ) == [True]

    result = await claim(backend, now + 2)
    assert result.next_wake_at == now + DEADLINE_AFTER
    assert (await claim(backend, now + DEADLINE_AFTER)).runs == []
    await failed_by_deadline(backend, run.id, "scheduled")


@pytest.mark.parametrize("wait", ["timer", "event", "child"])
async def test_a_suspended_run_past_its_deadline_fails(
    backend: Backend, clock: ManualClock, wait: str
) -> None:
    now = clock.now()
    run = dataclasses.replace(new_run(now), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, run, now)
    claimed = await claim_one(backend, now)
    finish = Finish(claimed.lease, "suspend")
    if wait == "timer":
        finish = dataclasses.replace(finish, wake_at=now + 1000.0)
    elif wait == "event":
        finish = dataclasses.replace(finish, events=("approved",))
    else:
        child = dataclasses.replace(new_run(now + 5000.0, workflow="child"), id=f"{run.id}-c")
        step = StepRecord("child", "workflow", "waiting", 1, now, child_run_id=child.id)
        assert await backend.save_step(claimed.lease, step, now, child) is not None
        finish = dataclasses.replace(finish, waiting_on=(child.id,))
    assert await backend.finish([finish], now + 1) == [True]
    assert (await fetch(backend, run.id)).status == "suspended"

    await claim(backend, now + DEADLINE_AFTER - 1)
    assert (await fetch(backend, run.id)).status == "suspended"
    await claim(backend, now + DEADLINE_AFTER)
    await failed_by_deadline(backend, run.id, "suspended")


async def test_a_run_waiting_at_its_gate_fails_and_frees_nothing_it_did_not_hold(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    holder = new_run(now, max_concurrency=1)
    waiter = dataclasses.replace(new_run(now, max_concurrency=1), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, holder, now)
    await enqueue(backend, waiter, now)
    held = await claim_one(backend, now, lease_seconds=1000.0)
    assert held.lease.run_id == holder.id

    await claim(backend, now + DEADLINE_AFTER)
    await failed_by_deadline(backend, waiter.id, "queued")
    third = new_run(now + DEADLINE_AFTER, max_concurrency=1)
    await enqueue(backend, third, now + DEADLINE_AFTER)
    assert (await claim(backend, now + DEADLINE_AFTER + 1)).runs == []  # the gate is still held
    assert await backend.finish([Finish(held.lease, "succeeded", output="1")], now + 200) == [True]
    assert (await claim_one(backend, now + 201)).lease.run_id == third.id


async def test_a_running_run_is_left_to_its_worker_until_its_lease_expires(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    deadline = now + LEASE_SECONDS / 2
    run = dataclasses.replace(new_run(now), deadline=deadline)
    await enqueue(backend, run, now)
    await claim_one(backend, now)

    result = await claim(backend, deadline + 1)
    assert (await fetch(backend, run.id)).status == "running"
    assert result.next_wake_at == now + LEASE_SECONDS  # not the deadline passed: no busy loop
    # The worker died: the reap queues it again, and the same claim ends it.
    assert (await claim(backend, now + LEASE_SECONDS)).runs == []
    await failed_by_deadline(backend, run.id, "queued")


async def test_a_run_that_ended_first_is_untouched(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run = dataclasses.replace(new_run(now), deadline=now + DEADLINE_AFTER)
    await enqueue(backend, run, now)
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 1) == [True]

    result = await claim(backend, now + DEADLINE_AFTER)
    assert result.next_wake_at is None
    assert (await fetch(backend, run.id)).status == "succeeded"


async def test_batch_counts_a_run_failed_by_its_deadline_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 1, open=True, available_at=now + 1000.0)
    run = dataclasses.replace(new_run(now), deadline=now + DEADLINE_AFTER, batch_id=batch_id)
    await backend.enqueue([run], now)

    await claim(backend, now + DEADLINE_AFTER)
    await claim(backend, now + DEADLINE_AFTER + 1)
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.total, batch.failed) == (2, 1)
