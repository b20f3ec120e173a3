"""rerun_from_step of a finished run: a failed or canceled run executes again from a
saved step as the same run, with a fresh attempt budget; its hooks fire again when it
ends again (ids suffixed by the rerun count); a succeeded run, a batch's run and a
child run are refused without a write."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from tests.conformance.helpers import (
    HOOK_QUEUE,
    claim_one,
    claimed_ids,
    enqueue,
    enqueue_new,
    error_json,
    fetch,
    hook,
    new_run,
)
from workpool.backends.base import Backend, ClaimedRun, Finish, StepRecord
from workpool.clock import ManualClock

BOOM = error_json("ValueError", "charge failed")


def step(name: str, position: int, started_at: float, status: str = "succeeded") -> StepRecord:
    return StepRecord(
        name,
        "run",
        status,  # type: ignore[arg-type]
        1,
        started_at,
        output="1" if status == "succeeded" else None,
        error=BOOM if status == "failed" else None,
        finished_at=started_at,
        position=position,
    )


async def ended_run(
    backend: Backend, now: float, ending: str, deadline: float | None = None, **fields: Any
) -> ClaimedRun:
    """A run whose steps a, b succeeded and c failed, then ended ``ending``."""
    await enqueue(backend, dataclasses.replace(new_run(now, **fields), deadline=deadline), now)
    claimed = await claim_one(backend, now)
    for index, name in enumerate("ab"):
        assert await backend.save_step(claimed.lease, step(name, index, now + index), now)
    assert await backend.save_step(claimed.lease, step("c", 2, now + 2, "failed"), now)
    error = BOOM if ending == "failed" else None
    assert await backend.finish([Finish(claimed.lease, ending, error=error)], now + 5)  # type: ignore[arg-type]
    return claimed


async def test_a_failed_run_reruns_from_its_failing_step_with_a_fresh_budget(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = (await ended_run(backend, now, "failed")).lease.run_id

    assert await backend.rerun_from_step(run_id, "c", "fixed the bug", now + 10) == "queued"

    run = await fetch(backend, run_id)
    assert (run.status, run.error, run.finished_at) == ("queued", None, None)
    assert run.rerun_from is not None
    assert json.loads(run.rerun_from) == {
        "step": "c",
        "reason": "fixed the bug",
        "at": now + 10,
        "count": 1,
    }
    assert [s.name for s in await backend.get_steps(run_id)] == ["a", "b"]
    assert await backend.failure_groups() == []
    again = await claim_one(backend, now + 10)
    assert (again.lease.run_id, again.attempt) == (run_id, 1)
    assert await backend.finish([Finish(again.lease, "succeeded", output="2")], now + 11)
    assert await backend.purge(now + 10.5, 100, now, now) == 0
    run = await fetch(backend, run_id)
    assert (run.status, run.output, run.finished_at) == ("succeeded", "2", now + 11)


async def test_a_canceled_run_reruns_from_a_step(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = (await ended_run(backend, now, "canceled")).lease.run_id

    assert await backend.rerun_from_step(run_id, "b", "", now + 10) == "queued"

    run = await fetch(backend, run_id)
    assert (run.status, run.cancel_reason, run.cancel_requested) == ("queued", None, False)
    assert [s.name for s in await backend.get_steps(run_id)] == ["a"]
    assert await claimed_ids(backend, now + 10) == [run_id]


async def test_a_gated_rerun_waits_for_its_place(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    gated: dict[str, Any] = {"max_concurrency": 1, "concurrency_key": "k"}
    run_id = (await ended_run(backend, now, "failed", **gated)).lease.run_id
    holder = await enqueue_new(backend, now + 6, **gated)
    assert await claimed_ids(backend, now + 6) == [holder]

    assert await backend.rerun_from_step(run_id, "c", "", now + 7) == "queued"

    assert await claimed_ids(backend, now + 7) == []


async def test_each_ending_fires_the_hooks_under_a_new_id(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    hooks = [hook("notify"), hook("compensate", on_failure_only=True)]
    run_id = (await ended_run(backend, now, "failed", hooks=hooks)).lease.run_id
    first = await claimed_ids(backend, now + 6, queues=[HOOK_QUEUE], limit=10)
    assert sorted(first) == [f"{run_id}-0", f"{run_id}-1"]

    assert await backend.rerun_from_step(run_id, "c", "", now + 10) == "queued"
    again = await claim_one(backend, now + 10)
    assert await backend.finish([Finish(again.lease, "succeeded", output="2")], now + 11)

    second = await claimed_ids(backend, now + 12, queues=[HOOK_QUEUE], limit=10)
    assert second == [f"{run_id}-0-1"]
    hook_input = json.loads((await fetch(backend, second[0])).input)
    assert hook_input["result"] == {"status": "succeeded", "output": 2}


async def test_refusals_change_nothing(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.save_step(claimed.lease, step("a", 0, now), now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 1)

    assert await backend.rerun_from_step(run_id, "a", "", now + 2) == "succeeded"
    assert await backend.rerun_from_step(run_id, "nope", "", now + 2) == "succeeded"
    run = await fetch(backend, run_id)
    assert (run.status, run.rerun_from) == ("succeeded", None)
    assert len(await backend.get_steps(run_id)) == 1


async def test_a_run_already_retried_as_a_new_run_is_refused(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = (await ended_run(backend, now, "failed")).lease.run_id
    assert (await backend.rerun(run_id, "the-copy", now + 6)).status == "created"

    assert await backend.rerun_from_step(run_id, "c", "", now + 7) == "linked"
    assert (await fetch(backend, run_id)).status == "failed"
    assert len(await backend.get_steps(run_id)) == 3


async def test_a_rerun_past_its_deadline_fails_again(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = (await ended_run(backend, now, "failed", deadline=now + 8)).lease.run_id

    assert await backend.rerun_from_step(run_id, "c", "", now + 10) == "queued"

    assert await claimed_ids(backend, now + 10) == []
    run = await fetch(backend, run_id)
    assert run.status == "failed"
    assert run.error is not None
    assert json.loads(run.error)["type"] == "DeadlineExceededError"
