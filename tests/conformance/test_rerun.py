"""Backend.rerun: a failed or canceled run enqueued again as a new, linked run."""

from __future__ import annotations

from tests.conformance.helpers import (
    RETRY,
    claim_one,
    enqueue_new,
    error_json,
    fetch,
    new_id,
)
from workpool.backends.base import Backend, Finish, Rerun
from workpool.clock import ManualClock


async def failed_run(backend: Backend, now: float, **fields: object) -> str:
    run_id = await enqueue_new(backend, now, **fields)
    claimed = await claim_one(backend, now)
    await backend.finish([Finish(claimed.lease, "failed", error=error_json())], now)
    return run_id


async def test_reruns_a_failed_run_as_a_linked_new_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    old_id = await failed_run(backend, now, retry=RETRY, input='{"n": 1}', timeout=3.5)
    new = new_id()

    assert await backend.rerun(old_id, new, now + 5) == Rerun("created", new)

    old, rerun = await fetch(backend, old_id), await fetch(backend, new)
    assert (old.status, old.retried_as, old.error) == ("failed", new, error_json())
    assert (rerun.status, rerun.retry_of, rerun.attempts, rerun.timeout) == (
        "queued",
        old_id,
        0,
        3.5,
    )
    assert (rerun.workflow, rerun.queue, rerun.input, rerun.retry) == (
        old.workflow,
        old.queue,
        '{"n": 1}',
        RETRY,
    )
    assert (rerun.created_at, rerun.available_at, rerun.idempotency_key) == (now + 5, now + 5, None)
    assert (await claim_one(backend, now + 5)).lease.run_id == new


async def test_a_second_rerun_returns_the_first(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    old_id = await failed_run(backend, now)
    first = new_id()
    await backend.rerun(old_id, first, now)

    assert await backend.rerun(old_id, new_id(), now) == Rerun("exists", first)


async def test_reruns_a_canceled_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await backend.cancel(run_id, "oops", now)
    new = new_id()

    assert await backend.rerun(run_id, new, now) == Rerun("created", new)
    assert (await fetch(backend, new)).status == "queued"


async def test_refuses_what_cannot_be_rerun(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    active = await enqueue_new(backend, now)
    done = await enqueue_new(backend, now, available_at=now - 1)
    claimed = await claim_one(backend, now)
    assert claimed.lease.run_id == done
    await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)

    assert await backend.rerun(active, new_id(), now) == Rerun("not_finished")
    assert await backend.rerun(done, new_id(), now) == Rerun("succeeded")
    assert await backend.rerun("no-such-run", new_id(), now) == Rerun("not_found")
    page = await backend.list_runs(None, None, None, 10, None)
    assert len(page.runs) == 2


async def test_a_rerun_keeps_its_concurrency_gate(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    old_id = await failed_run(backend, now, max_concurrency=1, available_at=now - 1)
    await enqueue_new(backend, now, max_concurrency=1)
    holder = await claim_one(backend, now)  # holds the gate's one place
    new = new_id()
    await backend.rerun(old_id, new, now)

    assert (await fetch(backend, new)).status == "queued"
    assert (await backend.get_stats(now, now)).oldest_claimable == {}  # waits at the gate
    await backend.finish([Finish(holder.lease, "succeeded", output="1")], now + 1)
    assert (await claim_one(backend, now + 1)).lease.run_id == new
