"""Backend.get_counters: the counters summed per period (the dashboard's charts), from
per-minute counters kept for a day and per-hour counters kept for a week, both written
by the operation that makes a transition; purge bounds each."""

from __future__ import annotations

import pytest

from tests.conformance.helpers import claim_one, enqueue_new, error_json
from workpool.backends.base import Backend, Finish, FinishStatus, PairCounters, PeriodCounters
from workpool.clock import ManualClock

HOUR = 3600
DAY = 24 * HOUR
WEEK = 7 * DAY


def aligned(clock: ManualClock, period: int = 60) -> float:
    """Move the clock to the start of a period and return it."""
    clock.advance(period - clock.now() % period)
    return clock.now()


async def end_run(backend: Backend, at: float, status: FinishStatus, **where: str) -> None:
    """Enqueue a run, claim it and finish it ``status`` one second later."""
    await enqueue_new(backend, at, **where)
    claimed = await claim_one(backend, at, queues=(where.get("queue", "default"),))
    error = error_json() if status == "failed" else None
    output = "1" if status == "succeeded" else None
    await backend.finish([Finish(claimed.lease, status, output=output, error=error)], at + 1)


async def cancel_one(backend: Backend, at: float, **where: str) -> None:
    await backend.cancel(await enqueue_new(backend, at, **where), None, at)


async def test_each_minute_with_counts_comes_apart(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock)
    await end_run(backend, start + 10, "succeeded", workflow="send", queue="mail")
    await end_run(backend, start + 130, "failed", workflow="send", queue="mail")
    await end_run(backend, start + 135, "succeeded", workflow="send", queue="mail")

    minutes = await backend.get_counters(start, start + 170, 60)

    assert [minute.start for minute in minutes] == [start, start + 120]  # none in between
    first, third = minutes
    assert first == PeriodCounters(
        start,
        [PairCounters("mail", "send", 1, 1, first.counters[0].run_time, succeeded=1)],
    )
    [counters] = third.counters
    assert (counters.executions, counters.succeeded, counters.failed) == (2, 1, 1)
    assert abs(counters.run_time - 2.0) < 1e-6


async def test_only_the_minutes_asked_for(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock)
    for minute in range(3):
        await cancel_one(backend, start + 60 * minute + 5)

    later = await backend.get_counters(start + 61, start + 179, 60)

    assert [minute.start for minute in later] == [start + 60, start + 120]
    assert [minute.counters[0].canceled for minute in later] == [1, 1]
    assert await backend.get_counters(start + 180, start + 300, 60) == []


async def test_pairs_of_a_period_are_sorted(backend: Backend, clock: ManualClock) -> None:
    now = aligned(clock)
    for queue, workflow in (("money", "bill"), ("mail", "send"), ("mail", "bounce")):
        await cancel_one(backend, now, workflow=workflow, queue=queue)

    for period in (60, HOUR):
        [found] = await backend.get_counters(now, now, period)
        assert [(c.queue, c.workflow, c.canceled) for c in found.counters] == [
            ("mail", "bounce", 1),
            ("mail", "send", 1),
            ("money", "bill", 1),
        ]


async def test_minutes_add_up_into_longer_periods(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock, 900)
    for at in (start + 10, start + 200, start + 899, start + 900):
        await cancel_one(backend, at, workflow="send", queue="mail")
    await end_run(backend, start + 300, "failed", workflow="send", queue="mail")

    quarters = await backend.get_counters(start + 899, start + 901, 900)

    assert [(q.start, q.counters[0].canceled, q.counters[0].failed) for q in quarters] == [
        (start, 3, 1),
        (start + 900, 1, 0),
    ]
    assert quarters[0].counters[0].executions == 1


async def test_hours_count_what_their_minutes_count(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock, HOUR)
    await end_run(backend, start + 5, "succeeded", workflow="send", queue="mail")
    await end_run(backend, start + 1805, "failed", workflow="send", queue="mail")
    await cancel_one(backend, start + HOUR + 5, workflow="bill", queue="money")

    hours = await backend.get_counters(start, start + HOUR, HOUR)
    minutes = await backend.get_counters(start, start + HOUR, 60)

    assert [hour.start for hour in hours] == [start, start + HOUR]
    [sent] = hours[0].counters
    assert (sent.queue, sent.workflow, sent.executions, sent.timed) == ("mail", "send", 2, 2)
    assert (sent.succeeded, sent.failed, sent.canceled) == (1, 1, 0)
    assert abs(sent.run_time - 2.0) < 1e-6
    assert hours[1].counters == [PairCounters("money", "bill", canceled=1)]
    assert sum(c.failed + c.succeeded for m in minutes for c in m.counters) == 2


async def test_a_finish_batch_counts_each_pair_once_per_hour(
    backend: Backend, clock: ManualClock
) -> None:
    now = aligned(clock, HOUR) + 30
    leases = []
    for queue, workflow in (("mail", "send"), ("mail", "send"), ("money", "bill")):
        await enqueue_new(backend, now, workflow=workflow, queue=queue)
        leases.append((await claim_one(backend, now, queues=(queue,))).lease)

    await backend.finish([Finish(lease, "succeeded", output="1") for lease in leases], now + 1)

    [hour] = await backend.get_counters(now, now, HOUR)
    assert [(c.queue, c.workflow, c.succeeded) for c in hour.counters] == [
        ("mail", "send", 2),
        ("money", "bill", 1),
    ]


async def test_hours_outlive_the_minutes(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock, HOUR)
    await cancel_one(backend, start + 5)
    await cancel_one(backend, start + HOUR + 5)
    clock.advance(2 * DAY)
    now = clock.now()

    await backend.purge(0.0, 10, now - DAY, now - WEEK)

    assert await backend.get_counters(start, start + HOUR, 60) == []  # minutes: a day
    hours = await backend.get_counters(start, start + HOUR, HOUR)
    assert [(hour.start, hour.counters[0].canceled) for hour in hours] == [
        (start, 1),
        (start + HOUR, 1),
    ]


async def test_purge_deletes_the_hours_before_its_cutoff(
    backend: Backend, clock: ManualClock
) -> None:
    start = aligned(clock, HOUR)
    for hour in range(3):
        await cancel_one(backend, start + hour * HOUR + 5)

    await backend.purge(0.0, 10, 0.0, start + HOUR)

    hours = await backend.get_counters(start, start + 2 * HOUR, HOUR)
    assert [hour.start for hour in hours] == [start + HOUR, start + 2 * HOUR]
    assert len(await backend.get_counters(start, start + 2 * HOUR, 60)) == 3  # minutes kept


async def test_retention_bounds_the_rows_of_a_pair(backend: Backend, clock: ManualClock) -> None:
    """A pair busy every 20 minutes for 9 days, purged as the housekeeper purges (minutes
    before a day ago, hours before a week ago): at most 1441 minutes and 169 hours."""
    start = aligned(clock, HOUR)
    end = start + 9 * DAY
    for at in range(int(start), int(end), 1200):
        await cancel_one(backend, at + 7)
        await backend.purge(0.0, 10, at - DAY, at - WEEK)

    hours = await backend.get_counters(0, end, HOUR)
    minutes = await backend.get_counters(0, end, 60)
    assert 168 <= len(hours) <= 169
    assert hours[0].start >= end - WEEK - HOUR
    assert len(minutes) <= 1441 // 20 + 1
    assert minutes[0].start >= end - DAY - 1200


async def test_periods_of_whole_hours(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock, 6 * HOUR)
    for hour in (0, 2, 5, 6):
        await cancel_one(backend, start + hour * HOUR + 5)

    sixes = await backend.get_counters(start, start + 6 * HOUR, 6 * HOUR)

    assert [(p.start, p.counters[0].canceled) for p in sixes] == [
        (start, 3),
        (start + 6 * HOUR, 1),
    ]


@pytest.mark.parametrize("period", [0, 7, 90, 2400, -60])
async def test_a_period_that_fits_no_rows_is_refused(backend: Backend, period: int) -> None:
    with pytest.raises(ValueError, match="period"):
        await backend.get_counters(0.0, 60.0, period)
