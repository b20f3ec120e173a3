"""Backend.enqueue and Backend.get_run: storing runs, batches and idempotency keys."""

from __future__ import annotations

import asyncio

import pytest

from tests.conformance.helpers import (
    QUEUE,
    RETRY,
    WORKFLOW,
    BackendFactory,
    claim_one,
    enqueue,
    fetch,
    new_id,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, Enqueued, Finish, RunRecord
from workpool.clock import ManualClock


async def test_run_available_now_or_earlier_is_stored_queued(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    due_now = await enqueue(backend, new_run(now), now)
    overdue = await enqueue(backend, new_run(now - 60), now)

    assert await status_of(backend, due_now) == "queued"
    assert await status_of(backend, overdue) == "queued"


async def test_run_available_later_is_stored_scheduled(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue(backend, new_run(now + 0.5), now)

    assert await status_of(backend, run_id) == "scheduled"


async def test_get_run_reads_back_every_field_exactly(backend: Backend, clock: ManualClock) -> None:
    clock.advance(0.25)
    now = clock.now()
    odd_input = '{"b":  [1, 2.50, "\\u00e9t\\u00e9", "über"],\n "a": {"nested": true}}'
    run = new_run(
        now + 120,
        workflow="reports.build",
        queue="slow",
        input=odd_input,
        retry=RETRY,
        idempotency_key="report-42",
    )
    await enqueue(backend, run, now)

    assert await backend.get_run(run.id) == RunRecord(
        id=run.id,
        workflow="reports.build",
        queue="slow",
        status="scheduled",
        attempts=0,
        input=odd_input,
        output=None,
        error=None,
        retry=RETRY,
        created_at=now,
        available_at=now + 120,
        started_at=None,
        finished_at=None,
        cancel_requested=False,
        cancel_reason=None,
        lease_losses=0,
        idempotency_key="report-42",
    )


async def test_run_without_retry_or_key_reads_back_none(
    backend: Backend, clock: ManualClock
) -> None:
    run_id = await enqueue(backend, new_run(clock.now()), clock.now())

    record = await fetch(backend, run_id)
    assert (record.retry, record.idempotency_key) == (None, None)


async def test_timestamps_keep_microsecond_precision(backend: Backend) -> None:
    now = 1_700_000_000.123456
    run_id = await enqueue(backend, new_run(now + 0.000123), now)

    record = await fetch(backend, run_id)
    assert record.created_at == pytest.approx(now, abs=1e-6)
    assert record.available_at == pytest.approx(now + 0.000123, abs=1e-6)


async def test_get_run_of_unknown_id_is_none(backend: Backend) -> None:
    assert await backend.get_run(new_id()) is None


async def test_batch_returns_results_in_input_order(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    runs = [new_run(now + offset) for offset in (5, -5, 0, 30, -1)]

    assert await backend.enqueue(runs, now) == [Enqueued(run.id, True) for run in runs]
    statuses = [await status_of(backend, run.id) for run in runs]
    assert statuses == ["scheduled", "queued", "queued", "scheduled", "queued"]


async def test_empty_batch_returns_empty_list(backend: Backend, clock: ManualClock) -> None:
    assert await backend.enqueue([], clock.now()) == []


async def test_second_enqueue_with_same_key_returns_first_id_and_stores_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    first = new_run(clock.now(), idempotency_key="order-7", input='{"n": 1}')
    await enqueue(backend, first, clock.now())
    clock.advance(10)
    second = new_run(clock.now(), idempotency_key="order-7", input='{"n": 2}')

    assert await backend.enqueue([second], clock.now()) == [Enqueued(first.id, False)]
    assert await backend.get_run(second.id) is None
    assert (await fetch(backend, first.id)).input == '{"n": 1}'
    assert (await claim_one(backend, clock.now())).lease.run_id == first.id


async def test_key_still_deduplicates_after_its_run_finished(
    backend: Backend, clock: ManualClock
) -> None:
    first = new_run(clock.now(), idempotency_key="order-8")
    await enqueue(backend, first, clock.now())
    claimed = await claim_one(backend, clock.now())
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], clock.now())
    clock.advance(60)
    again = new_run(clock.now(), idempotency_key="order-8")

    assert await backend.enqueue([again], clock.now()) == [Enqueued(first.id, False)]
    assert await backend.get_run(again.id) is None


async def test_key_still_deduplicates_just_before_ttl(backend: Backend, clock: ManualClock) -> None:
    first = new_run(clock.now(), idempotency_key="k", idempotency_ttl=100)
    await enqueue(backend, first, clock.now())
    clock.advance(99)
    again = new_run(clock.now(), idempotency_key="k", idempotency_ttl=100)

    assert await backend.enqueue([again], clock.now()) == [Enqueued(first.id, False)]


async def test_expired_key_is_replaced_by_a_new_run(backend: Backend, clock: ManualClock) -> None:
    first = new_run(clock.now(), idempotency_key="k", idempotency_ttl=100)
    await enqueue(backend, first, clock.now())
    clock.advance(101)
    second = new_run(clock.now(), idempotency_key="k", idempotency_ttl=100)

    assert await backend.enqueue([second], clock.now()) == [Enqueued(second.id, True)]
    assert await status_of(backend, second.id) == "queued"
    assert await status_of(backend, first.id) == "queued"

    clock.advance(50)
    third = new_run(clock.now(), idempotency_key="k", idempotency_ttl=100)
    assert await backend.enqueue([third], clock.now()) == [Enqueued(second.id, False)]
    assert await backend.get_run(third.id) is None


async def test_repeated_key_in_one_batch_resolves_to_first_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = new_run(now, idempotency_key="dup")
    other = new_run(now)
    repeat = new_run(now, idempotency_key="dup")

    assert await backend.enqueue([first, other, repeat], now) == [
        Enqueued(first.id, True),
        Enqueued(other.id, True),
        Enqueued(first.id, False),
    ]
    assert await backend.get_run(repeat.id) is None


async def test_same_key_in_different_workflows_is_independent(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    email = new_run(now, workflow="email", idempotency_key="user-1")
    sms = new_run(now, workflow="sms", idempotency_key="user-1")

    assert await backend.enqueue([email], now) == [Enqueued(email.id, True)]
    assert await backend.enqueue([sms], now) == [Enqueued(sms.id, True)]
    assert await status_of(backend, sms.id) == "queued"


async def test_enqueue_of_existing_id_changes_nothing(backend: Backend, clock: ManualClock) -> None:
    original = new_run(clock.now(), input='{"v": "original"}')
    await enqueue(backend, original, clock.now())
    before = await fetch(backend, original.id)
    clock.advance(5)
    clash = new_run(
        clock.now() + 100, run_id=original.id, queue="elsewhere", input='{"v": "clash"}'
    )

    assert await backend.enqueue([clash], clock.now()) == [Enqueued(original.id, False)]
    assert await backend.get_run(original.id) == before
    assert (await claim_one(backend, clock.now(), queues=[QUEUE])).lease.run_id == original.id


async def test_a_batch_with_a_stored_id_creates_only_the_others(
    backend: Backend, clock: ManualClock
) -> None:
    stored = new_run(clock.now(), input='{"v": "original"}')
    await enqueue(backend, stored, clock.now())
    before = await fetch(backend, stored.id)
    fresh = [new_run(clock.now()) for _ in range(3)]
    clash = new_run(clock.now(), run_id=stored.id, input='{"v": "clash"}')

    assert await backend.enqueue([fresh[0], clash, *fresh[1:]], clock.now()) == [
        Enqueued(fresh[0].id, True),
        Enqueued(stored.id, False),
        *(Enqueued(run.id, True) for run in fresh[1:]),
    ]
    assert await backend.get_run(stored.id) == before
    assert [await status_of(backend, run.id) for run in fresh] == ["queued"] * 3


async def test_an_id_repeated_in_one_batch_stores_its_first_run(
    backend: Backend, clock: ManualClock
) -> None:
    first = new_run(clock.now(), input='{"v": "first"}')
    again = new_run(clock.now() + 100, run_id=first.id, input='{"v": "again"}')
    other = new_run(clock.now())

    assert await backend.enqueue([first, other, again], clock.now()) == [
        Enqueued(first.id, True),
        Enqueued(other.id, True),
        Enqueued(first.id, False),
    ]
    assert (await fetch(backend, first.id)).input == first.input
    assert await status_of(backend, first.id) == "queued"
    claimed = [await claim_one(backend, clock.now()) for _ in range(2)]
    assert {run.lease.run_id for run in claimed} == {first.id, other.id}


async def test_concurrent_enqueues_with_same_key_create_exactly_one_run(
    backend_factory: BackendFactory, clock: ManualClock
) -> None:
    instances = [await backend_factory() for _ in range(5)]
    runs = [new_run(clock.now(), idempotency_key="race") for _ in instances]

    now = clock.now()
    pairs = zip(instances, runs, strict=True)
    results = await asyncio.gather(*(instance.enqueue([run], now) for instance, run in pairs))

    outcomes = [result[0] for result in results]
    assert sum(outcome.created for outcome in outcomes) == 1
    winner = next(outcome.run_id for outcome in outcomes if outcome.created)
    assert {outcome.run_id for outcome in outcomes} == {winner}
    stored = [run.id for run in runs if await instances[0].get_run(run.id) is not None]
    assert stored == [winner]


async def test_enqueued_runs_are_visible_to_other_instances(
    backend_factory: BackendFactory, clock: ManualClock
) -> None:
    writer = await backend_factory()
    reader = await backend_factory()
    run_id = await enqueue(writer, new_run(clock.now(), workflow=WORKFLOW), clock.now())

    assert (await fetch(reader, run_id)).status == "queued"
    assert (await claim_one(reader, clock.now())).lease.run_id == run_id


async def test_deduplicated_enqueue_does_not_extend_the_key(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    first = new_run(start, idempotency_key="k", idempotency_ttl=100)
    await enqueue(backend, first, start)
    repeat = new_run(start + 90, idempotency_key="k", idempotency_ttl=100)
    assert await backend.enqueue([repeat], start + 90) == [Enqueued(first.id, False)]

    late = new_run(start + 101, idempotency_key="k", idempotency_ttl=100)

    assert await backend.enqueue([late], start + 101) == [Enqueued(late.id, True)]


async def test_key_deduplicates_across_queues_of_one_workflow(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = new_run(now, queue="a", idempotency_key="same")
    await enqueue(backend, first, now)
    other_queue = new_run(now, queue="b", idempotency_key="same")

    assert await backend.enqueue([other_queue], now) == [Enqueued(first.id, False)]
    assert await backend.get_run(other_queue.id) is None
