"""Backend.get_stats: active counts per (queue, workflow), per-minute counters, and the
oldest claimable run of each queue."""

from __future__ import annotations

from tests.conformance.helpers import (
    LEASE_SECONDS,
    MAX_LEASE_LOSSES,
    claim,
    claim_one,
    enqueue,
    enqueue_new,
    error_json,
    new_run,
)
from workpool.backends.base import Backend, Finish, PairActivity, PairCounters
from workpool.clock import ManualClock


def aligned(clock: ManualClock) -> float:
    """Move the clock to the start of a minute and return it."""
    clock.advance(60 - clock.now() % 60)
    return clock.now()


async def test_activity_counts_each_active_state(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    for available_at in (now - 10, now - 1, now - 1, now + 60):
        await enqueue_new(backend, now, workflow="send", queue="mail", available_at=available_at)
    for _ in range(2):  # the second waits for the first's place
        await enqueue_new(
            backend, now, workflow="bill", queue="mail", max_concurrency=1, available_at=now - 5
        )
    assert (await claim_one(backend, now, queues=("mail",))).workflow == "send"
    parent = await claim_one(backend, now, queues=("mail",))
    assert parent.workflow == "bill"
    await backend.finish([Finish(parent.lease, "suspend", wake_at=now + 600)], now)

    stats = await backend.get_stats(now - 300, now)
    assert stats.activity == [
        PairActivity("mail", "bill", scheduled=0, queued=1, running=0, suspended=1),
        PairActivity("mail", "send", scheduled=1, queued=2, running=1, suspended=0),
    ]


async def test_a_pair_stays_listed_with_nothing_active(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await enqueue_new(backend, now, workflow="send", queue="mail")
    claimed = await claim_one(backend, now, queues=("mail",))
    await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)

    stats = await backend.get_stats(now, now)
    assert stats.activity == [PairActivity("mail", "send", 0, 0, 0, 0)]


async def test_counters_count_every_way_an_attempt_ends(
    backend: Backend, clock: ManualClock
) -> None:
    now = aligned(clock)
    for _ in range(5):
        await enqueue_new(backend, now)
    first, second, third, fourth = (await claim(backend, now, limit=4)).runs
    await backend.finish(
        [
            Finish(first.lease, "succeeded", output="1"),
            Finish(second.lease, "failed", error=error_json()),
            Finish(third.lease, "retry", error=error_json(), retry_at=now + 5),
            Finish(fourth.lease, "suspend", wake_at=now + 30),
        ],
        now + 2,
    )
    [fifth] = (await claim(backend, now + 3, limit=4)).runs
    await backend.finish([Finish(fifth.lease, "canceled")], now + 3.5)
    queued = await enqueue_new(backend, now + 4)
    assert await backend.cancel(queued, None, now + 4) == "canceled"

    stats = await backend.get_stats(now, now + 10)
    [counters] = stats.counters
    assert counters == PairCounters(
        "default",
        "send_email",
        executions=4,
        timed=4,
        run_time=counters.run_time,
        succeeded=1,
        failed=1,
        canceled=2,
        retried=1,
    )
    assert abs(counters.run_time - (2 + 2 + 2 + 0.5)) < 1e-6


async def test_reaped_attempts_count_as_untimed_executions(
    backend: Backend, clock: ManualClock
) -> None:
    now = aligned(clock)
    await enqueue_new(backend, now)
    for attempt in range(MAX_LEASE_LOSSES):  # requeued twice, then failed
        at = now + attempt * (LEASE_SECONDS + 1)
        assert len((await claim(backend, at)).runs) == 1
    await claim(backend, now + MAX_LEASE_LOSSES * (LEASE_SECONDS + 1))

    [counters] = (await backend.get_stats(now, now + 120)).counters
    assert (counters.executions, counters.timed, counters.run_time) == (3, 0, 0.0)
    assert (counters.retried, counters.failed) == (2, 1)


async def test_counters_cover_the_minutes_asked_for(backend: Backend, clock: ManualClock) -> None:
    start = aligned(clock)
    for minute in range(3):
        at = start + 60 * minute + 10
        await enqueue_new(backend, at)
        claimed = await claim_one(backend, at)
        await backend.finish([Finish(claimed.lease, "succeeded", output="1")], at + 1)

    def succeeded(stats_counters: list[PairCounters]) -> int:
        return sum(counters.succeeded for counters in stats_counters)

    end = start + 150
    assert succeeded((await backend.get_stats(start, end)).counters) == 3
    assert succeeded((await backend.get_stats(start + 60, end)).counters) == 2
    assert succeeded((await backend.get_stats(start + 120, end)).counters) == 1
    assert (await backend.get_stats(start + 180, start + 200)).counters == []


async def test_counters_are_kept_per_pair(backend: Backend, clock: ManualClock) -> None:
    now = aligned(clock)
    await enqueue_new(backend, now, workflow="send", queue="mail")
    await enqueue_new(backend, now, workflow="bill", queue="money")
    for queue in ("mail", "money"):
        claimed = await claim_one(backend, now, queues=(queue,))
        await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now + 1)

    counters = (await backend.get_stats(now, now + 1)).counters
    assert [(c.queue, c.workflow, c.succeeded) for c in counters] == [
        ("mail", "send", 1),
        ("money", "bill", 1),
    ]


async def test_oldest_claimable_per_queue(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    await enqueue(backend, new_run(now - 30, queue="mail"), now)
    await enqueue(backend, new_run(now - 10, queue="mail"), now)
    await enqueue(backend, new_run(now - 5, queue="bulk"), now)
    await enqueue(backend, new_run(now + 60, queue="later"), now)  # scheduled
    gated = new_run(now - 50, queue="gated", workflow="g", max_concurrency=1)
    await enqueue(backend, gated, now)
    await claim_one(backend, now, queues=("gated",))  # running; the next one waits
    await enqueue(backend, new_run(now - 40, queue="gated", workflow="g", max_concurrency=1), now)

    stats = await backend.get_stats(now, now)
    assert stats.oldest_claimable == {"mail": now - 30, "bulk": now - 5}
