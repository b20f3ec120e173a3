"""Priorities at the API edge: the range, the types accepted, and the rank offsets."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from workpool import ConfigurationError, RunContext, Workpool
from workpool.builder import STRICT_STEP, build_new_run, prepare_run, rank_offset
from workpool.definitions import RunOptions
from workpool.validation import MAX_PRIORITY, MIN_PRIORITY

BAD_PRIORITIES: list[Any] = [101, -101, 10**20, True, False, 1.0, "5", None]


@pytest.fixture
def pool(tmp_path: Path) -> Workpool:
    return Workpool(f"sqlite:///{tmp_path}/p.db")


def test_the_range_is_minus_100_to_100() -> None:
    assert (MIN_PRIORITY, MAX_PRIORITY) == (-100, 100)


@pytest.mark.parametrize("value", [value for value in BAD_PRIORITIES if value is not None])
def test_a_workflow_priority_outside_the_range_or_not_an_int_is_refused(
    pool: Workpool, value: Any
) -> None:
    with pytest.raises(ConfigurationError, match=r"priority must be a whole number from -100"):

        @pool.workflow(priority=value)
        async def job(ctx: RunContext, n: int) -> None: ...


@pytest.mark.parametrize("value", [value for value in BAD_PRIORITIES if value is not None])
def test_a_run_priority_outside_the_range_or_not_an_int_is_refused(
    pool: Workpool, value: Any
) -> None:
    @pool.workflow()
    async def job(ctx: RunContext, n: int) -> None: ...

    with pytest.raises(ConfigurationError, match=r"from -100 to 100 .*got"):
        job.prepare(1, priority=value)
    with pytest.raises(ConfigurationError, match=r"from -100 to 100"):
        RunOptions(priority=value)


def test_the_run_priority_wins_over_the_workflows(pool: Workpool) -> None:
    @pool.workflow(priority=7)
    async def job(ctx: RunContext, n: int) -> None: ...

    @pool.workflow()
    async def plain(ctx: RunContext, n: int) -> None: ...

    def built(prepared: Any) -> tuple[int, float]:
        run = build_new_run(pool.registry, pool.settings, prepared, 1000.0)
        return run.priority, run.rank_offset

    assert built(job.prepare(1)) == (7, 7 * STRICT_STEP)
    assert built(job.prepare(1, priority=-2)) == (-2, -2 * STRICT_STEP)
    assert built(job.prepare(1, priority=0)) == (0, 0.0)
    assert built(plain.prepare(1)) == (0, 0.0)
    assert built(prepare_run(pool.registry, "job", 1)) == (7, 7 * STRICT_STEP)
    assert built(prepare_run(pool.registry, "elsewhere", 1, priority=3)) == (3, 3 * STRICT_STEP)


def test_a_queue_with_aging_gives_offsets_in_seconds_of_waiting(pool: Workpool) -> None:
    pool.queue("reports", priority_aging=timedelta(minutes=2))
    pool.queue("mail", priority_aging=30)

    @pool.workflow(queue="reports", priority=3)
    async def report(ctx: RunContext, n: int) -> None: ...

    def offset(**options: Any) -> float:
        prepared = report.prepare(1, **options)
        return build_new_run(pool.registry, pool.settings, prepared, 1000.0).rank_offset

    assert offset() == 360.0
    assert offset(priority=-1) == -120.0
    assert offset(queue="mail") == 90.0
    assert offset(queue="default") == 3 * STRICT_STEP


def test_completion_hooks_take_their_workflows_priority(pool: Workpool) -> None:
    pool.queue("hooks", priority_aging=10)

    @pool.workflow(queue="hooks", priority=-4)
    async def notify(ctx: RunContext, done: Any) -> None: ...

    @pool.workflow(on_failure=notify, priority=9)
    async def job(ctx: RunContext, n: int) -> None: ...

    run = build_new_run(pool.registry, pool.settings, job.prepare(1, on_complete=notify), 0.0)

    assert [(hook.priority, hook.rank_offset) for hook in run.hooks] == [(-4, -40.0)] * 2


@pytest.mark.parametrize("aging", [0, -5, timedelta(0), "60", True, float("nan"), 2.0**34])
def test_a_bad_priority_aging_is_refused(pool: Workpool, aging: Any) -> None:
    with pytest.raises(ConfigurationError, match="priority_aging"):
        pool.queue("reports", priority_aging=aging)


def test_rank_offsets_stay_within_what_backends_order_exactly() -> None:
    assert rank_offset(0, None) == 0.0
    assert rank_offset(MAX_PRIORITY, None) == 100 * STRICT_STEP
    assert rank_offset(MAX_PRIORITY, STRICT_STEP) == 100 * STRICT_STEP
    assert STRICT_STEP >= 200 * 365 * 86400  # two centuries of waiting per level
