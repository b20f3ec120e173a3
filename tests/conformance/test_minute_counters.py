"""Backend.get_minute_counters: the per-minute counters one minute at a time (the
dashboard's chart), the same counts that get_stats sums."""

from __future__ import annotations

from tests.conformance.helpers import claim_one, enqueue_new, error_json
from workpool.backends.base import Backend, Finish, FinishStatus, MinuteCounters, PairCounters
from workpool.clock import ManualClock


def aligned(clock: ManualClock) -> float:
    """Move the clock to the start of a minute and return it."""
    clock.advance(60 - clock.now() % 60)
    return clock.now()


async def test_each_minute_with_counts_comes_apart(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock)
    outcomes: list[tuple[float, FinishStatus]] = [
        (start + 10, "succeeded"),
        (start + 130, "failed"),
        (start + 135, "succeeded"),
    ]
    for at, status in outcomes:
        await enqueue_new(backend, at, workflow="send", queue="mail")
        claimed = await claim_one(backend, at, queues=("mail",))
        error = error_json() if status == "failed" else None
        output = "1" if status == "succeeded" else None
        await backend.finish([Finish(claimed.lease, status, output=output, error=error)], at + 1)

    minutes = await backend.get_minute_counters(start, start + 170)

    assert [minute.minute for minute in minutes] == [start, start + 120]  # none in between
    first, third = minutes
    assert first == MinuteCounters(
        start,
        [PairCounters("mail", "send", 1, 1, first.counters[0].run_time, succeeded=1)],
    )
    [counters] = third.counters
    assert (counters.executions, counters.succeeded, counters.failed) == (2, 1, 1)
    assert abs(counters.run_time - 2.0) < 1e-6


async def test_only_the_minutes_asked_for(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock)
    for minute in range(3):
        at = start + 60 * minute + 5
        await enqueue_new(backend, at)
        await backend.cancel(await enqueue_new(backend, at), None, at)

    later = await backend.get_minute_counters(start + 61, start + 179)

    assert [minute.minute for minute in later] == [start + 60, start + 120]
    assert [minute.counters[0].canceled for minute in later] == [1, 1]
    assert await backend.get_minute_counters(start + 180, start + 300) == []


async def test_pairs_of_a_minute_are_sorted(backend: Backend, clock: ManualClock) -> None:
    now = aligned(clock)
    for queue, workflow in (("money", "bill"), ("mail", "send"), ("mail", "bounce")):
        run_id = await enqueue_new(backend, now, workflow=workflow, queue=queue)
        await backend.cancel(run_id, None, now)

    [minute] = await backend.get_minute_counters(now, now)

    assert [(c.queue, c.workflow, c.canceled) for c in minute.counters] == [
        ("mail", "bounce", 1),
        ("mail", "send", 1),
        ("money", "bill", 1),
    ]
