"""Backend.cancel and Backend.cancel_many."""

from __future__ import annotations

import pytest

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    claim_one,
    enqueue,
    error_json,
    fetch,
    new_id,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Finish, FinishStatus, NewRun, RenewResult
from workpool.clock import ManualClock


async def test_cancel_queued_run_ends_it_at_once(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)

    assert await backend.cancel(run_id, "not needed", start + 1) == "canceled"

    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_reason, record.attempts) == ("canceled", "not needed", 0)
    assert record.cancel_requested is True
    assert record.finished_at == start + 1
    assert (await claim(backend, start + 2)).runs == []


async def test_cancel_scheduled_run_ends_it_and_it_never_runs(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start + 10), start)

    assert await backend.cancel(run_id, None, start + 1) == "canceled"

    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_reason) == ("canceled", None)
    later = await claim(backend, start + 100)
    assert (later.runs, later.next_wake_at) == ([], None)
    assert await status_of(backend, run_id) == "canceled"


async def test_cancel_running_run_requests_it(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    assert await backend.cancel(run_id, "user asked", start + 1) == "requested"

    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_requested, record.cancel_reason) == (
        "running",
        True,
        "user asked",
    )
    renewed = await backend.renew([claimed.lease], LEASE_SECONDS, start + 2)
    assert renewed == RenewResult(lost=frozenset(), cancel_requested=frozenset({run_id}))


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("failed", "canceled"),
        ("retry", "canceled"),
        ("canceled", "canceled"),
        ("succeeded", "succeeded"),
    ],
)
async def test_finish_after_cancel_request(
    backend: Backend, clock: ManualClock, status: FinishStatus, expected: str
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    await backend.cancel(run_id, "user asked", start + 1)
    output = "7" if status == "succeeded" else None
    error = error_json() if status in ("failed", "retry") else None
    finish = Finish(claimed.lease, status, output=output, error=error, retry_at=start + 3)

    assert await backend.finish([finish], start + 2) == [True]

    record = await fetch(backend, run_id)
    assert (record.status, record.finished_at) == (expected, start + 2)
    if expected == "canceled":
        assert record.cancel_reason == "user asked"
        assert record.error == error, "a failure turned into a cancel keeps its error"
    else:
        assert record.output == "7"
    assert (await claim(backend, start + 10)).runs == []


async def test_cancel_of_a_cancel_requested_run_is_requested_again(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await claim_one(backend, start)
    assert await backend.cancel(run_id, "first", start + 1) == "requested"

    assert await backend.cancel(run_id, "second", start + 2) == "requested"

    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_requested) == ("running", True)
    assert record.cancel_reason == "first", "the first reason given is kept"


async def test_cancel_unknown_run_is_not_found(backend: Backend, clock: ManualClock) -> None:
    assert await backend.cancel(new_id(), "x", clock.now()) == "not_found"


async def test_cancel_finished_run_changes_nothing(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    await backend.finish([Finish(claimed.lease, "succeeded", output="1")], start + 1)
    before = await fetch(backend, run_id)

    assert await backend.cancel(run_id, "late", start + 2) == "finished"

    assert await backend.get_run(run_id) == before


async def test_cancel_canceled_run_is_finished(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await backend.cancel(run_id, "first", start)

    assert await backend.cancel(run_id, "second", start + 1) == "finished"
    assert (await fetch(backend, run_id)).cancel_reason == "first"


async def _cancel_all(
    backend: Backend,
    before: float | None,
    workflow: str | None,
    limit: int,
    now: float,
    reason: str | None = "cleanup",
) -> list[int]:
    """Call cancel_many until it returns 0; the counts returned, the final 0 excluded."""
    counts: list[int] = []
    for _ in range(1000):
        count = await backend.cancel_many(before, workflow, reason, limit, now)
        if count == 0:
            return counts
        counts.append(count)
    pytest.fail(f"cancel_many never returned 0: {counts[:20]}")


async def test_cancel_many_by_workflow(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    runs = [
        new_run(start + (50 if index % 3 == 0 else 0), workflow="a" if index % 2 else "b")
        for index in range(10)
    ]
    await backend.enqueue(runs, start)

    counts = await _cancel_all(backend, None, "a", 2, start + 1)

    assert sum(counts) == 5
    assert all(1 <= count <= 2 for count in counts)
    assert counts[0] == 2
    for run in runs:
        record = await fetch(backend, run.id)
        if run.workflow == "a":
            assert (record.status, record.cancel_reason) == ("canceled", "cleanup")
        else:
            assert record.status in ("queued", "scheduled")
            assert record.cancel_reason is None


async def test_cancel_many_by_creation_time(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    old = [await enqueue(backend, new_run(start), start) for _ in range(3)]
    new = [await enqueue(backend, new_run(start + 10), start + 10) for _ in range(3)]

    counts = await _cancel_all(backend, start + 5, None, 10, start + 20)

    assert counts == [3]
    assert [await status_of(backend, run_id) for run_id in old] == ["canceled"] * 3
    assert [await status_of(backend, run_id) for run_id in new] == ["queued"] * 3


async def test_cancel_many_before_is_strict(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    earlier = await enqueue(backend, new_run(start), start)
    at_bound = await enqueue(backend, new_run(start + 1), start + 1)
    later = await enqueue(backend, new_run(start + 1.5), start + 1.5)

    assert await _cancel_all(backend, start + 1, None, 10, start + 2) == [1]

    statuses = [await status_of(backend, run_id) for run_id in (earlier, at_bound, later)]
    assert statuses == ["canceled", "queued", "queued"]


async def test_cancel_many_with_both_filters(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    target = await enqueue(backend, new_run(start, workflow="a"), start)
    other_workflow = await enqueue(backend, new_run(start, workflow="b"), start)
    too_new = await enqueue(backend, new_run(start + 10, workflow="a"), start + 10)

    assert await _cancel_all(backend, start + 5, "a", 10, start + 20) == [1]

    assert await status_of(backend, target) == "canceled"
    assert await status_of(backend, other_workflow) == "queued"
    assert await status_of(backend, too_new) == "queued"


async def test_cancel_many_requests_running_runs_once(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    running = await enqueue(backend, new_run(start - 1), start)
    queued = await enqueue(backend, new_run(start), start)
    scheduled = await enqueue(backend, new_run(start + 30), start)
    claimed = await claim_one(backend, start)
    assert claimed.lease.run_id == running

    counts = await _cancel_all(backend, None, None, 10, start + 1, reason="drain")

    assert sum(counts) == 3
    record = await fetch(backend, running)
    assert (record.status, record.cancel_requested, record.cancel_reason) == (
        "running",
        True,
        "drain",
    )
    assert await status_of(backend, queued) == "canceled"
    assert await status_of(backend, scheduled) == "canceled"
    renewed = await backend.renew([claimed.lease], LEASE_SECONDS, start + 2)
    assert renewed.cancel_requested == {running}


async def test_cancel_many_skips_finished_runs(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    done = await enqueue(backend, new_run(start - 1), start)
    claimed = await claim_one(backend, start)
    await backend.finish([Finish(claimed.lease, "succeeded", output="1")], start)
    live = await enqueue(backend, new_run(start), start)

    assert await _cancel_all(backend, None, None, 10, start + 1) == [1]

    assert await status_of(backend, done) == "succeeded"
    assert await status_of(backend, live) == "canceled"


async def test_cancel_many_finds_matches_among_many_others(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    runs: list[NewRun] = []
    for index in range(300):
        workflow = "needle" if index % 60 == 59 else "hay"
        runs.append(new_run(start + (index % 2) * 100, workflow=workflow))
    await backend.enqueue(runs, start)
    needles = [run.id for run in runs if run.workflow == "needle"]
    assert len(needles) == 5

    counts = await _cancel_all(backend, None, "needle", 2, start + 1)

    assert counts == [2, 2, 1]
    assert [await status_of(backend, run_id) for run_id in needles] == ["canceled"] * 5
    hay = [run.id for run in runs if run.workflow == "hay"]
    assert {await status_of(backend, run_id) for run_id in hay} == {"queued", "scheduled"}
    assert len((await claim(backend, start + 1, limit=1000)).runs) == 150


async def test_cancel_many_finds_old_runs_behind_many_new_ones(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    old = [new_run(start + 1000) for _ in range(4)] + [new_run(start - 1)]
    await backend.enqueue(old, start)
    new = [new_run(start + 10 + index % 7) for index in range(200)]
    await backend.enqueue(new, start + 10)

    counts = await _cancel_all(backend, start + 5, None, 2, start + 20)

    assert counts == [2, 2, 1]
    assert [await status_of(backend, run.id) for run in old] == ["canceled"] * 5
    assert len((await claim(backend, start + 20, limit=1000)).runs) == 200


async def test_cancel_many_without_a_workflow_fills_each_batch_across_workflows(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    runs = [
        await enqueue(backend, new_run(start, workflow=name), start)
        for name in ("a", "a", "b", "c", "c", "c")
    ]

    counts = await _cancel_all(backend, None, None, 4, start + 1)

    assert counts == [4, 2]
    assert [await status_of(backend, run_id) for run_id in runs] == ["canceled"] * 6
