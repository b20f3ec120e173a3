"""Steps, child runs and suspension: save_step, get_steps, finish(suspend), waking."""

from __future__ import annotations

import json

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    claim_one,
    claimed_ids,
    enqueue_new,
    error_json,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import (
    Backend,
    ClaimedRun,
    Finish,
    Lease,
    StepKind,
    StepRecord,
    StepStatus,
)
from workpool.clock import ManualClock

CHILD = "charge_card"


def run_step(name: str, started_at: float, *, output: str = '{"ok": true}') -> StepRecord:
    """A succeeded ``run`` step."""
    return StepRecord(
        name=name,
        kind="run",
        status="succeeded",
        attempts=1,
        started_at=started_at,
        output=output,
        finished_at=started_at + 0.5,
    )


def child_step(name: str, started_at: float, *, kind: StepKind = "workflow") -> StepRecord:
    """A step that starts a child (``workflow``: waits for it; ``emit``: does not)."""
    status: StepStatus = "waiting" if kind == "workflow" else "succeeded"
    return StepRecord(name=name, kind=kind, status=status, attempts=1, started_at=started_at)


async def start_child(
    backend: Backend,
    parent: ClaimedRun,
    step: str,
    now: float,
    *,
    kind: StepKind = "workflow",
    key: str | None = None,
) -> str:
    """Save a step starting a child of ``parent``; return the child's id."""
    child = new_run(now, workflow=CHILD, idempotency_key=key or f"{parent.lease.run_id}:{step}")
    saved = await backend.save_step(parent.lease, child_step(step, now, kind=kind), now, child)
    assert saved is not None
    assert saved.child_run_id is not None
    return saved.child_run_id


async def suspended_parent(backend: Backend, now: float, queue: str = "parents") -> tuple[str, str]:
    """A parent (in ``queue``) suspended on one awaited child; returns (parent id, child id)."""
    parent_id = await enqueue_new(backend, now, queue=queue)
    parent = await claim_one(backend, now, queues=(queue,))
    child_id = await start_child(backend, parent, "charge", now)
    suspend = Finish(parent.lease, "suspend", waiting_on=(child_id,))
    assert await backend.finish([suspend], now) == [True]
    return parent_id, child_id


async def finish_child(backend: Backend, child_id: str, now: float, finish: Finish) -> None:
    """Claim the queued child (it must be the run handed out) and report ``finish``."""
    claimed = await claim_one(backend, now)
    assert claimed.lease.run_id == child_id
    done = Finish(claimed.lease, finish.status, output=finish.output, error=finish.error)
    assert await backend.finish([done], now) == [True]


async def test_only_the_lease_holder_saves_steps(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    stale = Lease(run_id, "not-the-token")
    assert await backend.save_step(stale, run_step("a", now), now) is None
    assert await backend.get_steps(run_id) == []
    assert await backend.save_step(claimed.lease, run_step("a", now), now) == run_step("a", now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now) == [True]
    assert await backend.save_step(claimed.lease, run_step("b", now), now) is None
    assert [step.name for step in await backend.get_steps(run_id)] == ["a"]


async def test_steps_come_back_exactly_in_start_order(backend: Backend, clock: ManualClock) -> None:
    now = clock.now() + 0.123456
    run_id = await enqueue_new(backend, now)
    lease = (await claim_one(backend, now)).lease
    failed = StepRecord(
        name="z-fails",
        kind="run",
        status="failed",
        attempts=2,
        started_at=now + 1,
        error=error_json(),
        finished_at=now + 1.25,
    )
    sleeping = StepRecord(
        name="a-sleeps",
        kind="sleep",
        status="waiting",
        attempts=1,
        started_at=now + 2,
        wake_at=now + 3600.5,
    )
    done = run_step("m-done", now, output='{"total": 12.5, "items": ["é", "\\"q\\""]}')
    for step in (sleeping, failed, done):
        assert await backend.save_step(lease, step, now) == step
    assert await backend.get_steps(run_id) == [done, failed, sleeping]


async def test_saving_a_step_again_replaces_it(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    lease = (await claim_one(backend, now)).lease
    first = StepRecord(
        name="a",
        kind="run",
        status="failed",
        attempts=1,
        started_at=now,
        error=error_json(),
        finished_at=now,
    )
    second = StepRecord(
        name="a",
        kind="run",
        status="succeeded",
        attempts=2,
        started_at=now + 1,
        output="7",
        finished_at=now + 2,
    )
    await backend.save_step(lease, first, now)
    await backend.save_step(lease, second, now + 2)
    assert await backend.get_steps(run_id) == [second]


async def test_claim_says_whether_the_run_has_steps(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert not claimed.has_steps
    await backend.save_step(claimed.lease, run_step("a", now), now)
    await backend.release([claimed.lease], now)
    assert (await claim_one(backend, now)).has_steps


async def test_an_emitted_child_is_enqueued_once_and_linked(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now, queue="parents")
    parent = await claim_one(backend, now, queues=("parents",))
    child_id = await start_child(backend, parent, "notify", now, kind="emit", key="k1")
    steps = await backend.get_steps(parent_id)
    assert [(s.kind, s.status, s.child_run_id) for s in steps] == [("emit", "succeeded", child_id)]
    assert steps[0].output is not None
    assert json.loads(steps[0].output) == child_id
    child = await fetch(backend, child_id)
    assert (child.status, child.workflow, child.parent_run_id) == ("queued", CHILD, parent_id)
    # A replay that saves the step again with a new id and the same key finds the child.
    again = await start_child(backend, parent, "notify", now + 1, kind="emit", key="k1")
    assert again == child_id
    assert await backend.get_children(parent_id) == [child_id]
    assert await backend.get_children(child_id) == []
    assert (await fetch(backend, parent_id)).parent_run_id is None


async def test_a_suspended_run_holds_no_lease_and_keeps_its_attempt(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id, child_id = await suspended_parent(backend, now)
    parent = await fetch(backend, parent_id)
    assert (parent.status, parent.attempts) == ("suspended", 1)
    later = now + LEASE_SECONDS * 3
    assert await claimed_ids(backend, later, queues=("default", "parents")) == [child_id]
    # Nothing left to claim: the suspended parent is neither queued nor reaped.
    assert await claimed_ids(backend, later, queues=("default", "parents")) == []
    assert await status_of(backend, parent_id) == "suspended"


async def test_a_child_that_succeeds_wakes_its_parent_with_the_output(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id, child_id = await suspended_parent(backend, now)
    await finish_child(
        backend, child_id, now + 1, Finish(Lease("", ""), "succeeded", output='{"paid": 3}')
    )
    assert await status_of(backend, parent_id) == "queued"
    [step] = await backend.get_steps(parent_id)
    assert (step.status, step.output, step.finished_at) == ("succeeded", '{"paid": 3}', now + 1)
    resumed = await claim_one(backend, now + 2, queues=("parents",))
    assert (resumed.lease.run_id, resumed.attempt, resumed.has_steps) == (parent_id, 1, True)


async def test_a_child_failure_or_cancel_reaches_the_parent_step(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id, child_id = await suspended_parent(backend, now)
    failure = error_json("ValueError", "card declined")
    await finish_child(backend, child_id, now + 1, Finish(Lease("", ""), "failed", error=failure))
    [step] = await backend.get_steps(parent_id)
    assert (step.status, step.error) == ("failed", failure)
    assert await status_of(backend, parent_id) == "queued"

    other_parent, other_child = await suspended_parent(backend, now + 2, queue="others")
    assert await backend.cancel(other_child, "no stock", now + 3) == "canceled"
    [step] = await backend.get_steps(other_parent)
    assert step.status == "canceled"
    assert step.error is not None
    assert json.loads(step.error) == {
        "type": "RunCanceledError",
        "message": "no stock",
        "traceback": None,
    }
    assert await status_of(backend, other_parent) == "queued"


async def test_suspending_after_the_child_ended_requeues_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now)
    parent = await claim_one(backend, now)
    child_id = await start_child(backend, parent, "charge", now)
    await finish_child(backend, child_id, now + 1, Finish(Lease("", ""), "succeeded", output="1"))
    assert await status_of(backend, parent_id) == "running"  # a running parent is not woken
    suspend = Finish(parent.lease, "suspend", waiting_on=(child_id,))
    assert await backend.finish([suspend], now + 2) == [True]
    resumed = await claim_one(backend, now + 2)
    assert (resumed.lease.run_id, resumed.attempt) == (parent_id, 1)
    assert resumed.lease.token != parent.lease.token


async def test_a_timer_wakes_a_suspended_run_when_due(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "suspend", wake_at=now + 60)], now) == [True]
    assert await status_of(backend, run_id) == "suspended"
    early = await claim(backend, now + 30)
    assert early.runs == []
    assert early.next_wake_at == now + 60
    resumed = await claim_one(backend, now + 60)
    assert (resumed.lease.run_id, resumed.attempt) == (run_id, 1)


async def test_a_timer_already_due_requeues_at_once(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "suspend", wake_at=now)], now) == [True]
    assert (await claim_one(backend, now)).lease.run_id == run_id


async def test_a_child_wakes_a_parent_that_also_waits_on_a_timer(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now)
    parent = await claim_one(backend, now)
    child_id = await start_child(backend, parent, "charge", now)
    suspend = Finish(parent.lease, "suspend", wake_at=now + 600, waiting_on=(child_id,))
    assert await backend.finish([suspend], now) == [True]
    await finish_child(backend, child_id, now + 1, Finish(Lease("", ""), "succeeded", output="1"))
    resumed = await claim_one(backend, now + 2)
    assert resumed.lease.run_id == parent_id
    # The timer no longer fires: the run is not queued a second time.
    await backend.finish([Finish(resumed.lease, "succeeded", output="2")], now + 3)
    assert (await claim(backend, now + 700)).runs == []
    assert await status_of(backend, parent_id) == "succeeded"


async def test_a_suspend_with_a_cancel_request_ends_canceled(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.cancel(run_id, "stop", now) == "requested"
    assert await backend.finish([Finish(claimed.lease, "suspend", wake_at=now + 60)], now) == [True]
    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_reason) == ("canceled", "stop")


async def test_a_suspend_without_the_lease_changes_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await claim_one(backend, now)
    stale = Finish(Lease(run_id, "stale"), "suspend", wake_at=now + 60)
    assert await backend.finish([stale], now) == [False]
    assert await status_of(backend, run_id) == "running"


async def test_canceling_a_suspended_parent_cancels_awaited_children_down_the_tree(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now)
    parent = await claim_one(backend, now)
    child_id = await start_child(backend, parent, "charge", now)
    emitted_id = await start_child(backend, parent, "audit", now + 0.5, kind="emit")
    suspend = Finish(parent.lease, "suspend", waiting_on=(child_id,))
    assert await backend.finish([suspend], now) == [True]
    child = await claim_one(backend, now + 1)
    assert child.lease.run_id == child_id
    grandchild_id = await start_child(backend, child, "refund", now + 1)
    suspend = Finish(child.lease, "suspend", waiting_on=(grandchild_id,))
    assert await backend.finish([suspend], now + 1) == [True]

    assert await backend.cancel(parent_id, "order withdrawn", now + 2) == "canceled"
    assert await status_of(backend, child_id) == "canceled"
    assert await status_of(backend, grandchild_id) == "canceled"
    assert await status_of(backend, emitted_id) == "queued"  # emitted children run on
    assert await claimed_ids(backend, now + 3) == [emitted_id]


async def test_a_canceled_running_parent_cancels_its_children_when_it_ends(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now, queue="parents")
    parent = await claim_one(backend, now, queues=("parents",))
    child_id = await start_child(backend, parent, "charge", now)
    running_child = await claim_one(backend, now)
    assert await backend.cancel(parent_id, None, now + 1) == "requested"
    assert await status_of(backend, child_id) == "running"
    assert await backend.finish([Finish(parent.lease, "canceled")], now + 2) == [True]
    child = await fetch(backend, child_id)
    assert (child.status, child.cancel_requested) == ("running", True)
    renewed = await backend.renew([running_child.lease], LEASE_SECONDS, now + 3)
    assert renewed.cancel_requested == {child_id}


async def test_a_workflow_step_whose_child_already_ended_takes_its_outcome(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now, queue="parents")
    parent = await claim_one(backend, now, queues=("parents",))
    child_id = await start_child(backend, parent, "charge", now, key="charge-1")
    await finish_child(backend, child_id, now + 1, Finish(Lease("", ""), "succeeded", output="5"))
    # The parent saves the step again (a replay after losing its record of the outcome).
    again = await start_child(backend, parent, "charge", now + 2, key="charge-1")
    assert again == child_id
    [step] = await backend.get_steps(parent_id)
    assert (step.status, step.output, step.child_run_id) == ("succeeded", "5", child_id)


async def test_cancel_many_includes_suspended_runs(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    parent_id, child_id = await suspended_parent(backend, now)
    assert await backend.cancel_many(None, None, "sweep", 10, now + 1) == 2
    assert await status_of(backend, parent_id) == "canceled"
    assert await status_of(backend, child_id) == "canceled"


async def test_a_child_ending_after_its_parent_changes_no_parent_state(
    backend: Backend, clock: ManualClock
) -> None:
    # The parent's step may still record the child's outcome (it is what happened);
    # the parent's status and queues are what must not change.
    now = clock.now()
    parent_id = await enqueue_new(backend, now, queue="parents")
    parent = await claim_one(backend, now, queues=("parents",))
    child_id = await start_child(backend, parent, "charge", now)
    assert await backend.finish([Finish(parent.lease, "failed", error=error_json())], now) == [True]
    await finish_child(backend, child_id, now + 1, Finish(Lease("", ""), "succeeded", output="1"))
    assert await status_of(backend, parent_id) == "failed"
    assert await claimed_ids(backend, now + 2, queues=("parents",)) == []
