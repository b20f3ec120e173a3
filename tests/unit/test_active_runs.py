"""ActiveRuns: slots are taken by executing handlers; held runs are bounded too."""

from __future__ import annotations

import asyncio
import logging

from tests.unit.runs import claimed_run
from workpool.backends.base import Finish, Lease
from workpool.engine.context import RunContext
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


async def test_held_runs_are_bounded_at_two_per_slot() -> None:
    active = ActiveRuns()
    for run_id in ("a", "b"):
        entry = await held(run_id)
        active.add(entry)
        active.free_slot()

    assert active.free_slots(1) == 0  # two outcomes wait to be written

    active.remove(await held("other"))  # not held: changes nothing
    assert active.free_slots(1) == 0
