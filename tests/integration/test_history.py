"""Workpool.history: what ended period by period over an hour, a day and a week, in
total, per queue and per workflow, on every backend."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from tests.conformance.helpers import claim_one, enqueue_new, error_json
from workpool import Workpool
from workpool.backends.base import Finish, FinishStatus
from workpool.clock import ManualClock
from workpool.errors import ConfigurationError
from workpool.worker.housekeeping import Housekeeper

HOUR = 3600


async def end_run(pool: Workpool, at: float, status: FinishStatus, workflow: str) -> None:
    """A run of ``workflow`` on queue "mail" that ends ``status`` at ``at + 1``."""
    backend = await pool.backend()
    await enqueue_new(backend, at, workflow=workflow, queue="mail")
    claimed = await claim_one(backend, at, queues=("mail",))
    error = error_json() if status == "failed" else None
    output = "1" if status == "succeeded" else None
    await backend.finish([Finish(claimed.lease, status, output=output, error=error)], at + 1)


@pytest.fixture
def start(pool: Workpool, clock: ManualClock) -> float:
    """The start of an hour, and the pool's clock set to it."""
    pool.clock = clock
    clock.advance(HOUR - clock.now() % HOUR)
    return clock.now()


async def test_the_last_hour_minute_by_minute(
    pool: Workpool, clock: ManualClock, start: float
) -> None:
    await end_run(pool, start + 5, "succeeded", "send")
    await end_run(pool, start + 65, "failed", "send")
    await end_run(pool, start + 70, "succeeded", "bill")
    clock.advance(130)

    history = await pool.history(timedelta(hours=1))

    assert history.period == timedelta(minutes=1)
    assert len(history.total.periods) == 60
    assert history.total.periods[-1].start == datetime.fromtimestamp(start + 120, UTC)
    assert [p.completed for p in history.total.periods[-3:]] == [1, 2, 0]
    send = history.by_workflow["send"]
    assert (send.overall.completed, send.overall.failed, send.overall.failure_rate) == (2, 1, 0.5)
    assert send.overall.per_minute == pytest.approx(2 / 60)
    assert history.by_workflow["bill"].overall.failure_rate == 0.0
    assert list(history.by_queue) == ["mail"]


async def test_a_day_in_quarter_hours_and_a_week_in_hours(
    pool: Workpool, clock: ManualClock, start: float
) -> None:
    await end_run(pool, start + 5, "succeeded", "send")
    await end_run(pool, start + 1000, "failed", "send")
    clock.advance(3 * HOUR)

    day = await pool.history(timedelta(days=1), workflow="send")
    assert (day.period, len(day.total.periods)) == (timedelta(minutes=15), 96)
    assert [p.completed for p in day.total.periods if p.completed] == [1, 1]

    clock.advance(3 * 24 * HOUR)  # the minutes are gone once purged; the hours stay
    await (await pool.backend()).purge(0.0, 10, clock.now() - 24 * HOUR)
    week = await pool.history(timedelta(days=7))
    assert (week.period, len(week.total.periods)) == (timedelta(hours=1), 168)
    [hour] = [p for p in week.total.periods if p.completed]
    assert (hour.start, hour.succeeded, hour.failed) == (datetime.fromtimestamp(start, UTC), 1, 1)
    assert week.by_workflow["send"].overall.per_hour == pytest.approx(2 / 168)


async def test_filters_keep_their_pairs(pool: Workpool, start: float) -> None:
    await end_run(pool, start + 5, "failed", "send")
    await end_run(pool, start + 6, "succeeded", "bill")

    only = await pool.history(3600, workflow="bill")

    assert list(only.by_workflow) == ["bill"]
    assert (only.total.overall.completed, only.total.overall.failed) == (1, 0)
    none = await asyncio.to_thread(pool.history_sync, 600, queue="none")
    assert none.total.overall.completed == 0


@pytest.mark.parametrize(
    "span", [timedelta(days=8), timedelta(seconds=90), timedelta(0), -60, "1h"]
)
async def test_a_span_it_cannot_tell_is_refused(pool: Workpool, span: object) -> None:
    with pytest.raises((ValueError, ConfigurationError), match="span"):
        await pool.history(span)  # type: ignore[arg-type]


async def test_the_housekeeper_keeps_a_week_of_hours(
    pool: Workpool, clock: ManualClock, start: float
) -> None:
    await end_run(pool, start + 5, "succeeded", "send")
    backend = await pool.backend()
    keeper = Housekeeper(pool.settings, "worker-a")
    clock.advance(7 * 24 * HOUR - 60)
    await keeper.step(backend, clock.now())
    assert len(await backend.get_counters(0, clock.now(), HOUR)) == 1

    clock.advance(HOUR + 120)
    await keeper.step(backend, clock.now())
    assert await backend.get_counters(0, clock.now(), HOUR) == []
