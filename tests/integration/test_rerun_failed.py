"""rerun(from_step=) of a failed run, end to end on every backend: after the bug is
fixed the run executes again from its failing step as the same run, with a fresh
attempt budget; the earlier steps' side effects do not run again; its on-failure hook
ran once, its completion hook runs again for the new ending."""

from __future__ import annotations

import collections
import contextlib
from datetime import timedelta

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import OnComplete, RetryPolicy, RunContext, RunFailedError, Workpool

calls: collections.Counter[str] = collections.Counter()
fixed = {"charge": False}


def effect(name: str) -> str:
    calls[name] += 1
    if name == "charge" and not fixed["charge"]:
        raise ValueError("card rejected")
    return name


async def test_a_failed_run_reruns_from_its_failing_step(pool: Workpool) -> None:
    calls.clear()
    fixed["charge"] = False
    ended: list[str] = []

    @pool.workflow()
    async def notify(ctx: RunContext, event: OnComplete) -> None:
        ended.append(f"{ctx.run_id}:{event.result.status}")

    @pool.workflow(
        retries=RetryPolicy(max_attempts=2, initial_backoff=timedelta(milliseconds=10)),
    )
    async def order(ctx: RunContext, _: None) -> list[str]:
        return [await ctx.step.run(name, effect, name) for name in ("reserve", "charge", "ship")]

    handle = await order.run(None, on_complete=notify)
    async with fast_worker(pool):
        with contextlib.suppress(RunFailedError):
            await handle.result(timeout=20)
        await wait_until(lambda: len(ended) == 1)
    assert (await pool.get_run(handle.id)).status == "failed"
    assert calls == {"reserve": 1, "charge": 2}

    fixed["charge"] = True
    await pool.rerun(handle.id, from_step="charge", reason="card fixed")
    async with fast_worker(pool):
        assert await handle.result(timeout=20) == ["reserve", "charge", "ship"]
        await wait_until(lambda: len(ended) == 2)
    assert calls == {"reserve": 1, "charge": 3, "ship": 1}
    run = await pool.get_run(handle.id)
    assert (run.status, run.attempts, run.error) == ("succeeded", 1, None)
    assert ended == [f"{handle.id}-0:failed", f"{handle.id}-0-1:succeeded"]
