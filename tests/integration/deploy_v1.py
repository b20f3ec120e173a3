"""Version 1 of the module that test_deploys deploys twice: three workflows that suspend
on a durable sleep, an event and a child. Every step's side effect appends one line
``effect <run id> <step> <arguments>`` to the file named by ``WORKPOOL_TEST_LOG``."""

from __future__ import annotations

import os

from workpool import RunContext, Workpool

pool = Workpool(app="tests")


def effect(run_id: str, step: str, *args: object) -> str:
    """A side effect: one line in the shared log (O_APPEND lines do not interleave)."""
    with open(os.environ["WORKPOOL_TEST_LOG"], "a") as log:
        log.write(" ".join(map(str, ("effect", run_id, step, *args))) + "\n")
    return step


@pool.workflow(max_concurrency=None)
async def sleeper(ctx: RunContext, seconds: float) -> list[str]:
    done = [await ctx.step.run("reserve", effect, ctx.run_id, "reserve")]
    await ctx.step.sleep("nap", seconds)
    done.append(await ctx.step.run("ship", effect, ctx.run_id, "ship"))
    return done


@pool.workflow(max_concurrency=None)
async def approver(ctx: RunContext, amount: int) -> list[str]:
    done = [await ctx.step.run("charge", effect, ctx.run_id, "charge", amount)]
    await ctx.step.wait_for_event("approval", "approve")
    done.append(await ctx.step.run("confirm", effect, ctx.run_id, "confirm"))
    return done


@pool.workflow(max_concurrency=None)
async def child(ctx: RunContext, _: None) -> str:
    await ctx.step.wait_for_event("release", "release")
    return "grown"


@pool.workflow(max_concurrency=None)
async def parent(ctx: RunContext, _: None) -> list[str]:
    done = [await ctx.step.run("plan", effect, ctx.run_id, "plan")]
    done.append(await ctx.step.run("notify", effect, ctx.run_id, "notify"))
    done.append(await ctx.step.run_workflow("raise", child, None))
    done.append(await ctx.step.run("report", effect, ctx.run_id, "report"))
    return done
