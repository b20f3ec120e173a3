"""Pausing, resuming and running now one run (``act_on_run``): what a paused run holds
and frees, where it goes back on resume, and the states each action refuses."""

from __future__ import annotations

import json
from dataclasses import replace

from tests.conformance.helpers import (
    RETRY,
    claim_one,
    claimed_ids,
    enqueue,
    enqueue_new,
    error_json,
    fetch,
    new_run,
    status_of,
)
from tests.conformance.test_rate_limits import limited
from workpool.backends.base import Backend, Finish
from workpool.clock import ManualClock

GATED: dict[str, object] = {"max_concurrency": 1, "concurrency_key": "k"}


async def test_a_paused_run_is_never_claimed_and_resumes_in_its_place(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await enqueue_new(backend, now)
    second = await enqueue_new(backend, now + 1)
    assert await backend.act_on_run("pause", first, now + 2) == "queued"
    assert await status_of(backend, first) == "paused"
    assert await backend.act_on_run("pause", first, now + 2) == "paused"  # no change
    assert await claimed_ids(backend, now + 3600) == [second]
    assert await backend.act_on_run("resume", first, now + 3601) == "paused"
    later = await enqueue_new(backend, now + 3602)
    # It keeps its available_at, so its rank: ahead of a run enqueued while it was paused.
    assert await claimed_ids(backend, now + 3603, limit=2) == [first, later]
    assert (await fetch(backend, first)).available_at == now


async def test_a_paused_scheduled_run_goes_back_to_its_time(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now, available_at=now + 100)
    assert await backend.act_on_run("pause", run_id, now) == "scheduled"
    assert await claimed_ids(backend, now + 200) == []
    assert await backend.act_on_run("resume", run_id, now + 50) == "paused"
    assert await status_of(backend, run_id) == "scheduled"
    assert await claimed_ids(backend, now + 99) == []
    assert await claimed_ids(backend, now + 100) == [run_id]


async def test_pausing_an_admitted_run_frees_its_gate_place(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    admitted = await enqueue_new(backend, now, **GATED)
    waiting = await enqueue_new(backend, now + 1, **GATED)
    assert await backend.act_on_run("pause", admitted, now + 2) == "queued"
    claimed = await claim_one(backend, now + 3)
    assert claimed.lease.run_id == waiting
    # Resumed, it waits at the full gate until the running run leaves.
    assert await backend.act_on_run("resume", admitted, now + 4) == "paused"
    assert await claimed_ids(backend, now + 5) == []
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 6)
    assert await claimed_ids(backend, now + 7) == [admitted]


async def test_a_paused_run_waiting_at_its_gate_leaves_it(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await enqueue_new(backend, now, **GATED)
    claimed = await claim_one(backend, now + 1)
    assert claimed.lease.run_id == first
    waiting = await enqueue_new(backend, now + 2, **GATED)
    behind = await enqueue_new(backend, now + 3, **GATED)
    assert await backend.act_on_run("pause", waiting, now + 4) == "queued"
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 5)
    assert await claimed_ids(backend, now + 6) == [behind]
    assert await status_of(backend, waiting) == "paused"


async def test_a_paused_run_drops_its_rate_reservation_and_reserves_again(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = await limited(backend, now, 3)  # two start now, the third is reserved at now + 5
    assert await backend.act_on_run("pause", ids[2], now + 1) == "scheduled"
    assert sorted(await claimed_ids(backend, now + 20, limit=3)) == sorted(ids[:2])
    assert await backend.act_on_run("resume", ids[2], now + 20) == "paused"
    # Its reserved start passed: resumed, it reserves again (the limiter has room now).
    assert await claimed_ids(backend, now + 20) == [ids[2]]


async def test_a_paused_run_can_be_canceled(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await backend.act_on_run("pause", run_id, now)
    assert await backend.cancel(run_id, "not needed", now + 1) == "canceled"
    run = await fetch(backend, run_id)
    assert (run.status, run.cancel_reason) == ("canceled", "not needed")
    assert await backend.act_on_run("resume", run_id, now + 2) == "canceled"
    assert await status_of(backend, run_id) == "canceled"


async def test_a_paused_run_is_listed_and_canceled_in_bulk(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await backend.act_on_run("pause", run_id, now)
    page = await backend.list_runs("paused", None, None, 10, None)
    assert [run.id for run in page.runs] == [run_id]
    assert await backend.cancel_many(None, None, "all", 10, now + 1) == 1
    assert await status_of(backend, run_id) == "canceled"


async def test_a_paused_run_past_its_deadline_fails(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run = replace(new_run(now), deadline=now + 10)
    await enqueue(backend, run, now)
    await backend.act_on_run("pause", run.id, now + 1)
    assert await claimed_ids(backend, now + 11) == []
    record = await fetch(backend, run.id)
    assert record.status == "failed"
    assert "while paused" in json.loads(record.error or "{}")["message"]


async def test_running_and_finished_runs_are_not_paused(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    run_id = claimed.lease.run_id
    assert await backend.act_on_run("pause", run_id, now + 1) == "running"
    assert await backend.act_on_run("run_now", run_id, now + 1) == "running"
    assert await backend.act_on_run("resume", run_id, now + 1) == "running"
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 2)
    assert await backend.act_on_run("pause", run_id, now + 3) == "succeeded"
    assert await status_of(backend, run_id) == "succeeded"
    assert await backend.act_on_run("pause", "no-such-run", now) is None


async def test_run_now_starts_a_scheduled_run_at_once(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now, available_at=now + 3600)
    assert await backend.act_on_run("run_now", run_id, now + 1) == "scheduled"
    assert (await fetch(backend, run_id)).available_at == now + 1
    assert await claimed_ids(backend, now + 1) == [run_id]


async def test_run_now_keeps_a_backing_off_runs_attempts(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now, retry=RETRY)
    claimed = await claim_one(backend, now)
    retry = Finish(claimed.lease, "retry", error=error_json(), retry_at=now + 600)
    assert await backend.finish([retry], now + 1)
    run_id = claimed.lease.run_id
    assert await backend.act_on_run("run_now", run_id, now + 2) == "scheduled"
    again = await claim_one(backend, now + 2)
    assert (again.lease.run_id, again.attempt) == (run_id, 2)


async def test_run_now_refuses_a_queued_or_paused_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    assert await backend.act_on_run("run_now", run_id, now + 1) == "queued"
    assert (await fetch(backend, run_id)).available_at == now
    await backend.act_on_run("pause", run_id, now + 1)
    assert await backend.act_on_run("run_now", run_id, now + 2) == "paused"
    assert await status_of(backend, run_id) == "paused"


async def test_paused_runs_are_counted_apart_in_stats(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    paused, queued = await enqueue_new(backend, now), await enqueue_new(backend, now)
    await backend.act_on_run("pause", paused, now + 1)

    [pair] = (await backend.get_stats(now - 60, now + 60)).activity
    assert (pair.paused, pair.queued) == (1, 1), queued
    await backend.act_on_run("resume", paused, now + 2)
    [pair] = (await backend.get_stats(now - 60, now + 60)).activity
    assert (pair.paused, pair.queued) == (0, 2)
