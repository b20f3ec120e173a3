"""Leases: renew, reaping expired leases in claim, max_lease_losses and release."""

from __future__ import annotations

import json

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    claim_one,
    enqueue,
    fetch,
    new_id,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Finish, Lease, RenewResult
from workpool.clock import ManualClock

HELD = RenewResult(lost=frozenset(), cancel_requested=frozenset())


async def test_renew_extends_the_lease_past_its_first_expiry(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    assert await backend.renew([claimed.lease], LEASE_SECONDS, start + 20) == HELD

    at_first_expiry = await claim(backend, start + LEASE_SECONDS + 5)
    assert at_first_expiry.runs == []
    assert at_first_expiry.next_wake_at == start + 20 + LEASE_SECONDS
    record = await fetch(backend, run_id)
    assert (record.status, record.attempts, record.lease_losses) == ("running", 1, 0)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], start + 40) == [
        True
    ]


async def test_renewed_lease_expires_at_renewal_time_plus_lease_seconds(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    await backend.renew([claimed.lease], 100.0, start + 10)

    assert (await claim(backend, start + 109)).runs == []
    reclaimed = await claim_one(backend, start + 110)

    assert reclaimed.lease.run_id == run_id
    assert reclaimed.attempt == 2


async def test_expired_but_unreaped_lease_is_still_renewed(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)

    assert await backend.renew([claimed.lease], LEASE_SECONDS, start + 100) == HELD

    assert (await claim(backend, start + 110)).runs == []
    assert (await fetch(backend, run_id)).lease_losses == 0


async def test_stale_token_is_reported_lost_and_changes_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    before = await fetch(backend, run_id)
    stale = Lease(run_id, claimed.lease.token + "-stale")

    result = await backend.renew([stale], 1000.0, start + 10)

    assert result == RenewResult(lost=frozenset({run_id}), cancel_requested=frozenset())
    assert await backend.get_run(run_id) == before
    reclaimed = await claim_one(backend, start + LEASE_SECONDS)
    assert reclaimed.lease.run_id == run_id


async def test_renew_batch_reports_each_lease(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    held_id = await enqueue(backend, new_run(start), start)
    finished_id = await enqueue(backend, new_run(start + 1), start)
    scheduled_id = await enqueue(backend, new_run(start + 2), start)
    held = await claim_one(backend, start)
    finished = await claim_one(backend, start + 1)
    await backend.finish([Finish(finished.lease, "succeeded", output="2")], start + 1)
    unknown = Lease(new_id(), "token")
    never_claimed = Lease(scheduled_id, "token")

    result = await backend.renew(
        [held.lease, finished.lease, unknown, never_claimed], LEASE_SECONDS, start + 3
    )

    assert result.lost == frozenset({finished_id, unknown.run_id, scheduled_id})
    assert held_id not in result.lost
    assert result.cancel_requested == frozenset()
    assert await status_of(backend, scheduled_id) == "scheduled"


async def test_expired_lease_is_reaped_and_run_claimed_again(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)

    second = await claim_one(backend, start + LEASE_SECONDS)

    assert second.lease.run_id == run_id
    assert second.attempt == 2
    assert second.lease.token != first.lease.token
    record = await fetch(backend, run_id)
    assert (record.status, record.attempts, record.lease_losses) == ("running", 2, 1)
    assert record.started_at == start + LEASE_SECONDS


async def test_old_lease_cannot_write_after_reclaim(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    await claim_one(backend, start + LEASE_SECONDS)
    before = await fetch(backend, run_id)

    finished = await backend.finish([Finish(first.lease, "succeeded", output="1")], start + 31)
    renewed = await backend.renew([first.lease], LEASE_SECONDS, start + 31)

    assert finished == [False]
    assert renewed.lost == frozenset({run_id})
    assert await backend.get_run(run_id) == before


async def test_reaped_run_is_queued_when_limit_leaves_it(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await claim_one(backend, start)

    assert (await claim(backend, start + LEASE_SECONDS, limit=0)).runs == []

    record = await fetch(backend, run_id)
    assert (record.status, record.lease_losses, record.attempts) == ("queued", 1, 1)


async def test_run_fails_with_worker_lost_error_after_max_lease_losses(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await claim_one(backend, start, max_lease_losses=2)
    await claim_one(backend, start + 30, max_lease_losses=2)

    result = await claim(backend, start + 60, max_lease_losses=2)

    assert result.runs == []
    record = await fetch(backend, run_id)
    assert (record.status, record.lease_losses, record.attempts) == ("failed", 2, 2)
    assert record.finished_at == start + 60
    assert record.error is not None
    error = json.loads(record.error)
    assert (error["type"], error["traceback"]) == ("WorkerLostError", None)
    assert "2" in error["message"]
    assert (await claim(backend, start + 1000, max_lease_losses=2)).runs == []


async def test_one_allowed_loss_fails_at_first_expiry(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await claim_one(backend, start, max_lease_losses=1)

    assert (await claim(backend, start + LEASE_SECONDS, max_lease_losses=1)).runs == []

    assert await status_of(backend, run_id) == "failed"


async def test_reaping_a_cancel_requested_run_ends_it_canceled(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    await claim_one(backend, start)
    assert await backend.cancel(run_id, "stop it", start + 1) == "requested"

    assert (await claim(backend, start + LEASE_SECONDS)).runs == []

    record = await fetch(backend, run_id)
    assert (record.status, record.lease_losses, record.cancel_reason) == ("canceled", 1, "stop it")


async def test_release_makes_run_queued_and_claimable_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)

    await backend.release([first.lease], start + 5)

    record = await fetch(backend, run_id)
    assert (record.status, record.attempts, record.lease_losses) == ("queued", 1, 0)
    again = await claim_one(backend, start + 5)
    assert again.lease.run_id == run_id
    assert (await fetch(backend, run_id)).lease_losses == 0


async def test_a_handed_back_run_takes_the_same_attempt_again(
    backend: Backend, clock: ManualClock
) -> None:
    """A hand-back (graceful shutdown, or a run held ahead and never begun) is not an
    attempt: the next execution continues the same one, and counts as an execution."""
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)

    await backend.release([first.lease], start + 1)

    assert (await fetch(backend, run_id)).attempts == 1
    again = await claim_one(backend, start + 1)
    assert (again.lease.run_id, again.attempt, again.elapsed) == (run_id, 1, 0.0)
    assert again.lease.token != first.lease.token
    assert again.fence > first.fence
    record = await fetch(backend, run_id)
    assert (record.attempts, record.executions, record.lease_losses) == (1, 2, 0)
    # An attempt that ends in a retry is counted as usual.
    assert await backend.finish([Finish(again.lease, "retry", retry_at=start + 2)], start + 2)
    assert (await claim_one(backend, start + 2)).attempt == 2


async def test_a_run_released_with_its_attempt_used_takes_a_new_one(
    backend: Backend, clock: ManualClock
) -> None:
    """A handler that outlived its time limit when its worker stopped used its attempt."""
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)

    await backend.release([first.lease], start + 1, attempt_used=True)

    again = await claim_one(backend, start + 1)
    assert (again.lease.run_id, again.attempt) == (run_id, 2)
    record = await fetch(backend, run_id)
    assert (record.attempts, record.executions, record.lease_losses) == (2, 2, 0)


async def test_a_resumed_run_handed_back_keeps_its_attempt_time(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    assert await backend.finish([Finish(first.lease, "suspend", wake_at=start + 10)], start + 2)
    resumed = await claim_one(backend, start + 10)

    await backend.release([resumed.lease], start + 11)

    again = await claim_one(backend, start + 11)
    assert (again.lease.run_id, again.attempt, again.elapsed) == (run_id, 1, 2.0)


async def test_released_lease_cannot_write(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    await backend.release([first.lease], start + 5)

    assert await backend.finish([Finish(first.lease, "succeeded", output="1")], start + 6) == [
        False
    ]
    assert (await backend.renew([first.lease], LEASE_SECONDS, start + 6)).lost == {run_id}
    assert await status_of(backend, run_id) == "queued"


async def test_release_with_stale_lease_changes_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    first = await claim_one(backend, start)
    await claim_one(backend, start + LEASE_SECONDS)
    before = await fetch(backend, run_id)

    await backend.release([first.lease], start + 31)

    assert await backend.get_run(run_id) == before


async def test_release_of_cancel_requested_run_ends_it_canceled(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start), start)
    claimed = await claim_one(backend, start)
    assert await backend.cancel(run_id, "shutting down", start + 1) == "requested"

    await backend.release([claimed.lease], start + 2)

    record = await fetch(backend, run_id)
    assert (record.status, record.cancel_reason) == ("canceled", "shutting down")
    assert (await claim(backend, start + 2)).runs == []


async def test_release_batch_releases_every_lease(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    ids = [await enqueue(backend, new_run(start + index), start + 5) for index in range(3)]
    leases = [run.lease for run in (await claim(backend, start + 5)).runs]

    await backend.release(leases, start + 6)

    assert [await status_of(backend, run_id) for run_id in ids] == ["queued"] * 3
    assert len((await claim(backend, start + 6)).runs) == 3
