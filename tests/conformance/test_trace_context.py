"""The trace context stored with a run: written by its enqueue (or the step that starts
it, or the end that fires its hook), returned by every claim of the run."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim_one,
    enqueue,
    fetch,
    hook,
    new_run,
)
from tests.conformance.test_events import KEY, waiting_run
from tests.conformance.test_steps import child_step
from workpool.backends.base import Backend, Finish, NewBatch
from workpool.clock import ManualClock

PARENT = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}'
CHILD = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}'
SENDER = '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
LINK = '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","link":true}'


async def test_every_claim_returns_the_context_stored_at_enqueue(backend: Backend) -> None:
    run_id = await enqueue(backend, replace(new_run(100.0), trace_context=PARENT), 100.0)
    first = await claim_one(backend, 100.0)
    assert (first.lease.run_id, first.trace_context) == (run_id, PARENT)
    retry = Finish(first.lease, "retry", error='{"type": "E"}', retry_at=101.0)
    assert await backend.finish([retry], 100.5) == [True]
    again = await claim_one(backend, 101.0)
    assert (again.attempt, again.trace_context) == (2, PARENT)
    # The lease expires: the reclaim (another worker, after a crash) reads it too.
    reclaimed = await claim_one(backend, 101.0 + LEASE_SECONDS + 1)
    assert (reclaimed.lease.run_id, reclaimed.trace_context) == (run_id, PARENT)


async def test_a_run_without_context_claims_none(backend: Backend) -> None:
    await enqueue(backend, new_run(100.0), 100.0)
    assert (await claim_one(backend, 100.0)).trace_context is None


async def test_a_child_stores_the_context_of_the_step_that_started_it(backend: Backend) -> None:
    await enqueue(backend, replace(new_run(100.0), trace_context=PARENT), 100.0)
    parent = await claim_one(backend, 100.0)
    child = replace(new_run(100.0, workflow="child", idempotency_key="k"), trace_context=CHILD)
    saved = await backend.save_step(parent.lease, child_step("c", 100.0), 100.0, child)
    assert saved is not None
    claimed = await claim_one(backend, 100.0)
    assert (claimed.lease.run_id, claimed.trace_context) == (saved.child_run_id, CHILD)


async def test_a_hook_run_stores_the_context_its_hook_carries(backend: Backend) -> None:
    notify = replace(hook("notify"), trace_context=LINK)
    await enqueue(backend, replace(new_run(100.0, hooks=(notify,)), trace_context=PARENT), 100.0)
    claimed = await claim_one(backend, 100.0)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], 101.0) == [True]
    fired = await claim_one(backend, 101.0, queues=["hooks"])
    assert fired.workflow == "notify"
    assert fired.trace_context == LINK


async def test_a_batch_callback_stores_the_context_its_hook_carries(backend: Backend) -> None:
    summary = replace(hook("summary"), trace_context=LINK)
    run = replace(new_run(100.0), trace_context=PARENT, batch_id="b1")
    await backend.enqueue([run], 100.0, batch=NewBatch("b1", summary))
    claimed = await claim_one(backend, 100.0)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], 101.0) == [True]
    fired = await claim_one(backend, 101.0, queues=["hooks"])
    assert (fired.workflow, fired.trace_context) == ("summary", LINK)


async def test_the_claim_after_an_event_woke_the_run_names_the_sender(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now)
    first = await fetch(backend, run_id)
    assert await backend.send_event(run_id, KEY, "1", now + 1, trace_context=SENDER) == "sent"
    resumed = await claim_one(backend, now + 2)
    assert resumed.lease.run_id == run_id
    # The claim it applies to, then the sender's context: the claim that the wake-up made.
    assert resumed.woken_by == f"{first.executions + 1} {SENDER}"
    assert resumed.fence == first.executions + 1


async def test_an_event_that_wakes_nothing_stores_no_sender(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue(backend, new_run(now), now)
    assert await backend.send_event(run_id, KEY, "1", now, trace_context=SENDER) == "sent"
    assert (await claim_one(backend, now)).woken_by is None


async def test_renew_names_the_canceller_of_a_running_run(backend: Backend) -> None:
    await enqueue(backend, new_run(100.0), 100.0)
    claimed = await claim_one(backend, 100.0)
    run_id = claimed.lease.run_id
    assert await backend.cancel(run_id, "stop", 100.5, trace_context=SENDER) == "requested"
    # A second cancel keeps the first canceller, as it keeps the first reason.
    assert await backend.cancel(run_id, "again", 100.6, trace_context=CHILD) == "requested"
    renewed = await backend.renew([claimed.lease], LEASE_SECONDS, 101.0)
    assert renewed.cancel_requested == {run_id}
    assert renewed.canceled_by == {run_id: SENDER}


async def test_renew_names_no_canceller_without_one(backend: Backend) -> None:
    await enqueue(backend, new_run(100.0), 100.0)
    await enqueue(backend, new_run(100.0), 100.0)
    kept, untraced = await claim_one(backend, 100.0), await claim_one(backend, 100.0)
    assert await backend.cancel(untraced.lease.run_id, None, 100.5) == "requested"
    renewed = await backend.renew([kept.lease, untraced.lease], LEASE_SECONDS, 101.0)
    assert renewed.cancel_requested == {untraced.lease.run_id}
    assert renewed.canceled_by == {}
