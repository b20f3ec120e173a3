"""Events into a run and values a run publishes: send_event, take_event, finish(suspend)
with events, set_event and get_event."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import (
    QUEUE,
    claim,
    claim_one,
    claimed_ids,
    enqueue_new,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import Backend, ClaimedRun, EventValue, Finish, Lease, StepRecord
from workpool.clock import ManualClock

KEY = "approval"


def waiting(name: str, now: float, wake_at: float | None = None) -> StepRecord:
    """An event step waiting for its event (until ``wake_at``, if given)."""
    return StepRecord(name, "event", "waiting", 1, now, wake_at=wake_at)


async def take(
    backend: Backend, claimed: ClaimedRun, name: str, now: float, key: str = KEY
) -> StepRecord:
    """Save a waiting event step of the held run, taking an event of ``key`` if one came."""
    stored = await backend.take_event(claimed.lease, waiting(name, now), key, now)
    assert stored is not None
    return stored


async def suspend_on(
    backend: Backend, claimed: ClaimedRun, now: float, *keys: str, wake_at: float | None = None
) -> None:
    """Suspend the held run until an event of one of ``keys`` comes (or ``wake_at``)."""
    finish = Finish(claimed.lease, "suspend", wake_at=wake_at, events=keys)
    assert await backend.finish([finish], now) == [True]


async def waiting_run(
    backend: Backend, now: float, *keys: str, wake_at: float | None = None
) -> str:
    """A run suspended on an event step of each of ``keys`` (default: KEY) that found none."""
    keys = keys or (KEY,)
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    for key in keys:
        assert (await take(backend, claimed, f"wait-{key}", now, key)).status == "waiting"
    await suspend_on(backend, claimed, now, *keys, wake_at=wake_at)
    assert await status_of(backend, run_id) == "suspended"
    return run_id


async def test_an_event_sent_before_the_wait_is_kept_and_taken_by_it(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    assert await backend.send_event(run_id, KEY, '{"approved": true}', now) == "sent"
    assert await status_of(backend, run_id) == "queued"  # a queued run is not changed
    claimed = await claim_one(backend, now + 1)
    step = await take(backend, claimed, "approve", now + 2)
    assert step == replace(
        waiting("approve", now + 2),
        status="succeeded",
        output='{"approved": true}',
        finished_at=now + 2,
    )
    assert await backend.get_steps(run_id) == [step]
    assert (await take(backend, claimed, "again", now + 3)).status == "waiting"  # taken once


async def test_an_event_sent_while_the_run_runs_queues_its_suspension_at_once(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert (await take(backend, claimed, "approve", now)).status == "waiting"
    assert await backend.send_event(run_id, KEY, '"yes"', now + 1) == "sent"
    assert await status_of(backend, run_id) == "running"
    await suspend_on(backend, claimed, now + 2, KEY)
    assert await status_of(backend, run_id) == "queued"
    resumed = await claim_one(backend, now + 2)
    assert (resumed.lease.run_id, resumed.attempt) == (run_id, 1)
    assert (await take(backend, resumed, "approve", now + 3)).output == '"yes"'


async def test_an_event_wakes_the_run_suspended_on_its_key(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now)
    assert await claimed_ids(backend, now + 1) == []
    assert await backend.send_event(run_id, KEY, "42", now + 2) == "sent"
    run = await fetch(backend, run_id)
    assert (run.status, run.available_at) == ("queued", now + 2)
    resumed = await claim_one(backend, now + 3)
    assert (resumed.lease.run_id, resumed.attempt, resumed.has_steps) == (run_id, 1, True)
    step = await take(backend, resumed, f"wait-{KEY}", now + 4)
    assert (step.status, step.output, step.finished_at) == ("succeeded", "42", now + 4)


async def test_an_event_of_another_key_is_kept_and_wakes_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now)
    assert await backend.send_event(run_id, "shipping", '"later"', now + 1) == "sent"
    assert await status_of(backend, run_id) == "suspended"
    assert await backend.send_event(run_id, KEY, '"now"', now + 2) == "sent"
    resumed = await claim_one(backend, now + 3)
    assert (await take(backend, resumed, "approved", now + 3)).output == '"now"'
    assert (await take(backend, resumed, "shipped", now + 3, "shipping")).output == '"later"'


async def test_a_run_suspended_on_a_child_or_timer_is_not_woken_by_an_event(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    await suspend_on(backend, claimed, now, wake_at=now + 60)
    assert await backend.send_event(run_id, KEY, '"early"', now + 1) == "sent"
    assert await status_of(backend, run_id) == "suspended"
    resumed = await claim_one(backend, now + 60)
    assert (await take(backend, resumed, "approve", now + 61)).output == '"early"'


async def test_an_event_awaited_by_an_earlier_suspension_no_longer_wakes_the_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now, wake_at=now + 10)
    resumed = await claim_one(backend, now + 10)  # timed out
    await suspend_on(backend, resumed, now + 11, wake_at=now + 100)  # now a sleep only
    assert await backend.send_event(run_id, KEY, "1", now + 12) == "sent"
    assert await status_of(backend, run_id) == "suspended"


async def test_two_waits_take_two_events_in_the_order_sent(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now)
    for number, payload in enumerate(('"first"', '"second"', '"third"')):
        assert await backend.send_event(run_id, KEY, payload, now + 1 + number) == "sent"
    resumed = await claim_one(backend, now + 5)
    assert (await take(backend, resumed, f"wait-{KEY}", now + 5)).output == '"first"'
    assert (await take(backend, resumed, "second-wait", now + 5)).output == '"second"'
    steps = {step.name: step.output for step in await backend.get_steps(run_id)}
    assert steps == {f"wait-{KEY}": '"first"', "second-wait": '"second"'}
    assert (await take(backend, resumed, "third-wait", now + 5)).output == '"third"'
    assert (await take(backend, resumed, "fourth-wait", now + 5)).status == "waiting"


async def test_events_of_two_keys_go_to_the_waits_of_each(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now, "manager", "finance")
    assert await backend.send_event(run_id, "finance", '"ok from finance"', now + 1) == "sent"
    assert await status_of(backend, run_id) == "queued"
    assert await backend.send_event(run_id, "manager", '"ok from manager"', now + 2) == "sent"
    resumed = await claim_one(backend, now + 3)
    assert (await take(backend, resumed, "wait-manager", now + 3, "manager")).output == (
        '"ok from manager"'
    )
    assert (await take(backend, resumed, "wait-finance", now + 3, "finance")).output == (
        '"ok from finance"'
    )


async def test_a_taken_event_is_not_taken_again_by_the_same_step(
    backend: Backend, clock: ManualClock
) -> None:
    """A step saved with its event keeps it: taking again (a retried call after an outage,
    a replay) returns the stored step and leaves the next event for the next wait."""
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    for payload in ('"one"', '"two"'):
        await backend.send_event(run_id, KEY, payload, now)
    claimed = await claim_one(backend, now)
    first = await take(backend, claimed, "approve", now + 1)
    assert await take(backend, claimed, "approve", now + 2) == first
    await backend.release([claimed.lease], now + 3)
    replayed = await claim_one(backend, now + 3)
    assert await take(backend, replayed, "approve", now + 4) == first
    assert (await take(backend, replayed, "next", now + 4)).output == '"two"'


async def test_a_timed_out_wait_is_saved_as_given_unless_an_event_came(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now, wake_at=now + 30)
    assert await claimed_ids(backend, now + 29) == []
    resumed = await claim_one(backend, now + 30)  # the timer queued it
    timed_out = replace(
        waiting(f"wait-{KEY}", now), status="succeeded", output="null", finished_at=now + 31
    )
    assert await backend.take_event(resumed.lease, timed_out, KEY, now + 31) == timed_out
    assert await backend.get_steps(run_id) == [timed_out]

    late = await waiting_run(backend, now, wake_at=now + 30)
    assert await backend.send_event(late, KEY, '"in time"', now + 30) == "sent"
    resumed = await claim_one(backend, now + 30)
    taken = await backend.take_event(resumed.lease, timed_out, KEY, now + 31)
    assert taken is not None
    assert (taken.status, taken.output) == ("succeeded", '"in time"')


async def test_a_woken_run_leaves_its_timer_behind(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await waiting_run(backend, now, wake_at=now + 30)
    assert (await claim(backend, now + 1)).next_wake_at == now + 30
    await backend.send_event(run_id, KEY, "1", now + 2)
    resumed = await claim_one(backend, now + 2)
    assert (await take(backend, resumed, f"wait-{KEY}", now + 3)).output == "1"
    assert await backend.finish([Finish(resumed.lease, "succeeded", output="1")], now + 4) == [True]
    later = await claim(backend, now + 31)
    assert (later.runs, later.next_wake_at) == ([], None)


async def test_only_the_lease_holder_takes_an_event(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await backend.send_event(run_id, KEY, '"kept"', now)
    claimed = await claim_one(backend, now)
    stale = Lease(run_id, "not-the-token")
    assert await backend.take_event(stale, waiting("approve", now), KEY, now) is None
    assert await backend.get_steps(run_id) == []
    assert (await take(backend, claimed, "approve", now)).output == '"kept"'


async def test_sending_to_an_unknown_or_finished_run_stores_nothing(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    assert await backend.send_event("no-such-run", KEY, "1", now) == "not_found"
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    assert await backend.send_event(run_id, KEY, "1", now + 1) == "finished"

    canceled = await waiting_run(backend, now)
    assert await backend.cancel(canceled, "no longer needed", now + 1) == "canceled"
    assert await backend.send_event(canceled, KEY, "1", now + 2) == "finished"
    assert await status_of(backend, canceled) == "canceled"


async def test_an_event_id_is_stored_once_per_run(backend: Backend, clock: ManualClock) -> None:
    """A sender that retries (a webhook delivered twice) names its event: the repeat
    stores nothing and wakes nothing, even after the first was taken."""
    now = clock.now()
    run_id = await waiting_run(backend, now)
    assert await backend.send_event(run_id, KEY, '"first"', now, "delivery-1") == "sent"
    assert await backend.send_event(run_id, KEY, '"again"', now, "delivery-1") == "duplicate"
    claimed = await claim_one(backend, now + 1)
    assert (await take(backend, claimed, f"wait-{KEY}", now + 1)).output == '"first"'
    assert (await take(backend, claimed, "second wait", now + 1)).status == "waiting"
    assert await backend.send_event(run_id, KEY, '"late"', now + 1, "delivery-1") == "duplicate"
    assert await backend.send_event(run_id, KEY, '"other"', now + 1, "delivery-2") == "sent"
    assert (await take(backend, claimed, "second wait", now + 1)).output == '"other"'
    assert await backend.send_event(run_id, KEY, '"plain"', now + 1) == "sent"


async def test_an_event_id_belongs_to_its_run(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    first, second = await enqueue_new(backend, now), await enqueue_new(backend, now)
    assert await backend.send_event(first, KEY, "1", now, "delivery-1") == "sent"
    assert await backend.send_event(second, KEY, "1", now, "delivery-1") == "sent"


async def test_a_repeated_event_id_to_a_finished_run_is_a_duplicate(
    backend: Backend, clock: ManualClock
) -> None:
    """The repeat of an event that the run got before it finished is no error: the
    sender's retry succeeded the first time."""
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    assert await backend.send_event(run_id, KEY, "1", now, "delivery-1") == "sent"
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    assert await backend.send_event(run_id, KEY, "1", now + 1, "delivery-1") == "duplicate"
    assert await backend.send_event(run_id, KEY, "1", now + 1, "delivery-2") == "finished"


async def test_a_woken_run_waits_at_its_full_gate(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now, max_concurrency=1)
    claimed = await claim_one(backend, now)
    await suspend_on(backend, claimed, now, KEY)
    other = await enqueue_new(backend, now + 1, max_concurrency=1)
    assert await claimed_ids(backend, now + 1) == [other]  # the suspended run left its place
    await backend.send_event(run_id, KEY, "1", now + 2)
    woken = await fetch(backend, run_id)
    assert (woken.status, woken.waiting_at_gate) == ("queued", True)
    assert await claimed_ids(backend, now + 2) == []


async def test_a_published_value_is_read_back_last_value_winning(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    assert await backend.get_event(run_id, "status") == EventValue("queued", None)
    claimed = await claim_one(backend, now)
    assert await backend.set_event(claimed.lease, "status", '{"step": 1}')
    latest = '{"step": 2, "é": "\\"q\\""}'
    assert await backend.set_event(claimed.lease, "status", latest)
    assert await backend.set_event(claimed.lease, "total", "12.5")
    assert await backend.get_event(run_id, "status") == EventValue("running", latest)
    assert await backend.get_event(run_id, "total") == EventValue("running", "12.5")
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    assert await backend.get_event(run_id, "status") == EventValue("succeeded", latest)
    assert await backend.get_event(run_id, "never-set") == EventValue("succeeded", None)
    assert await backend.get_event("no-such-run", "status") is None


async def test_only_the_lease_holder_publishes(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    claimed = await claim_one(backend, now)
    assert not await backend.set_event(Lease(run_id, "not-the-token"), "status", "1")
    assert not await backend.set_event(Lease("no-such-run", "token"), "status", "1")
    await suspend_on(backend, claimed, now, wake_at=now + 60)
    assert not await backend.set_event(claimed.lease, "status", "2")  # no longer held
    assert await backend.get_event(run_id, "status") == EventValue("suspended", None)


async def test_purge_deletes_events_and_published_values_with_their_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run = new_run(now)
    await backend.enqueue([run], now)
    await backend.send_event(run.id, KEY, '"unread"', now, "delivery-1")
    claimed = await claim_one(backend, now)
    assert await backend.set_event(claimed.lease, "status", '"done"')
    assert await backend.finish([Finish(claimed.lease, "succeeded", output="1")], now)
    assert await backend.purge(now + 1, 10, 0.0) == 1
    assert await backend.get_event(run.id, "status") is None

    # A new run that happens to get the old id finds nothing of the old one's.
    await backend.enqueue([run], now + 2)
    again = await claim_one(backend, now + 2)
    assert await backend.get_event(run.id, "status") == EventValue("running", None)
    assert (await take(backend, again, "approve", now + 2)).status == "waiting"
    assert await backend.send_event(run.id, KEY, '"new"', now + 2, "delivery-1") == "sent"


async def test_a_rerun_starts_without_the_events_and_values_of_the_old_run(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    run_id = await enqueue_new(backend, now)
    await backend.send_event(run_id, KEY, '"for the old run"', now)
    claimed = await claim_one(backend, now)
    assert await backend.set_event(claimed.lease, "status", '"old"')
    assert await backend.finish([Finish(claimed.lease, "canceled")], now)
    rerun = await backend.rerun(run_id, "rerun-1", now + 1)
    assert rerun.run_id == "rerun-1"
    assert await backend.get_event("rerun-1", "status") == EventValue("queued", None)
    fresh = await claim_one(backend, now + 1, queues=(QUEUE,))
    assert (await take(backend, fresh, "approve", now + 1)).status == "waiting"
