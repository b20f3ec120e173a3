"""Batches: runs stored with their batch, counted by every terminal transition, and one
callback enqueued with the last transition of a closed batch, exactly once."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.conformance.helpers import (
    HOOK_QUEUE,
    LEASE_SECONDS,
    QUEUE,
    RETRY,
    claim,
    claim_one,
    claimed_ids,
    error_json,
    fetch,
    hook,
    new_id,
    new_run,
    status_of,
)
from tests.conformance.test_hooks import PATHS
from workpool.backends.base import (
    MAX_FAILED_IDS,
    Backend,
    CompletionHook,
    Enqueued,
    Finish,
    FinishStatus,
    NewBatch,
    NewRun,
    StepRecord,
)
from workpool.clock import ManualClock
from workpool.errors import BatchClosedError, BatchNotFoundError

CONTEXT = '{"import": "contacts.csv"}'
SUMMARY = hook("summarize", context=CONTEXT)


def in_batch(batch_id: str, count: int, now: float, **fields: Any) -> list[NewRun]:
    """``count`` new runs of the batch, available at ``now``."""
    return [dataclasses.replace(new_run(now, **fields), batch_id=batch_id) for _ in range(count)]


async def start_batch(
    backend: Backend,
    now: float,
    count: int,
    *,
    callback: CompletionHook | None = SUMMARY,
    open: bool = False,
    **fields: Any,
) -> tuple[str, list[str]]:
    """Store a new batch of ``count`` runs; return its id and its runs' ids."""
    batch_id = new_id()
    runs = in_batch(batch_id, count, fields.pop("available_at", now), **fields)
    stored = await backend.enqueue(runs, now, batch=NewBatch(batch_id, callback, open))
    assert stored == [Enqueued(run.id, True) for run in runs]
    return batch_id, [run.id for run in runs]


async def end_each(backend: Backend, now: float, statuses: list[FinishStatus]) -> None:
    """Claim as many runs as ``statuses`` and finish them so, in claim order."""
    result = await claim(backend, now, limit=len(statuses))
    finishes = [
        Finish(run.lease, status, output="1" if status == "succeeded" else None, error=None)
        for run, status in zip(result.runs, statuses, strict=True)
    ]
    assert await backend.finish(finishes, now + 1) == [True] * len(statuses)


async def callback_input(backend: Backend, batch_id: str) -> dict[str, Any]:
    record = await fetch(backend, f"{batch_id}-complete")
    assert (record.workflow, record.queue, record.status) == ("summarize", HOOK_QUEUE, "queued")
    parsed: dict[str, Any] = json.loads(record.input)
    return parsed


async def test_the_last_run_to_end_enqueues_the_callback_with_the_counts(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, run_ids = await start_batch(backend, now, 4)

    claimed = (await claim(backend, now, limit=4)).runs
    outcomes = [
        Finish(claimed[2].lease, "failed", error=error_json()),
        Finish(claimed[0].lease, "succeeded", output="1"),
        Finish(claimed[1].lease, "failed", error=error_json()),
    ]
    assert await backend.finish(outcomes, now + 1) == [True] * 3
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.total, batch.succeeded, batch.failed, batch.canceled) == (4, 1, 2, 0)
    assert (batch.open, batch.completed_at, batch.callback_run_id) == (False, None, None)
    assert await backend.get_run(f"{batch_id}-complete") is None

    assert await backend.finish([Finish(claimed[3].lease, "canceled")], now + 2) == [True]

    summary = await callback_input(backend, batch_id)
    assert summary == {
        "batch_id": batch_id,
        "context": json.loads(CONTEXT),
        "total": 4,
        "succeeded": 1,
        "failed": 2,
        "canceled": 1,
        "failed_run_ids": [claimed[2].lease.run_id, claimed[1].lease.run_id],  # as they failed
    }
    assert list(summary) == [
        "batch_id",
        "context",
        "total",
        "succeeded",
        "failed",
        "canceled",
        "failed_run_ids",
    ]
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.completed_at, batch.callback_run_id) == (now + 2, f"{batch_id}-complete")
    assert (batch.created_at, batch.total) == (now, 4)
    assert sorted(run_ids) == sorted(run.lease.run_id for run in claimed)
    assert await claimed_ids(backend, now + 3, queues=[HOOK_QUEUE]) == [f"{batch_id}-complete"]


@pytest.mark.parametrize("path", list(PATHS))
async def test_every_terminal_transition_counts_in_the_batch(
    backend: Backend, clock: ManualClock, path: str
) -> None:
    ending, _, _ = PATHS[path]
    now = clock.now()
    batch_id, (run_id,) = await start_batch(backend, now, 1)

    ended_at = await ending(backend, run_id, now)

    status = await status_of(backend, run_id)
    summary = await callback_input(backend, batch_id)
    assert summary[status] == 1
    assert summary["succeeded"] + summary["failed"] + summary["canceled"] == 1
    assert summary["failed_run_ids"] == ([run_id] if status == "failed" else [])
    assert (await fetch(backend, f"{batch_id}-complete")).created_at == ended_at


async def test_a_batch_whose_last_run_is_canceled_completes(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, run_ids = await start_batch(backend, now, 3, available_at=now + 60)
    for run_id in run_ids[:2]:
        assert await backend.cancel(run_id, "dropped", now + 1) == "canceled"
    assert await backend.get_run(f"{batch_id}-complete") is None

    assert await backend.cancel(run_ids[2], "dropped", now + 2) == "canceled"

    summary = await callback_input(backend, batch_id)
    assert (summary["canceled"], summary["succeeded"], summary["failed"]) == (3, 0, 0)


async def test_fail_unserved_and_a_parents_cancel_count_too(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id = new_id()
    unserved, parent = (*in_batch(batch_id, 1, now), *in_batch(batch_id, 1, now + 1))
    await backend.enqueue([unserved, parent], now + 1, batch=NewBatch(batch_id, SUMMARY))
    assert (
        await backend.fail_unserved(QUEUE, "send_email", now + 0.5, 9, error_json(), now + 2) == 1
    )
    # The parent runs and awaits a child; the child of a batch's run is not in the batch.
    held = await claim_one(backend, now + 3)
    assert (held.lease.run_id, held.batch_id) == (parent.id, batch_id)
    child = new_run(now + 3, queue="children")
    step = StepRecord(name="child", kind="workflow", status="waiting", attempts=0, started_at=now)
    assert await backend.save_step(held.lease, step, now + 3, child) is not None
    assert await backend.finish([Finish(held.lease, "suspend")], now + 4) == [True]
    assert (await fetch(backend, child.id)).batch_id is None

    assert await backend.cancel(parent.id, "stop", now + 5) == "canceled"

    assert await status_of(backend, child.id) == "canceled"
    summary = await callback_input(backend, batch_id)
    assert (summary["total"], summary["failed"], summary["canceled"]) == (2, 1, 1)
    assert summary["failed_run_ids"] == [unserved.id]


async def test_only_final_outcomes_count_not_retries(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    batch_id, (run_id,) = await start_batch(backend, now, 1, retry=RETRY)
    first = await claim_one(backend, now)
    retry = Finish(first.lease, "retry", error=error_json(), retry_at=now + 5)
    assert await backend.finish([retry], now + 1) == [True]
    await claim_one(backend, now + 5)  # its lease is lost: reaped and queued again
    assert (await claim(backend, now + 5 + LEASE_SECONDS, limit=0)).runs == []

    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.succeeded, batch.failed, batch.canceled) == (0, 0, 0)

    last = await claim_one(backend, now + 6 + LEASE_SECONDS)
    assert last.attempt == 3
    assert await backend.finish([Finish(last.lease, "succeeded", output="1")], now + 99) == [True]
    summary = await callback_input(backend, batch_id)
    assert (summary["succeeded"], summary["failed"]) == (1, 0)
    assert (await fetch(backend, run_id)).attempts == 3


async def test_the_callback_is_enqueued_once_whatever_follows(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 2)
    await end_each(backend, now, ["succeeded", "succeeded"])
    assert await claimed_ids(backend, now + 2, queues=[HOOK_QUEUE]) == [f"{batch_id}-complete"]

    assert await backend.close_batch(batch_id, now + 3) is not None
    assert await backend.cancel_batch(batch_id, None, 10, now + 3) == 0
    extra = in_batch(batch_id, 1, now + 3)
    with pytest.raises(BatchClosedError):
        await backend.enqueue(extra, now + 3)

    assert await claimed_ids(backend, now + 4, queues=[HOOK_QUEUE]) == []
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.total, batch.succeeded, batch.completed_at) == (2, 2, now + 1)


async def test_an_open_batch_takes_runs_until_closed(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 2, open=True)
    await end_each(backend, now, ["succeeded", "failed"])
    assert await backend.get_run(f"{batch_id}-complete") is None  # open: more may come

    added = in_batch(batch_id, 3, now + 2)
    assert await backend.enqueue(added, now + 2) == [Enqueued(run.id, True) for run in added]
    closed = await backend.close_batch(batch_id, now + 3)
    assert closed is not None
    assert (closed.open, closed.total, closed.completed_at) == (False, 5, None)
    with pytest.raises(BatchClosedError):
        await backend.enqueue(in_batch(batch_id, 1, now + 3), now + 3)

    await end_each(backend, now + 4, ["succeeded", "succeeded", "canceled"])
    summary = await callback_input(backend, batch_id)
    assert (summary["total"], summary["succeeded"], summary["failed"]) == (5, 3, 1)
    assert summary["canceled"] == 1


async def test_closing_a_batch_with_nothing_pending_completes_it_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 1, open=True)
    await end_each(backend, now, ["succeeded"])

    closed = await backend.close_batch(batch_id, now + 5)

    assert closed is not None
    assert (closed.completed_at, closed.callback_run_id) == (now + 5, f"{batch_id}-complete")
    assert (await callback_input(backend, batch_id))["succeeded"] == 1
    again = await backend.close_batch(batch_id, now + 6)
    assert again == closed


async def test_an_empty_closed_batch_completes_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 0)

    summary = await callback_input(backend, batch_id)
    assert summary == {
        "batch_id": batch_id,
        "context": json.loads(CONTEXT),
        "total": 0,
        "succeeded": 0,
        "failed": 0,
        "canceled": 0,
        "failed_run_ids": [],
    }
    silent, _ = await start_batch(backend, now, 0, callback=None)
    batch = await backend.get_batch(silent)
    assert batch is not None
    assert (batch.completed_at, batch.callback_run_id) == (now, None)


async def test_adding_to_a_closed_or_unknown_batch_stores_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 1)
    refused = in_batch(batch_id, 2, now)
    with pytest.raises(BatchClosedError, match="closed"):
        await backend.enqueue(refused, now)
    unknown = in_batch("no-such-batch", 1, now)
    with pytest.raises(BatchNotFoundError, match="no-such-batch"):
        await backend.enqueue(unknown, now)

    for run in (*refused, *unknown):
        assert await backend.get_run(run.id) is None
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert batch.total == 1
    assert len(await claimed_ids(backend, now)) == 1


async def test_a_batch_is_created_once_and_holds_runs_of_its_own_only(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, _ = await start_batch(backend, now, 1)
    with pytest.raises(ValueError, match="exists"):
        await backend.enqueue(in_batch(batch_id, 1, now), now, batch=NewBatch(batch_id))
    mixed = [*in_batch("one", 1, now), new_run(now)]
    with pytest.raises(ValueError, match="batch"):
        await backend.enqueue(mixed, now, batch=NewBatch("one"))
    with pytest.raises(ValueError, match="batch"):
        await backend.enqueue(in_batch("a:b", 1, now), now, batch=NewBatch("a:b"))
    assert await backend.get_batch("one") is None


async def test_runs_found_by_their_idempotency_key_are_not_added(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, (first,) = await start_batch(backend, now, 1, open=True, idempotency_key="row-1")
    again = in_batch(batch_id, 2, now + 1, idempotency_key="row-1")
    again[1] = dataclasses.replace(again[1], idempotency_key="row-2")

    stored = await backend.enqueue(again, now + 1)

    assert stored == [Enqueued(first, False), Enqueued(again[1].id, True)]
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert batch.total == 2


async def test_cancel_batch_cancels_what_has_not_ended(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, run_ids = await start_batch(backend, now, 4)
    other = new_run(now, queue="elsewhere")
    await backend.enqueue([other], now)
    done, held = (await claim(backend, now, limit=2)).runs
    await backend.finish([Finish(done.lease, "succeeded", output="1")], now)

    assert await backend.cancel_batch(batch_id, "enough", 10, now + 1) == 3  # one requested
    assert await backend.cancel_batch(batch_id, "enough", 10, now + 1) == 0

    statuses = {run_id: await status_of(backend, run_id) for run_id in run_ids}
    assert sorted(statuses.values()) == ["canceled", "canceled", "running", "succeeded"]
    assert (await fetch(backend, held.lease.run_id)).cancel_requested
    assert await status_of(backend, other.id) == "queued"
    assert await backend.get_run(f"{batch_id}-complete") is None
    await backend.finish([Finish(held.lease, "succeeded", output="1")], now + 2)  # too late
    summary = await callback_input(backend, batch_id)
    assert (summary["succeeded"], summary["canceled"]) == (2, 2)


async def test_cancel_batch_goes_in_bounded_steps(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    batch_id, run_ids = await start_batch(backend, now, 5, available_at=now + 60)

    assert await backend.cancel_batch(batch_id, None, 2, now) == 2
    statuses = [await status_of(backend, run_id) for run_id in sorted(run_ids)]
    assert statuses == ["canceled"] * 2 + ["scheduled"] * 3  # smallest ids first
    assert await backend.cancel_batch(batch_id, None, 2, now) == 2
    assert await backend.cancel_batch(batch_id, None, 2, now) == 1
    assert await backend.cancel_batch(batch_id, None, 2, now) == 0
    assert await backend.cancel_batch("no-such-batch", None, 2, now) is None


async def test_unknown_batches_read_as_none(backend: Backend, clock: ManualClock) -> None:
    assert await backend.get_batch("no-such-batch") is None
    assert await backend.close_batch("no-such-batch", clock.now()) is None


async def test_a_run_names_its_batch(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    batch_id, (run_id,) = await start_batch(backend, now, 1)
    alone = new_run(now)
    await backend.enqueue([alone], now)

    assert (await fetch(backend, run_id)).batch_id == batch_id
    assert (await fetch(backend, alone.id)).batch_id is None
    claimed = {run.lease.run_id: run.batch_id for run in (await claim(backend, now)).runs}
    assert claimed == {run_id: batch_id, alone.id: None}
    listed = await backend.list_runs("running", None, None, 10, None)
    assert {run.id: run.batch_id for run in listed.runs} == claimed


async def test_the_callback_keeps_the_first_failed_run_ids(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    count = MAX_FAILED_IDS + 2
    batch_id, run_ids = await start_batch(backend, now, count)

    failed = await backend.fail_unserved(QUEUE, "send_email", now + 1, count, error_json(), now)

    assert failed == count
    summary = await callback_input(backend, batch_id)
    assert summary["failed"] == count
    kept = summary["failed_run_ids"]
    assert len(kept) == len(set(kept)) == MAX_FAILED_IDS
    assert set(kept) < set(run_ids)


async def test_purge_deletes_completed_batches_after_the_retention(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    done, _ = await start_batch(backend, now, 1)
    await end_each(backend, now, ["failed"])
    pending, _ = await start_batch(backend, now, 1, available_at=now + 60)
    open_batch, _ = await start_batch(backend, now, 0, open=True)

    assert await backend.purge(now, 10, 0.0) == 0
    assert await backend.get_batch(done) is not None

    await backend.purge(now + 2, 10, 0.0)

    assert await backend.get_batch(done) is None
    assert await backend.get_batch(pending) is not None
    assert await backend.get_batch(open_batch) is not None


async def test_a_run_of_a_closed_batch_adds_to_it_while_it_runs(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, (run_id,) = await start_batch(backend, now, 1)
    _, (stranger,) = await start_batch(backend, now, 1, queue="elsewhere")
    held = await claim_one(backend, now)
    assert held.lease.run_id == run_id

    added = in_batch(batch_id, 2, now)
    stored = await backend.enqueue(added, now, added_by=run_id)

    assert stored == [Enqueued(run.id, True) for run in added]
    for adder in (None, stranger, "no-such-run"):
        refused = in_batch(batch_id, 1, now)
        with pytest.raises(BatchClosedError):
            await backend.enqueue(refused, now, added_by=adder)
        assert await backend.get_run(refused[0].id) is None
    assert await backend.finish([Finish(held.lease, "succeeded", output="1")], now + 1) == [True]
    with pytest.raises(BatchClosedError):  # it has ended: it adds no more
        await backend.enqueue(in_batch(batch_id, 1, now), now + 1, added_by=run_id)
    assert await backend.get_run(f"{batch_id}-complete") is None

    await end_each(backend, now + 2, ["succeeded", "failed"])
    summary = await callback_input(backend, batch_id)
    assert (summary["total"], summary["succeeded"], summary["failed"]) == (3, 2, 1)


async def test_a_rerun_is_not_in_the_batch_of_the_run_it_copies(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    batch_id, (run_id,) = await start_batch(backend, now, 1)
    await end_each(backend, now, ["failed"])

    rerun = await backend.rerun(run_id, new_id(), now + 2)

    assert rerun.run_id is not None
    assert (await fetch(backend, rerun.run_id)).batch_id is None
    await end_each(backend, now + 3, ["succeeded"])
    batch = await backend.get_batch(batch_id)
    assert batch is not None
    assert (batch.total, batch.failed, batch.succeeded) == (1, 1, 0)
