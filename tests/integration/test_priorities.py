"""End to end: priorities set on workflows and runs, read back, and obeyed by workers."""

from __future__ import annotations

import random

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import RateLimit, RunContext, Workpool
from workpool.clock import ManualClock


async def test_priorities_are_read_back_from_the_run(pool: Workpool) -> None:
    @pool.workflow(priority=5)
    async def job(ctx: RunContext, n: int) -> None: ...

    default = await job.run(1)
    explicit = await job.run(2, priority=-100)
    by_name = await pool.run_by_name("job", 3, priority=100)

    assert (await pool.get_run(default.id)).priority == 5
    assert (await pool.get_run(explicit.id)).priority == -100
    assert (await pool.get_run(by_name.id)).priority == 100


async def test_aging_lets_a_run_that_waited_long_enough_go_before_newer_urgent_ones(
    pool: Workpool,
) -> None:
    clock = ManualClock()
    pool.clock = clock
    pool.queue("reports", priority_aging=60)
    pool.queue("strict")

    @pool.workflow(queue="reports", max_concurrency=None)
    async def report(ctx: RunContext, n: int) -> None: ...

    patient = await report.run(1)
    strict = await report.run(2, queue="strict")
    clock.advance(130)
    urgent = await report.run(3, priority=2)
    strict_urgent = await report.run(4, priority=1, queue="strict")

    backend = await pool.backend()
    now = clock.now()
    taken = []
    for queue in ("reports", "reports", "strict", "strict"):
        result = await backend.claim([queue], "w", 1, 30.0, 3, now, workflows=["report"])
        taken += [run.lease.run_id for run in result.runs]

    assert taken == [patient.id, urgent.id, strict_urgent.id, strict.id]


async def test_a_worker_starts_runs_by_priority_under_gates_and_rate_limits(
    pool: Workpool,
) -> None:
    """One slot, a backlog of mixed priorities across a gated workflow and a rate
    limited one: every start is the highest-priority run startable at that moment.
    (A worker that claims ahead starts the runs it holds first: they were the best
    startable when it claimed them, a round trip or two before.)"""
    started: list[tuple[str, int]] = []

    @pool.workflow(max_concurrency=None)
    async def plain(ctx: RunContext, n: int) -> None:
        started.append(("plain", n))

    @pool.workflow(max_concurrency=1)
    async def gated(ctx: RunContext, n: int) -> None:
        started.append(("gated", n))

    @pool.workflow(max_concurrency=None, rate_limit=RateLimit(100, per=1))
    async def limited(ctx: RunContext, n: int) -> None:
        started.append(("limited", n))

    chooser = random.Random(14)
    priority_of = {n: chooser.randint(-100, 99) for n in range(60)}
    priority_of[-1] = 100  # a gate admits its first run at once: the others then wait
    workflows = (plain, gated, limited)
    await pool.enqueue_many(
        [
            gated.prepare(-1, priority=100),
            *[workflows[n % 3].prepare(n, priority=priority_of[n]) for n in range(60)],
        ]
    )

    async with fast_worker(pool, concurrency=1, claim_ahead=False):
        await wait_until(lambda: len(started) == 61)

    priorities = [priority_of[n] for _, n in started]
    assert priorities == sorted(priorities, reverse=True)
    for workflow in workflows:
        for priority in set(priorities):
            same = [
                n for name, n in started if name == workflow.name and priority_of[n] == priority
            ]
            assert same == sorted(same)  # FIFO within a priority
