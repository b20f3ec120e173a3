"""ActiveRuns: slots are taken by executing handlers; held runs are bounded too."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import pytest

from tests.unit.runs import claimed_run
from workpool.backends.base import Finish, Lease
from workpool.engine.context import RunContext
from workpool.engine.fencing import LocalLease
from workpool.worker.active import ActiveRun, ActiveRuns


async def _finished(run_id: str) -> Finish:
    return Finish(Lease(run_id, "token"), "succeeded", output="null")


async def held(run_id: str) -> ActiveRun:
    claimed = claimed_run(run_id)
    ctx = RunContext(run_id, "wf", "default", 1, logging.getLogger("test"))
    task = asyncio.create_task(_finished(run_id))
    await task
    return ActiveRun(claimed, ctx, task)


async def test_a_done_handler_frees_its_slot_before_its_outcome_is_written() -> None:
    active = ActiveRuns()
    first, second = await held("a"), await held("b")
    active.add(first)
    active.add(second)
    assert active.free_slots(2) == 0

    active.free_slot()  # outcome still to be written: the run is held

    assert active.free_slots(2) == 1
    assert len(active) == 2


async def test_held_runs_are_bounded() -> None:
    # Two per slot, or HELD_BEYOND_SLOTS more than the slots if that is more.
    active = ActiveRuns()
    for number in range(1 + ActiveRuns.HELD_BEYOND_SLOTS):
        entry = await held(f"run-{number}")
        active.add(entry)
        active.free_slot()
        if number < ActiveRuns.HELD_BEYOND_SLOTS:
            assert active.free_slots(1) == 1, number

    assert active.free_slots(1) == 0  # 201 outcomes wait to be written
    active.remove(await held("other"))  # not held: changes nothing
    assert active.free_slots(1) == 0
    assert active.free_slots(150) == 150 + ActiveRuns.HELD_BEYOND_SLOTS - len(active)  # 149
    assert active.free_slots(300) == 300  # two per slot: 600 may be held


async def test_the_renewal_of_an_earlier_claim_leaves_a_later_claim_of_the_run_alone() -> None:
    # A renewal sent while attempt 1 was held can come back after attempt 1's outcome
    # was written and the same worker claimed the run again (a retry due at once):
    # "lost" then means attempt 1's lease, not attempt 2's.
    active = ActiveRuns()
    earlier = Lease("a", "token")
    later = dataclasses.replace(claimed_run("a"), lease=Lease("a", "token-2"))
    ctx = RunContext("a", "wf", "default", 2, logging.getLogger("test"))
    never = asyncio.get_running_loop().create_future()
    entry = ActiveRun(later, ctx, asyncio.ensure_future(never), lease=LocalLease(100.0))
    active.add(entry)

    active.confirm([earlier], sent_at=1_000.0, lease_seconds=30.0)
    assert active.abandon(earlier, reason="lease lost") is None

    assert not entry.abandoned
    assert not entry.task.cancelled()
    assert entry.lease is not None
    assert entry.lease.deadline == 100.0
    assert active.abandon(later.lease, reason="lease lost") is entry
    assert entry.abandoned


async def test_a_shutdown_hands_runs_back_and_uses_the_attempt_of_one_past_its_time_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:

    active = ActiveRuns()
    entries = {}
    for run_id in ("a", "b", "c"):
        ctx = RunContext(run_id, "wf", "default", 1, logging.getLogger("test"))
        never = asyncio.get_running_loop().create_future()
        entries[run_id] = ActiveRun(claimed_run(run_id), ctx, asyncio.ensure_future(never))
        active.add(entries[run_id])
    entries["b"].ctx.time_ran_out()  # it ignores its interruption
    active.abandon(entries["c"].claimed.lease, reason="lease lost")  # not handed back
    caplog.clear()

    with caplog.at_level(logging.INFO, logger="workpool.worker"):
        handed_back, used = active.hand_back_unfinished()

    assert (handed_back, used) == ([entries["a"].claimed.lease], [entries["b"].claimed.lease])
    assert all(entry.abandoned for entry in entries.values())
    levels = {record.getMessage().split(" (")[0]: record.levelname for record in caplog.records}
    assert levels == {"run a handed back": "INFO", "run b abandoned": "WARNING"}
    await asyncio.sleep(0)
    assert all(entry.task.cancelled() for entry in entries.values())
