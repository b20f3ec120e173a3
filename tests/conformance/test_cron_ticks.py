"""Cron ticks (``start_tick``): each trigger's overlap policy, judged in one operation
against that trigger's own latest run, and the skipped ticks it records (issue 23)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.conformance.helpers import claim_one, enqueue, new_run, status_of
from workpool.backends.base import (
    SKIPPED_TICKS_KEPT,
    Backend,
    Finish,
    NewTick,
    SkippedTickRecord,
    TickOverlap,
)
from workpool.clock import ManualClock

WORKFLOW = "sync_catalog"
NIGHTLY = "0 3 * * * UTC"
FIVE_MINUTES = "*/5 * * * * Europe/Paris"


def a_tick(
    trigger: str, at: float, overlap: TickOverlap = "skip", workflow: str = WORKFLOW
) -> NewTick:
    """The tick of ``trigger`` at ``at``, as the cron leader makes it (a gated run)."""
    run = new_run(
        at, workflow=workflow, max_concurrency=1, idempotency_key=f"cron:{trigger}:{at!r}"
    )
    return NewTick(run, trigger, at, overlap)


async def test_a_tick_starts_while_runs_of_other_triggers_fill_the_gate(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    other = await enqueue(backend, new_run(now, workflow=WORKFLOW, max_concurrency=1), now)
    nightly = await backend.start_tick(a_tick(NIGHTLY, now + 1), now + 1)
    five = await backend.start_tick(a_tick(FIVE_MINUTES, now + 1), now + 1)
    assert (nightly.created, nightly.skipped) == (True, None)
    assert (five.created, five.skipped) == (True, None)
    assert (await claim_one(backend, now + 2)).lease.run_id == other
    # Both wait behind it at the workflow's max_concurrency, neither was dropped.
    assert await status_of(backend, nightly.run_id) == "queued"
    assert await status_of(backend, five.run_id) == "queued"
    assert await backend.list_skipped_ticks(WORKFLOW, 10) == []


async def test_skip_skips_and_records_while_the_triggers_own_run_is_active(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await backend.start_tick(a_tick(FIVE_MINUTES, now), now)
    second_tick = a_tick(FIVE_MINUTES, now + 300)
    second = await backend.start_tick(second_tick, now + 301)
    expected = SkippedTickRecord(
        WORKFLOW, FIVE_MINUTES, now + 300, "previous_run_active", first.run_id, now + 301
    )
    assert second.skipped == expected
    assert (second.created, second.run_id) == (False, first.run_id)
    assert await backend.get_run(second_tick.run.id) is None
    assert await backend.list_skipped_ticks(WORKFLOW, 10) == [expected]
    running = await claim_one(backend, now + 302)
    assert (await backend.start_tick(a_tick(FIVE_MINUTES, now + 600), now + 600)).skipped
    await backend.finish([Finish(running.lease, "succeeded", output="null")], now + 601)
    third = await backend.start_tick(a_tick(FIVE_MINUTES, now + 900), now + 900)
    assert (third.created, third.skipped) == (True, None)
    skipped = await backend.list_skipped_ticks(WORKFLOW, 10)
    assert [record.scheduled_at for record in skipped] == [now + 600, now + 300]


async def test_buffer_one_starts_one_run_behind_the_running_one_and_skips_past_it(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    first = await backend.start_tick(a_tick(NIGHTLY, now, "buffer_one"), now)
    early = await backend.start_tick(a_tick(NIGHTLY, now + 1, "buffer_one"), now + 1)
    assert early.skipped is not None  # the first has not started: it is the buffered one
    assert (early.skipped.reason, early.skipped.run_id) == ("buffer_full", first.run_id)
    assert (await claim_one(backend, now + 2)).lease.run_id == first.run_id
    buffered = await backend.start_tick(a_tick(NIGHTLY, now + 3, "buffer_one"), now + 3)
    assert (buffered.created, buffered.skipped) == (True, None)
    assert await status_of(backend, buffered.run_id) == "queued"  # behind the running one
    late = await backend.start_tick(a_tick(NIGHTLY, now + 4, "buffer_one"), now + 4)
    assert late.skipped is not None
    assert (late.skipped.reason, late.skipped.run_id) == ("buffer_full", buffered.run_id)


async def test_allow_all_starts_every_tick(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    started = [
        await backend.start_tick(a_tick(NIGHTLY, now + i, "allow_all"), now + i) for i in range(3)
    ]
    assert [(tick.created, tick.skipped) for tick in started] == [(True, None)] * 3
    assert len({tick.run_id for tick in started}) == 3


async def test_a_tick_already_started_is_found_not_skipped(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    tick = a_tick(NIGHTLY, now)
    first = await backend.start_tick(tick, now)
    again = await backend.start_tick(replace(tick, run=replace(tick.run, id="another")), now)
    assert (again.run_id, again.created, again.skipped) == (first.run_id, False, None)
    assert await backend.list_skipped_ticks(None, 10) == []


async def test_skipped_ticks_are_kept_per_trigger_newest_first_and_capped(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    await backend.start_tick(a_tick(NIGHTLY, now), now)
    await backend.start_tick(a_tick(FIVE_MINUTES, now), now)
    await backend.start_tick(a_tick("hourly", now, workflow="report"), now)
    for i in range(1, SKIPPED_TICKS_KEPT + 6):
        await backend.start_tick(a_tick(FIVE_MINUTES, now + i), now + i)
    await backend.start_tick(a_tick(NIGHTLY, now + 0.5), now + 0.5)
    await backend.start_tick(a_tick("hourly", now + 2, workflow="report"), now + 2)
    kept = await backend.list_skipped_ticks(WORKFLOW, 1000)
    five = [record.scheduled_at for record in kept if record.trigger == FIVE_MINUTES]
    assert five == [now + i for i in range(SKIPPED_TICKS_KEPT + 5, 5, -1)]
    assert [record.trigger for record in kept if record.scheduled_at == now + 0.5] == [NIGHTLY]
    assert len(kept) == SKIPPED_TICKS_KEPT + 1
    newest = await backend.list_skipped_ticks(None, 2)
    assert [(record.workflow, record.scheduled_at) for record in newest] == [
        (WORKFLOW, now + SKIPPED_TICKS_KEPT + 5),
        (WORKFLOW, now + SKIPPED_TICKS_KEPT + 4),
    ]
    [report] = await backend.list_skipped_ticks("report", 10)
    assert (report.trigger, report.scheduled_at) == ("hourly", now + 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"trigger": ""}, "trigger"),
        ({"overlap": "sometimes"}, "overlap"),
        ({"scheduled_at": float("nan")}, "scheduled_at"),
    ],
)
async def test_a_bad_tick_is_refused_before_anything_is_written(
    backend: Backend, clock: ManualClock, change: dict[str, object], message: str
) -> None:
    now = clock.now()
    tick = a_tick(NIGHTLY, now)
    with pytest.raises(ValueError, match=message):
        await backend.start_tick(replace(tick, **change), now)  # type: ignore[arg-type]
    assert await backend.get_run(tick.run.id) is None
