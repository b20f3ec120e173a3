"""Claims by workflow, runs isolated after a lost lease, fencing tokens, live workers."""

from __future__ import annotations

import json

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    enqueue_new,
    error_json,
    fetch,
    hook,
    status_of,
)
from workpool.backends.base import Backend, Finish, WorkerRecord
from workpool.clock import ManualClock


async def test_a_claim_takes_only_the_workflows_it_serves(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    foreign = await enqueue_new(backend, now - 5, workflow="charge")
    mine = await enqueue_new(backend, now, workflow="resize")

    taken = await claim(backend, now, workflows=["resize", "thumbnail"])

    assert [run.lease.run_id for run in taken.runs] == [mine]
    record = await fetch(backend, foreign)
    assert (record.status, record.attempts) == ("queued", 0)
    later = await claim(backend, now + 1, workflows=["charge"])
    assert [run.lease.run_id for run in later.runs] == [foreign]


async def test_served_workflows_are_claimed_oldest_first_across_them(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await enqueue_new(backend, now, workflow="a", available_at=now - 3)
    second = await enqueue_new(backend, now, workflow="b", available_at=now - 2)
    third = await enqueue_new(backend, now, workflow="a", available_at=now - 1)
    await enqueue_new(backend, now, workflow="c", available_at=now - 9)

    taken = await claim(backend, now, workflows=["a", "b"], limit=2)
    rest = await claim(backend, now, workflows=["a", "b"], limit=5)

    assert [run.lease.run_id for run in taken.runs] == [first, second]
    assert [run.lease.run_id for run in rest.runs] == [third]


async def test_a_deep_backlog_nobody_serves_does_not_hide_a_served_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    for _ in range(50):
        await enqueue_new(backend, now - 10, workflow="unknown")
    mine = await enqueue_new(backend, now, workflow="known")

    taken = await claim(backend, now, workflows=["known"], limit=1)

    assert [run.lease.run_id for run in taken.runs] == [mine]


async def test_every_claim_of_a_run_has_a_larger_fence(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now)

    first = (await claim(backend, now)).runs[0]
    second = (await claim(backend, now + LEASE_SECONDS)).runs[0]

    assert (first.fence, second.fence) == (1, 2)
    assert second.lease.token != first.lease.token


async def test_a_run_that_lost_its_lease_is_claimed_alone(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    ids = [await enqueue_new(backend, now, available_at=now - 3 + i) for i in range(3)]
    await claim(backend, now, limit=3)
    expired = now + LEASE_SECONDS

    busy = await claim(backend, expired, limit=10, alone=False)

    assert busy.runs == []
    assert busy.isolated_since == expired
    assert [await status_of(backend, run_id) for run_id in ids] == ["queued"] * 3
    lone = await claim(backend, expired + 1, limit=10, alone=True)
    assert len(lone.runs) == 1
    assert lone.runs[0].isolated
    assert lone.runs[0].lease.run_id in ids


async def test_a_finish_clears_the_isolation(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await claim(backend, now)
    isolated = (await claim(backend, now + LEASE_SECONDS, alone=True)).runs[0]
    assert isolated.isolated
    retry = Finish(isolated.lease, "retry", error=error_json(), retry_at=now + LEASE_SECONDS)
    assert await backend.finish([retry], now + LEASE_SECONDS) == [True]

    again = await claim(backend, now + LEASE_SECONDS + 1, alone=False)

    assert [run.lease.run_id for run in again.runs] == [run_id]
    assert not again.runs[0].isolated
    assert again.isolated_since is None


async def test_a_released_run_is_not_isolated(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    held = (await claim(backend, now)).runs[0]
    await backend.release([held.lease], now + 1)

    again = await claim(backend, now + 2, alone=False)

    assert [run.lease.run_id for run in again.runs] == [run_id]


def _worker(worker_id: str, expires_at: float, **fields: object) -> WorkerRecord:
    values: dict[str, object] = {
        "app": "shop",
        "queues": ("default",),
        "workflows": ("charge",),
        "started_at": 1.0,
        "seen_at": 1.0,
    }
    values.update(fields)
    return WorkerRecord(id=worker_id, expires_at=expires_at, **values)  # type: ignore[arg-type]


async def test_heartbeats_list_the_live_workers_until_they_expire(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await backend.heartbeat(_worker("w1", now + 30, workflows=("charge", "refund")), now)
    await backend.heartbeat(_worker("w2", now + 10, app="mail", queues=("mail",)), now)

    live = await backend.list_workers(now + 5)

    assert [(worker.id, worker.seen_at) for worker in live] == [("w1", now), ("w2", now)]
    assert live[0].workflows == ("charge", "refund")
    assert live[0].serves("default", "refund")
    assert not live[1].serves("default", "charge")
    assert [worker.id for worker in await backend.list_workers(now + 10)] == ["w1"]
    stats = await backend.get_stats(now, now + 5)
    assert [worker.id for worker in stats.workers] == ["w1", "w2"]
    await backend.remove_worker("w1")
    assert await backend.list_workers(now + 5) == [
        _worker("w2", now + 10, app="mail", queues=("mail",), seen_at=now)
    ]


async def test_fail_unserved_fails_only_runs_waiting_since_before_the_cutoff(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    old = await enqueue_new(backend, now - 100, workflow="lost", hooks=[hook()])
    recent = await enqueue_new(backend, now, workflow="lost")
    other = await enqueue_new(backend, now - 100, workflow="kept")
    error = error_json("UnservedWorkflowError", "no worker defines it")

    failed = await backend.fail_unserved("default", "lost", now - 50, 10, error, now)

    assert failed == 1
    record = await fetch(backend, old)
    assert (record.status, json.loads(record.error or "{}")["type"]) == (
        "failed",
        "UnservedWorkflowError",
    )
    assert await status_of(backend, recent) == "queued"
    assert await status_of(backend, other) == "queued"
    assert await status_of(backend, f"{old}-0") == "queued"  # its hook fired


async def test_attempts_never_go_back_and_executions_count_every_start(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    seen = [(await fetch(backend, run_id)).attempts]
    first = (await claim(backend, now)).runs[0]
    seen.append((await fetch(backend, run_id)).attempts)
    await backend.finish([Finish(first.lease, "suspend", wake_at=now + 5)], now + 2)
    seen.append((await fetch(backend, run_id)).attempts)
    resumed = (await claim(backend, now + 5)).runs[0]
    seen.append((await fetch(backend, run_id)).attempts)
    await backend.finish([Finish(resumed.lease, "succeeded", output="1")], now + 8)

    record = await fetch(backend, run_id)
    assert seen == [0, 1, 1, 1]
    assert (first.attempt, resumed.attempt) == (1, 1)
    assert (record.attempts, record.executions, record.status) == (1, 2, "succeeded")
    assert record.run_time == 5.0  # 2 s before the wait, 3 s after it


async def test_a_suspended_run_canceled_keeps_the_attempt_it_ran(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    held = (await claim(backend, now)).runs[0]
    await backend.finish([Finish(held.lease, "suspend", wake_at=now + 60)], now + 1)

    assert await backend.cancel(run_id, "no longer needed", now + 2) == "canceled"

    record = await fetch(backend, run_id)
    assert (record.status, record.attempts, record.executions) == ("canceled", 1, 1)


async def test_a_run_waiting_at_its_gate_says_so(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    first = await enqueue_new(backend, now, max_concurrency=1)
    second = await enqueue_new(backend, now, max_concurrency=1)

    admitted, waiting = await fetch(backend, first), await fetch(backend, second)

    assert (admitted.max_concurrency, admitted.waiting_at_gate) == (1, False)
    assert (waiting.max_concurrency, waiting.waiting_at_gate) == (1, True)
