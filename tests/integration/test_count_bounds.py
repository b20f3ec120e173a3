"""Counts at and past the bound on each backend (issue 23, defect 7): the largest
accepted value is stored and read back exactly; a larger one is refused before
anything is stored, with a ConfigurationError instead of SQLite's OverflowError."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from tests.integration.conftest import fast_worker
from workpool import ConfigurationError, RateLimit, RetryPolicy, RunContext, Workpool
from workpool.validation import MAX_COUNT

TOO_LARGE = [MAX_COUNT + 1, 2**63, 99999999999999999999999]


@pytest.mark.parametrize("limit", [*TOO_LARGE, -1, math.nan, math.inf, True, 2.0])
async def test_a_queue_limit_out_of_range_is_refused_and_nothing_changes(
    pool: Workpool, limit: object
) -> None:
    await pool.set_max_parallelism("mail", 3)
    with pytest.raises(ConfigurationError, match=f"max_parallelism.*from 0 to {MAX_COUNT}"):
        await pool.set_max_parallelism("mail", limit)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_parallelism"):
        pool.queue("mail", max_parallelism=limit)  # type: ignore[arg-type]
    assert (await pool.get_queue("mail")).max_parallelism == 3


async def test_the_largest_queue_limit_reads_back_exactly(pool: Workpool) -> None:
    settings = await pool.set_max_parallelism("mail", MAX_COUNT)
    assert settings.max_parallelism == MAX_COUNT
    assert (await pool.get_queue("mail")).max_parallelism == MAX_COUNT


async def test_the_largest_counts_are_stored_exactly_and_runs_go_through(
    pool: Workpool,
) -> None:
    pool.queue("default", max_parallelism=MAX_COUNT, rate_limit=RateLimit(MAX_COUNT))

    @pool.workflow(
        max_concurrency=MAX_COUNT,
        rate_limit=RateLimit(MAX_COUNT, per=timedelta(days=1)),
        retries=RetryPolicy(max_attempts=MAX_COUNT, initial_backoff=0, base=1),
    )
    async def echo(ctx: RunContext, value: int) -> int:
        return value

    handle = await echo.run(MAX_COUNT)
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == MAX_COUNT
    [registered] = await pool.list_workflows()
    assert registered.max_concurrency == MAX_COUNT
    assert registered.retry is not None
    assert registered.retry["max_attempts"] == MAX_COUNT
    assert [limit["count"] for limit in registered.rate_limits or []] == [MAX_COUNT, MAX_COUNT]
    assert (await pool.get_queue("default")).max_parallelism == MAX_COUNT
