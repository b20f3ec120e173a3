"""The workflows the dashboard's browser tests run: ``pool`` (on $WORKPOOL_URL) is what
their worker and dashboard serve; the tests enqueue through ``make_pool(url)``."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from workpool import Cron, RateLimit, RetryPolicy, RunContext, Workpool

SERVED = ("work", "pausable", "cron")
"""The queues the tests' worker serves; runs of the queue "held" wait."""


def make_pool(url: str | None = None) -> Workpool:
    """A pool on ``url`` with the tests' workflows defined."""
    pool = Workpool(url, app="dashboard-tests")
    pool.queue("work", max_parallelism=8)

    @pool.workflow(
        queue="work",
        max_concurrency=None,
        retries=RetryPolicy(max_attempts=2),
        rate_limit=RateLimit(100, per=timedelta(seconds=1)),
    )
    async def greet(ctx: RunContext, name: str) -> str:
        return f"hello {name}"

    @pool.workflow(queue="work", max_concurrency=None)
    async def explode(ctx: RunContext, message: str) -> None:
        raise ValueError(message)  # fails for good: one attempt

    @pool.workflow(queue="work", max_concurrency=None)
    async def refuse(ctx: RunContext, message: str) -> None:
        raise PermissionError(message)  # fails for good; only the failures page's tests

    @pool.workflow(queue="work", max_concurrency=None)
    async def echo(ctx: RunContext, text: str) -> str:
        return text

    @pool.workflow(queue="work", max_concurrency=None)
    async def publish(ctx: RunContext, note: str) -> str:
        await ctx.set_event("stage", {"step": 2, "of": 3})
        await ctx.set_event("note", note)
        return "published"

    define_waiting(pool)

    @pool.workflow(queue="work", max_concurrency=None)
    async def fulfil(ctx: RunContext, order: str) -> str:
        stock = await ctx.step.run("reserve", reserve, order)
        label = await ctx.step.run_workflow("greet", greet, order)
        await ctx.step.sleep("settle", timedelta(milliseconds=600))
        return f"{stock[0]}; {label}"

    # A tick every 2 s, each run 3 s long, one at a time: ticks are fired and skipped.
    @pool.workflow(queue="cron", max_concurrency=1, cron=[Cron("* * * * * */2")])
    async def tick(ctx: RunContext, value: None) -> None:
        await asyncio.sleep(3)

    return pool


def define_waiting(pool: Workpool) -> None:
    """The workflows whose runs the tests pause, or leave waiting (queue "held")."""

    @pool.workflow(queue="pausable", max_concurrency=None)
    async def pausable(ctx: RunContext, name: str) -> str:
        return name

    @pool.workflow(queue="held", max_concurrency=None)
    async def held(ctx: RunContext, name: str) -> str:
        return name

    # Runs of the queue "held" wait: one holds the limit's place, the others wait at it.
    partner = pool.limit("partner-api", max_concurrency=1, rate=RateLimit(50))

    @pool.workflow(queue="held", max_concurrency=None, limits=[partner])
    async def call_partner(ctx: RunContext, name: str) -> str:
        return name


async def reserve(order: str) -> list[str]:
    await asyncio.sleep(0.05)
    return [f"sku-{order}"]


pool = make_pool()
