"""End to end: cron triggers whose input is a dict or a list fire (issue 12)."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import Cron, RunContext, Workpool
from workpool.clock import ManualClock
from workpool.worker.cron import CronScheduler

EVERY_SECOND = "* * * * * *"


def test_a_cron_with_a_dict_or_list_input_is_hashable_and_compares_by_value() -> None:
    trigger = Cron(EVERY_SECOND, input={"full": False, "tables": ["a", "b"]})
    same = Cron(EVERY_SECOND, input={"full": False, "tables": ["a", "b"]})
    assert hash(trigger) == hash(same)
    assert trigger == same
    assert trigger != Cron(EVERY_SECOND, input={"full": True, "tables": ["a", "b"]})
    assert len({trigger, same, Cron(EVERY_SECOND, input=[1, 2])}) == 2


async def test_a_cron_with_a_dict_input_starts_runs_with_that_input(pool: Workpool) -> None:
    received: list[Any] = []

    @pool.workflow(max_concurrency=None, cron=[Cron(EVERY_SECOND, input={"full": False})])
    async def sync_catalog(ctx: RunContext, options: dict[str, bool]) -> None:
        received.append(options)

    async with fast_worker(pool) as worker:
        await wait_until(lambda: len(received) >= 1)
    assert received[0] == {"full": False}
    assert worker.cron.fired >= 1
    runs = (await pool.list_runs(workflow="sync_catalog", status="succeeded")).runs
    assert runs
    assert all(run.input == {"full": False} for run in runs)


async def test_untyped_crons_with_list_and_dict_inputs_both_fire(pool: Workpool) -> None:
    received: list[Any] = []

    @pool.workflow(
        max_concurrency=None,
        cron=[
            Cron(EVERY_SECOND, input={"full": False}),
            Cron(EVERY_SECOND, input=["orders", {"since": "yesterday"}]),
        ],
    )
    async def sweep(ctx: RunContext, options):  # type: ignore[no-untyped-def]  # untyped on purpose
        received.append(options)

    async with fast_worker(pool):
        await wait_until(
            lambda: {"full": False} in received and ["orders", {"since": "yesterday"}] in received
        )


async def test_the_scheduler_steps_with_a_dict_input(pool: Workpool) -> None:
    """The failing step itself, without a worker: it raised TypeError every 2 s."""
    clock = ManualClock()
    pool.clock = clock

    @pool.workflow(max_concurrency=None, cron=[Cron("*/5 * * * *", input={"full": True})])
    async def report(ctx: RunContext, options: dict[str, bool]) -> None: ...

    backend = await pool.backend()
    scheduler = CronScheduler(pool.registry, pool.settings, "worker-a")
    await scheduler.step(backend, clock.now())
    clock.advance(300)
    await scheduler.step(backend, clock.now())
    assert scheduler.fired == 1
    [run] = (await pool.list_runs(workflow="report")).runs
    assert run.input == {"full": True}
