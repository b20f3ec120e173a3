"""Backend.finish: succeeded, failed, canceled and retry; lease checks; terminal is final."""

from __future__ import annotations

from tests.conformance.helpers import (
    LEASE_SECONDS,
    RETRY,
    claim,
    claim_one,
    enqueue,
    error_json,
    fetch,
    new_id,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Finish, Lease
from workpool.clock import ManualClock

OUTPUT = '{"sent":  true, "ids": [3, 1, 2]}'


async def test_succeeded_stores_output_and_finished_at(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    assert await backend.finish([Finish(claimed.lease, "succeeded", output=OUTPUT)], start + 4) == [
        True
    ]

    record = await fetch(backend, run_id)
    assert (record.status, record.output, record.error) == ("succeeded", OUTPUT, None)
    assert (record.finished_at, record.attempts, record.started_at) == (start + 4, 1, start)


async def test_failed_stores_error(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    error = error_json("KeyError", "'missing'")

    assert await backend.finish([Finish(claimed.lease, "failed", error=error)], start + 2) == [True]

    record = await fetch(backend, run_id)
    assert (record.status, record.error, record.output) == ("failed", error, None)
    assert record.finished_at == start + 2


async def test_canceled_ends_canceled(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    assert await backend.finish([Finish(claimed.lease, "canceled")], start + 2) == [True]

    record = await fetch(backend, run_id)
    assert (record.status, record.finished_at) == ("canceled", start + 2)
    assert (await claim(backend, start + 100)).runs == []


async def test_retry_schedules_next_attempt_at_retry_at(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, retry=RETRY), start)
    first = await claim_one(backend, start)
    error = error_json("TimeoutError", "slow")

    finish = Finish(first.lease, "retry", error=error, retry_at=start + 60)
    assert await backend.finish([finish], start + 1) == [True]

    record = await fetch(backend, run_id)
    assert (record.status, record.available_at, record.error) == ("scheduled", start + 60, error)
    assert (record.finished_at, record.attempts) == (None, 1)
    early = await claim(backend, start + 59)
    assert (early.runs, early.next_wake_at) == ([], start + 60)

    second = await claim_one(backend, start + 60)
    assert (second.lease.run_id, second.attempt, second.retry) == (run_id, 2, RETRY)


async def test_retry_drops_the_lease(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    finish = Finish(first.lease, "retry", error=error_json(), retry_at=start + 60)
    await backend.finish([finish], start + 1)

    assert (await backend.renew([first.lease], LEASE_SECONDS, start + 2)).lost == {run_id}
    later = Finish(first.lease, "succeeded", output="1")
    assert await backend.finish([later], start + 2) == [False]
    assert await status_of(backend, run_id) == "scheduled"
    assert (await claim(backend, start + 2)).next_wake_at == start + 60


async def test_retry_at_or_before_now_is_queued_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    due = await enqueue(backend, new_run(start), start)
    overdue = await enqueue(backend, new_run(start), start)
    leases = {run.lease.run_id: run.lease for run in (await claim(backend, start)).runs}

    results = await backend.finish(
        [
            Finish(leases[due], "retry", error=error_json(), retry_at=start + 5),
            Finish(leases[overdue], "retry", error=error_json(), retry_at=start + 1),
        ],
        start + 5,
    )

    assert results == [True, True]
    assert [await status_of(backend, run_id) for run_id in (due, overdue)] == ["queued", "queued"]
    again = await claim(backend, start + 5)
    assert sorted((run.lease.run_id, run.attempt) for run in again.runs) == sorted(
        [(due, 2), (overdue, 2)]
    )


async def test_finish_with_stale_token_changes_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    before = await fetch(backend, run_id)
    wrong = Lease(run_id, claimed.lease.token + "x")

    results = await backend.finish(
        [
            Finish(wrong, "succeeded", output="1"),
            Finish(wrong, "failed", error=error_json()),
            Finish(wrong, "retry", error=error_json(), retry_at=start + 9),
            Finish(wrong, "canceled"),
        ],
        start + 1,
    )

    assert results == [False, False, False, False]
    assert await backend.get_run(run_id) == before
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="2")], start + 2) == [
        True
    ]


async def test_finish_of_unknown_or_unclaimed_run_is_refused(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    queued = await enqueue(backend, new_run(start), start)
    before = await fetch(backend, queued)

    results = await backend.finish(
        [
            Finish(Lease(new_id(), "token"), "succeeded", output="1"),
            Finish(Lease(queued, "token"), "failed", error=error_json()),
        ],
        start,
    )

    assert results == [False, False]
    assert await backend.get_run(queued) == before


async def test_terminal_state_is_final(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    await backend.finish([Finish(claimed.lease, "succeeded", output=OUTPUT)], start + 1)
    before = await fetch(backend, run_id)

    second = await backend.finish([Finish(claimed.lease, "failed", error=error_json())], start + 2)
    retried = Finish(claimed.lease, "retry", error=error_json(), retry_at=start)
    third = await backend.finish([retried], start + 2)
    canceled = await backend.cancel(run_id, "too late", start + 3)
    await backend.release([claimed.lease], start + 3)
    renewed = await backend.renew([claimed.lease], LEASE_SECONDS, start + 3)

    assert (second, third, canceled) == ([False], [False], "finished")
    assert renewed.lost == {run_id}
    assert (await claim(backend, start + 1000)).runs == []
    assert await backend.get_run(run_id) == before


async def test_batch_finish_returns_results_in_order(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    ids = [await enqueue(backend, new_run(start - 3 + index), start) for index in range(3)]
    leases = {run.lease.run_id: run.lease for run in (await claim(backend, start)).runs}

    results = await backend.finish(
        [
            Finish(leases[ids[0]], "succeeded", output="0"),
            Finish(Lease(ids[1], "not-the-token"), "succeeded", output="1"),
            Finish(leases[ids[2]], "failed", error=error_json()),
        ],
        start + 1,
    )

    assert results == [True, False, True]
    assert [await status_of(backend, run_id) for run_id in ids] == [
        "succeeded",
        "running",
        "failed",
    ]


async def test_two_finishes_of_one_lease_in_a_batch_apply_once(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    results = await backend.finish(
        [
            Finish(claimed.lease, "succeeded", output="1"),
            Finish(claimed.lease, "failed", error=error_json()),
        ],
        start + 1,
    )

    assert sorted(results) == [False, True]
    expected = "succeeded" if results[0] else "failed"
    assert await status_of(backend, run_id) == expected


async def test_error_of_last_failure_is_kept_after_success(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    error = error_json("ConnectionError", "reset")
    await backend.finish([Finish(first.lease, "retry", error=error, retry_at=start)], start)
    second = await claim_one(backend, start + 1)

    await backend.finish([Finish(second.lease, "succeeded", output=OUTPUT)], start + 2)

    record = await fetch(backend, run_id)
    assert (record.status, record.output, record.error, record.attempts) == (
        "succeeded",
        OUTPUT,
        error,
        2,
    )
