"""Version 2 of ``deploy_v1``, deployed while its runs are suspended: ``sleeper`` gains
a step (``weigh``) and a patched branch (``audit``, for runs started on this version)
and renames ``ship`` to ``dispatch``; ``approver`` charges with other arguments;
``parent`` no longer has its ``notify`` step."""

from __future__ import annotations

from tests.integration.deploy_v1 import effect
from workpool import RunContext, Workpool

pool = Workpool(app="tests")


@pool.workflow(max_concurrency=None)
async def sleeper(ctx: RunContext, seconds: float) -> list[str]:
    done = [await ctx.step.run("reserve", effect, ctx.run_id, "reserve")]
    if await ctx.patched("audit"):
        done.append(await ctx.step.run("audit", effect, ctx.run_id, "audit"))
    done.append(await ctx.step.run("weigh", effect, ctx.run_id, "weigh"))
    await ctx.step.sleep("nap", seconds)
    done.append(await ctx.step.run("dispatch", effect, ctx.run_id, "dispatch"))
    return done


@pool.workflow(max_concurrency=None)
async def approver(ctx: RunContext, amount: int) -> list[str]:
    done = [await ctx.step.run("charge", effect, ctx.run_id, "charge", amount * 100)]
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
    done.append(await ctx.step.run_workflow("raise", child, None))
    done.append(await ctx.step.run("report", effect, ctx.run_id, "report"))
    return done
