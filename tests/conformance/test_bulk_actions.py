"""Backend.act_on_runs: retry, cancel and delete the runs a filter selects, a page at a time,
and the failure groups (Backend.failure_groups) that failing and deleting keep."""

from __future__ import annotations

from tests.conformance.helpers import (
    claim_one,
    enqueue_new,
    error_json,
    fetch,
    new_id,
)
from workpool.backends.base import Backend, BulkAction, BulkPage, Finish, RunFilter
from workpool.clock import ManualClock

FAILED = RunFilter(statuses=("failed",))


async def fail(
    backend: Backend, now: float, error_type: str = "ValueError", **fields: object
) -> str:
    """A run of its own queue, enqueued, claimed and failed with ``error_type`` at ``now``."""
    queue = str(fields.pop("queue", f"q-{new_id()}"))
    run_id = await enqueue_new(backend, now, queue=queue, **fields)
    claimed = await claim_one(backend, now, queues=[queue])
    await backend.finish([Finish(claimed.lease, "failed", error=error_json(error_type))], now)
    return run_id


async def walk(
    backend: Backend, action: BulkAction, run_filter: RunFilter, now: float, limit: int = 2
) -> int:
    """Every page of ``action`` over ``run_filter``, ``limit`` runs each: how many changed."""
    changed, cursor = 0, None
    while True:
        page = await backend.act_on_runs(
            action, run_filter, cursor, limit, now, new_ids=[new_id() for _ in range(limit)]
        )
        changed, cursor = changed + page.changed, page.cursor
        if cursor is None:
            return changed


async def test_retry_reruns_the_failed_runs_of_a_filter_in_pages(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    matching = [await fail(backend, now + i, workflow="charge") for i in range(5)]
    other_type = await fail(backend, now, "KeyError", workflow="charge")
    other_workflow = await fail(backend, now, workflow="refund")
    run_filter = RunFilter(statuses=("failed",), workflow="charge", error_type="ValueError")

    assert await walk(backend, "count_retry", run_filter, now + 10) == 5
    assert await walk(backend, "retry", run_filter, now + 10) == 5

    for run_id in matching:
        retried = await fetch(backend, run_id)
        assert retried.retried_as is not None
        new = await fetch(backend, retried.retried_as)
        assert (new.status, new.retry_of, new.workflow) == ("queued", run_id, "charge")
    for run_id in (other_type, other_workflow):
        assert (await fetch(backend, run_id)).retried_as is None
    # Retried runs are not retried again.
    assert await walk(backend, "count_retry", run_filter, now + 10) == 0
    assert await walk(backend, "retry", run_filter, now + 10) == 0


async def test_a_page_reads_at_most_limit_candidates_and_ends_with_no_cursor(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    for _ in range(3):
        await fail(backend, now, queue="q")
    first = await backend.act_on_runs("count_retry", FAILED, None, 2, now)
    assert first.changed == 2
    assert first.cursor is not None
    rest = await backend.act_on_runs("count_retry", FAILED, first.cursor, 2, now)
    assert rest == BulkPage(changed=1, cursor=None)


async def test_the_time_range_and_queue_select_by_creation_and_queue(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    early = await fail(backend, now, queue="mail")
    middle = await fail(backend, now + 10, queue="mail")
    await fail(backend, now + 20, queue="mail")
    await fail(backend, now + 10, queue="sms")
    run_filter = RunFilter(
        statuses=("failed",), queue="mail", created_from=now, created_before=now + 20
    )

    assert await walk(backend, "retry", run_filter, now + 30) == 2

    assert (await fetch(backend, early)).retried_as is not None
    assert (await fetch(backend, middle)).retried_as is not None


async def test_cancel_ends_pending_runs_and_requests_running_ones(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    running = await enqueue_new(backend, now, workflow="report", queue="r")
    await claim_one(backend, now, queues=["r"])
    queued = await enqueue_new(backend, now, workflow="report", queue="r")
    scheduled = await enqueue_new(backend, now, workflow="report", queue="r", available_at=now + 60)
    other = await enqueue_new(backend, now, workflow="other", queue="r")
    run_filter = RunFilter(
        statuses=("scheduled", "queued", "running", "suspended"), workflow="report"
    )

    assert await walk(backend, "count_cancel", run_filter, now) == 3
    page = await backend.act_on_runs("cancel", run_filter, None, 10, now + 1, reason="bad deploy")

    assert page == BulkPage(changed=3, cursor=None)
    for run_id in (queued, scheduled):
        record = await fetch(backend, run_id)
        assert (record.status, record.cancel_reason) == ("canceled", "bad deploy")
    assert (await fetch(backend, running)).cancel_requested
    assert (await fetch(backend, running)).status == "running"
    assert (await fetch(backend, other)).status == "queued"
    assert await walk(backend, "count_cancel", run_filter, now + 1) == 0


async def test_delete_removes_terminal_runs_and_their_failure_counts(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    old = await fail(backend, now, workflow="sync")
    kept = await fail(backend, now + 5, workflow="sync")
    active = await enqueue_new(backend, now, workflow="sync", queue="s")
    run_filter = RunFilter(statuses=("failed", "queued"), workflow="sync", created_before=now + 1)

    assert await walk(backend, "count_delete", run_filter, now + 10) == 1
    assert await walk(backend, "delete", run_filter, now + 10) == 1

    assert await backend.get_run(old) is None
    assert (await fetch(backend, kept)).status == "failed"
    assert (await fetch(backend, active)).status == "queued"
    [group] = [g for g in await backend.failure_groups() if g.workflow == "sync"]
    assert (group.count, group.first_seen, group.last_seen) == (1, now, now + 5)
    assert group.example_run_id == kept


async def test_failure_groups_count_failures_by_workflow_and_error_type(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await fail(backend, now, workflow="charge")
    latest = await fail(backend, now + 7, workflow="charge")
    timeout = await fail(backend, now + 3, "TimeoutError", workflow="charge")
    refund = await fail(backend, now + 1, workflow="refund")

    groups = [
        (g.workflow, g.error_type, g.count, g.first_seen, g.last_seen, g.example_run_id)
        for g in await backend.failure_groups()
    ]

    assert groups == [
        ("charge", "TimeoutError", 1, now + 3, now + 3, timeout),
        ("charge", "ValueError", 2, now, now + 7, latest),
        ("refund", "ValueError", 1, now + 1, now + 1, refund),
    ]


async def test_purge_takes_deleted_failures_out_of_their_group(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await fail(backend, now, workflow="charge")
    await fail(backend, now + 1, workflow="charge")

    assert await backend.purge(now + 2, 10, now) == 2

    assert await backend.failure_groups() == []
