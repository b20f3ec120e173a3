"""Backend.purge: finished runs leave no trace after their retention; nothing else goes."""

from __future__ import annotations

from tests.conformance.helpers import (
    claim_one,
    enqueue,
    enqueue_new,
    new_run,
)
from workpool.backends.base import Backend, Enqueued, Finish, StepRecord
from workpool.clock import ManualClock

DAY = 24 * 3600.0


async def finished_run(backend: Backend, now: float, **fields: object) -> str:
    """Enqueue, claim and succeed a run at ``now``; return its id."""
    run_id = await enqueue_new(backend, now, **fields)
    claimed = await claim_one(backend, now)
    assert claimed.lease.run_id == run_id
    step = StepRecord(name="s", kind="run", status="succeeded", attempts=1, started_at=now)
    assert await backend.save_step(claimed.lease, step, now) is not None
    await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    return run_id


async def test_purges_runs_finished_before_the_cutoff(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    old = [await finished_run(backend, now) for _ in range(3)]
    recent = await finished_run(backend, now + DAY)
    active = await enqueue_new(backend, now)  # queued since long ago: never purged

    assert await backend.purge(now + 1, 2, 0.0) == 2
    assert await backend.purge(now + 1, 2, 0.0) == 1
    assert await backend.purge(now + 1, 2, 0.0) == 0

    for run_id in old:
        assert await backend.get_run(run_id) is None
        assert await backend.get_steps(run_id) == []
    assert await backend.get_run(recent) is not None
    assert len(await backend.get_steps(recent)) == 1
    page = await backend.list_runs(None, None, None, 10, None)
    assert sorted(run.id for run in page.runs) == sorted([recent, active])


async def test_a_purged_runs_idempotency_key_is_free_again(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await finished_run(backend, now, idempotency_key="order-7")
    assert await backend.purge(now + 1, 10, 0.0) == 1

    again = new_run(now + 2, idempotency_key="order-7")
    assert await backend.enqueue([again], now + 2) == [Enqueued(again.id, True)]
    assert again.id != first


async def test_purge_keeps_the_counts_of_active_runs(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await finished_run(backend, now)
    await enqueue(backend, new_run(now + 60), now)  # scheduled
    assert await backend.purge(now + 1, 10, 0.0) == 1

    [activity] = (await backend.get_stats(now, now)).activity
    assert (activity.scheduled, activity.queued, activity.running) == (1, 0, 0)


async def test_purge_deletes_counters_of_old_minutes(backend: Backend, clock: ManualClock) -> None:
    now = clock.now() - clock.now() % 60
    await finished_run(backend, now)
    await finished_run(backend, now + 120)

    assert await backend.purge(now, 10, now + 60) == 0  # no run is old enough
    counters = (await backend.get_stats(now, now + 180)).counters
    assert [c.succeeded for c in counters] == [1]  # the first minute's counters are gone
