"""Backend support of run controls: a run's stored timeout, the execution time of its
current attempt, and the progress a handler reports (carried by renew and finish)."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import RETRY, claim_one, enqueue, error_json, fetch, new_run
from workpool.backends.base import Backend, Finish, Lease
from workpool.clock import ManualClock


async def test_a_runs_timeout_is_stored_claimed_and_read_back(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    limited = await enqueue(backend, replace(new_run(now), timeout=2.5), now)
    unlimited = await enqueue(backend, new_run(now + 1), now)

    first = await claim_one(backend, now + 2)
    second = await claim_one(backend, now + 2)

    assert (first.lease.run_id, first.timeout) == (limited, 2.5)
    assert (second.lease.run_id, second.timeout) == (unlimited, None)
    assert (await fetch(backend, limited)).timeout == 2.5
    assert (await fetch(backend, unlimited)).timeout is None


async def test_an_attempts_execution_time_adds_up_over_its_suspensions_only(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue(backend, new_run(now, retry=RETRY), now)
    first = await claim_one(backend, now)
    assert first.elapsed == 0.0

    # Ran 2 s, then waits 100 s on a timer: the wait is not execution time.
    suspend = Finish(first.lease, "suspend", wake_at=now + 102)
    assert await backend.finish([suspend], now + 2) == [True]
    resumed = await claim_one(backend, now + 102)
    assert (resumed.attempt, resumed.elapsed) == (1, 2.0)

    # Ran 3 s more, then was queued again at once: 5 s of this attempt so far.
    assert await backend.finish(
        [Finish(resumed.lease, "suspend", wake_at=now + 105)], now + 105
    ) == [True]
    again = await claim_one(backend, now + 105)
    assert (again.attempt, again.elapsed) == (1, 5.0)

    # A new attempt starts from nothing.
    retry = Finish(again.lease, "retry", error=error_json(), retry_at=now + 106)
    assert await backend.finish([retry], now + 106) == [True]
    next_attempt = await claim_one(backend, now + 106)
    assert (next_attempt.attempt, next_attempt.elapsed) == (2, 0.0)
    assert (await fetch(backend, run_id)).run_time == 6.0


async def test_renew_stores_the_latest_progress_of_held_runs_only(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now), now)
    await enqueue(backend, new_run(now), now)
    held = await claim_one(backend, now)
    other = await claim_one(backend, now)
    held_id, other_id = held.lease.run_id, other.lease.run_id
    assert (await fetch(backend, held_id)).progress is None

    stale = Lease(other_id, "not-the-token")
    result = await backend.renew(
        [held.lease, stale],
        30,
        now + 1,
        progress={held_id: '{"done": 3, "of": 10}', other_id: '"stale"'},
    )
    assert result.lost == frozenset({other_id})
    assert (await fetch(backend, held_id)).progress == '{"done": 3, "of": 10}'
    assert (await fetch(backend, other_id)).progress is None

    await backend.renew([held.lease, other.lease], 30, now + 2, progress={held_id: "7"})
    assert (await fetch(backend, held_id)).progress == "7"


async def test_finish_stores_the_progress_it_carries_and_a_retry_keeps_it(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue(backend, new_run(now, retry=RETRY), now)
    first = await claim_one(backend, now)
    retry = Finish(first.lease, "retry", error=error_json(), retry_at=now, progress='{"step": 1}')
    assert await backend.finish([retry], now + 1) == [True]
    assert (await fetch(backend, run_id)).progress == '{"step": 1}'

    second = await claim_one(backend, now + 1)
    assert await backend.finish([Finish(second.lease, "succeeded", output="1")], now + 2) == [True]
    assert (await fetch(backend, run_id)).progress == '{"step": 1}'

    third_id = await enqueue(backend, new_run(now + 3), now + 3)
    third = await claim_one(backend, now + 3)
    done = Finish(third.lease, "succeeded", output="2", progress='"all done"')
    assert await backend.finish([done], now + 4) == [True]
    assert (await fetch(backend, third_id)).progress == '"all done"'
