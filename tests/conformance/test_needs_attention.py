"""The needs_attention state: finish(attention), what it holds and frees, cancel, and
rerun_from_step (validated before its first write; the earlier steps kept)."""

from __future__ import annotations

import json

from tests.conformance.helpers import (
    claim_one,
    claimed_ids,
    enqueue_new,
    error_json,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, ClaimedRun, Finish, StepRecord
from workpool.clock import ManualClock

MISMATCH = error_json("StepMismatchError", "step 'charge' was called with other arguments")


def step(name: str, position: int | None, started_at: float) -> StepRecord:
    return StepRecord(
        name,
        "run",
        "succeeded",
        1,
        started_at,
        output="1",
        finished_at=started_at,
        position=position,
        args_hash=None if position is None else f"hash-{name}",
    )


async def stopped_run(backend: Backend, now: float, **fields: object) -> ClaimedRun:
    """A run with steps a, b, c (positions 0, 1, 2), stopped in needs_attention."""
    await enqueue_new(backend, now, **fields)
    claimed = await claim_one(backend, now)
    for index, name in enumerate("abc"):
        assert await backend.save_step(claimed.lease, step(name, index, now + index), now)
    assert await backend.finish([Finish(claimed.lease, "attention", error=MISMATCH)], now + 5)
    return claimed


async def test_a_stopped_run_keeps_its_steps_and_says_why(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    claimed = await stopped_run(backend, now)
    run = await fetch(backend, claimed.lease.run_id)
    assert (run.status, run.error, run.finished_at) == ("needs_attention", MISMATCH, None)
    steps = await backend.get_steps(claimed.lease.run_id)
    assert [(s.name, s.position, s.args_hash) for s in steps] == [
        ("a", 0, "hash-a"),
        ("b", 1, "hash-b"),
        ("c", 2, "hash-c"),
    ]
    assert await claimed_ids(backend, now + 3600) == []
    stats = await backend.get_stats(now, now + 5)
    assert [(p.needs_attention, p.running) for p in stats.activity] == [(1, 0)]


async def test_a_stopped_run_frees_its_gate_place(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    gated: dict[str, object] = {"max_concurrency": 1, "concurrency_key": "k"}
    claimed = await stopped_run(backend, now, **gated)
    waiting = await enqueue_new(backend, now + 1, **gated)
    assert await claimed_ids(backend, now + 6) == [waiting]
    assert await status_of(backend, claimed.lease.run_id) == "needs_attention"


async def test_a_stopped_run_can_be_canceled(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    claimed = await stopped_run(backend, now)
    assert await backend.cancel(claimed.lease.run_id, "gave up", now + 6) == "canceled"
    run = await fetch(backend, claimed.lease.run_id)
    assert (run.status, run.cancel_reason) == ("canceled", "gave up")


async def test_a_stopped_child_keeps_its_parent_waiting(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    parent_id = await enqueue_new(backend, now)
    parent = await claim_one(backend, now)
    child = new_run(now, workflow="child")
    waiting = StepRecord("child", "workflow", "waiting", 1, now, position=0)
    saved = await backend.save_step(parent.lease, waiting, now, child)
    assert saved is not None
    assert saved.child_run_id is not None
    await backend.finish([Finish(parent.lease, "suspend", waiting_on=(saved.child_run_id,))], now)
    claimed = await claim_one(backend, now)
    assert claimed.lease.run_id == saved.child_run_id
    await backend.finish([Finish(claimed.lease, "attention", error=MISMATCH)], now + 1)

    assert await status_of(backend, parent_id) == "suspended"
    assert await backend.cancel(parent_id, None, now + 2) == "canceled"
    assert await status_of(backend, saved.child_run_id) == "canceled"


async def test_rerun_from_a_step_forgets_it_and_the_later_ones(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    claimed = await stopped_run(backend, now)
    run_id = claimed.lease.run_id

    assert await backend.rerun_from_step(run_id, "b", "fixed the charge", now + 10) == "queued"

    assert [s.name for s in await backend.get_steps(run_id)] == ["a"]
    run = await fetch(backend, run_id)
    assert run.status == "queued"
    assert run.rerun_from is not None
    assert json.loads(run.rerun_from) == {
        "step": "b",
        "reason": "fixed the charge",
        "at": now + 10,
        "count": 1,
    }
    again = await claim_one(backend, now + 10)
    assert (again.lease.run_id, again.attempt, again.has_steps) == (run_id, 1, True)


async def test_rerun_from_a_step_without_positions_goes_by_start(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    for index, name in enumerate("xyz"):
        await backend.save_step(claimed.lease, step(name, None, now + index), now)
    await backend.finish([Finish(claimed.lease, "attention", error=MISMATCH)], now + 5)

    assert await backend.rerun_from_step(claimed.lease.run_id, "y", "", now + 6) == "queued"
    assert [s.name for s in await backend.get_steps(claimed.lease.run_id)] == ["x"]


async def test_rerun_from_a_step_refuses_without_writing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    claimed = await stopped_run(backend, now)
    run_id = claimed.lease.run_id
    active = await enqueue_new(backend, now)

    assert await backend.rerun_from_step(run_id, "nope", "r", now) == "no_step"
    assert await backend.rerun_from_step(active, "a", "r", now) == "not_stopped"
    assert await backend.rerun_from_step("no-such-run", "a", "r", now) == "not_found"
    assert len(await backend.get_steps(run_id)) == 3
    assert (await fetch(backend, run_id)).status == "needs_attention"


async def test_a_cancel_requested_run_ends_canceled_instead(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.cancel(run_id, "stop", now) == "requested"
    await backend.finish([Finish(claimed.lease, "attention", error=MISMATCH)], now + 1)
    assert await status_of(backend, run_id) == "canceled"
