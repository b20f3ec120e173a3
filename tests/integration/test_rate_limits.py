"""End to end: rate limits on a workflow (per key) and on a queue."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RateLimit, RunContext, Workpool


async def test_a_workflow_starts_no_faster_than_its_rate(pool: Workpool) -> None:
    @pool.workflow(max_concurrency=None, rate_limit=RateLimit(4, per=timedelta(seconds=1)))
    async def ping(ctx: RunContext, n: int) -> int:
        return n

    async with fast_worker(pool, concurrency=10):
        enqueued = pool.clock.now()
        handles = await pool.enqueue_many([ping.prepare(n) for n in range(10)])
        for handle in handles:
            await handle.result(timeout=20)
    runs = [await pool.get_run(handle.id) for handle in handles]
    # A token bucket: a burst of 4, then one start every 0.25 s. Each run waited for its
    # reserved start (a worker that stalls past several starts them together, on time).
    reserved = sorted(run.available_at.timestamp() - enqueued for run in runs)
    assert reserved == pytest.approx([0, 0, 0, 0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5], abs=0.05)
    assert all(run.started_at is not None and run.started_at >= run.available_at for run in runs)
    assert {run.attempts for run in runs} == {1}


async def test_keys_and_queues_have_their_own_limiters(pool: Workpool) -> None:
    pool.queue("mail", rate_limit=RateLimit(100, per=1.0))
    starts: dict[str, list[float]] = {"a": [], "b": []}

    @pool.workflow(
        queue="mail",
        max_concurrency=None,
        rate_limit=RateLimit(2, per=1.0, key=lambda order: order["customer"]),
    )
    async def notify(ctx: RunContext, order: dict[str, str]) -> None:
        starts[order["customer"]].append(time.monotonic())

    async with pool.worker(queues=["mail"], concurrency=10):
        enqueued = time.monotonic()
        handles = await pool.enqueue_many([notify.prepare({"customer": c}) for c in "ab" * 3])
        for handle in handles:
            await handle.result(timeout=20)
    # Each customer: 2 at once, the third reserved 0.5 s after the enqueue; the
    # customers do not wait for each other.
    for customer_starts in starts.values():
        assert len(customer_starts) == 3
        assert max(customer_starts) - enqueued >= 0.45
    assert abs(min(starts["a"]) - min(starts["b"])) < 0.3


def test_a_rate_limit_needs_a_whole_count_and_a_positive_period() -> None:
    for count, per, problem in (
        (0, 1.0, "count must be a whole number from 1"),
        (2.5, 1.0, "count must be a whole number from 1"),
        (3, 0.0, "a positive period"),
    ):
        with pytest.raises(ConfigurationError, match=problem):
            RateLimit(count, per=per)  # type: ignore[arg-type]


def test_a_keyed_queue_rate_limit_is_refused(pool: Workpool) -> None:
    with pytest.raises(ConfigurationError, match="no key"):
        pool.queue("mail", rate_limit=RateLimit(1, key=lambda value: value))
