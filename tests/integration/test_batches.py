"""End to end: batches through the pool, a worker and the callback, on every backend."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.integration.conftest import fast_worker
from workpool import (
    BatchClosedError,
    BatchNotFoundError,
    ConfigurationError,
    NonRetriableError,
    OnBatchComplete,
    RunContext,
    Workpool,
)
from workpool.backends.base import Lease
from workpool.engine.batching import add_to_own_batch
from workpool.engine.environment import LeaseLost, StepEnvironment
from workpool.engine.fencing import LocalLease


def define(pool: Workpool) -> dict[str, Any]:
    """An import: one run per row, failing rows without an '@'; a summary callback."""
    summaries: list[OnBatchComplete] = []

    @pool.workflow(max_concurrency=None)
    async def import_row(ctx: RunContext, email: str) -> str:
        if "@" not in email:
            raise NonRetriableError(f"not an email: {email}")
        return email

    @pool.workflow()
    async def summarize(ctx: RunContext, done: OnBatchComplete) -> str:
        summaries.append(done)
        return f"{done.succeeded}/{done.total}"

    @pool.workflow(max_concurrency=None)
    async def import_file(ctx: RunContext, emails: list[str]) -> int:
        added = await ctx.add_to_batch("rows", [import_row.prepare(e) for e in emails])
        again = await ctx.add_to_batch("rows", [import_row.prepare(e) for e in emails])
        assert added == again  # a repeated add stores nothing twice
        return len(added)

    return {
        "row": import_row,
        "summarize": summarize,
        "file": import_file,
        "summaries": summaries,
    }


async def test_a_batch_runs_its_callback_once_with_the_counts(pool: Workpool) -> None:
    flows = define(pool)
    emails = ["a@example.com", "b@example.com", "not an email"]
    batch = await pool.batch(
        [flows["row"].prepare(email) for email in emails],
        on_complete=flows["summarize"],
        context={"file": "contacts.csv"},
    )
    assert [(await pool.get_run(run.id)).batch_id for run in batch.runs] == [batch.id] * 3
    pending = await batch.status()
    assert (pending.total, pending.pending, pending.open, pending.completed) == (3, 3, False, False)

    async with fast_worker(pool):
        status = await batch.wait(timeout=20)
        summary = pool.handle(status.callback_run_id or "")
        assert await summary.result(timeout=20) == "2/3"

    assert (status.succeeded, status.failed, status.canceled, status.pending) == (2, 1, 0, 0)
    (done,) = flows["summaries"]
    assert done.batch_id == batch.id
    assert done.context == {"file": "contacts.csv"}
    assert done.failed_run_ids == [batch.runs[2].id]
    assert status.callback_run_id == f"{batch.id}-complete"


async def test_a_run_adds_to_its_own_closed_batch(pool: Workpool) -> None:
    flows = define(pool)
    batch = await pool.batch(
        [flows["file"].prepare(["a@example.com", "bad"])], on_complete=flows["summarize"]
    )
    async with fast_worker(pool):
        status = await batch.wait(timeout=20)
        assert await pool.handle(f"{batch.id}-complete").result(timeout=20) == "2/3"
    assert (status.total, status.succeeded, status.failed) == (3, 2, 1)
    assert len(flows["summaries"]) == 1


async def test_an_open_batch_takes_runs_until_closed(pool: Workpool) -> None:
    flows = define(pool)
    batch = await pool.batch([], on_complete="summarize", open=True)
    more = await batch.add([flows["row"].prepare("a@example.com")])
    same = await pool.get_batch(batch.id)
    await same.add([flows["row"].prepare("b@example.com")])
    await pool.add_to_batch(batch.id, [flows["row"].prepare("c@example.com")])

    async with fast_worker(pool):
        assert await more[0].result(timeout=20) == "a@example.com"
        closed = await batch.close()
        assert not closed.open
        status = await batch.wait(timeout=20)
    assert (status.total, status.succeeded) == (3, 3)
    with pytest.raises(BatchClosedError, match="closed"):
        await batch.add([flows["row"].prepare("d@example.com")])


async def test_cancel_stops_what_has_not_ended(pool: Workpool) -> None:
    flows = define(pool)
    batch = await pool.batch(
        [flows["row"].prepare("a@example.com", run_after=3600) for _ in range(3)],
        on_complete=flows["summarize"],
    )
    assert await batch.cancel(reason="not today") == 3
    assert await batch.cancel() == 0
    status = await batch.status()
    assert (status.canceled, status.completed) == (3, True)
    assert (await pool.get_run(status.callback_run_id or "")).status == "queued"


async def test_unknown_batches_and_bad_batches_are_refused(pool: Workpool) -> None:
    flows = define(pool)
    with pytest.raises(BatchNotFoundError, match="no-such-batch"):
        await pool.get_batch("no-such-batch")
    with pytest.raises(BatchNotFoundError):
        await pool.add_to_batch("no-such-batch", [flows["row"].prepare("a@example.com")])
    with pytest.raises(ConfigurationError, match="on_complete"):
        await pool.batch([], context={"a": 1})
    with pytest.raises(ConfigurationError, match="on_complete"):
        await pool.batch([], on_complete=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="debounce"):
        await pool.batch([flows["row"].prepare("a@example.com", debounce=5)])
    assert (await pool.list_runs()).runs == []


def test_the_sync_twins_work(backend_url: str) -> None:
    pool = Workpool(backend_url, app="tests")
    flows = define(pool)
    batch = pool.batch_sync([flows["row"].prepare("a@example.com")], open=True)
    batch.add_sync([flows["row"].prepare("b@example.com")])
    assert pool.get_batch_sync(batch.id).status_sync().total == 2
    assert batch.close_sync().open is False
    assert batch.cancel_sync() == 2
    assert batch.wait_sync(timeout=5).canceled == 2
    pool.close()


async def test_a_run_past_its_local_lease_adds_nothing_to_its_batch(pool: Workpool) -> None:
    """A stalled worker (its lease not confirmed in time) writes nothing, as for a step."""
    flows = define(pool)
    batch = await pool.batch([flows["file"].prepare(["a@example.com"])])
    with ThreadPoolExecutor(1) as threads:
        env = StepEnvironment(
            pool.registry,
            pool.settings,
            await pool.backend(),
            Lease(run_id=batch.runs[0].id, token="a lease the worker no longer trusts"),
            threads,
            has_steps=False,
            local_lease=LocalLease(time.monotonic() - 1),
        )
        rows = [flows["row"].prepare("b@example.com")]
        with pytest.raises(LeaseLost, match="lease not confirmed in time"):
            await add_to_own_batch(env, batch.id, "rows", rows)
    assert (await batch.status()).total == 1
