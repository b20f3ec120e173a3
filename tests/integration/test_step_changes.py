"""Code changes with runs in flight, in-process on every backend: what a replay accepts,
where it stops a run in needs_attention, ctx.patched, and rerun(from_step=)."""

from __future__ import annotations

import collections

import pytest

from tests.integration.conftest import fast_worker
from tests.polling import wait_until
from workpool import NeedsAttention, RunContext, RunStateError, Workpool

calls: collections.Counter[str] = collections.Counter()


def effect(name: str, *args: object) -> str:
    calls[name] += 1
    return " ".join(map(str, (name, *args)))


async def status_is(pool: Workpool, run_id: str, status: str) -> bool:
    return (await pool.get_run(run_id)).status == status


async def suspend_then_change(pool: Workpool, handle_id: str, change: dict[str, object]) -> None:
    """Run a worker until the run waits for its event, change the code, send the event."""
    async with fast_worker(pool):
        await wait_until(lambda: status_is(pool, handle_id, "suspended"))
    code.update(change)
    await pool.send_event(handle_id, "go", None)


code: dict[str, object] = {}


@pytest.fixture(autouse=True)
def fresh() -> None:
    calls.clear()
    code.clear()
    code.update(amount=10, extra=False, middle=True, tail=True, gated=False)


def define(pool: Workpool) -> object:
    @pool.workflow(max_concurrency=1)
    async def order(ctx: RunContext, _: None) -> list[str]:
        done = [await ctx.step.run("reserve", effect, "reserve")]
        if code["middle"]:
            done.append(await ctx.step.run("middle", effect, "middle"))
        done.append(await ctx.step.run("charge", effect, "charge", code["amount"]))
        if code["gated"] and await ctx.patched("receipt-v2"):
            done.append(await ctx.step.run("receipt-v2", effect, "receipt-v2"))
        await ctx.step.wait_for_event("approval", "go")
        if code["extra"]:
            done.append(await ctx.step.run("extra", effect, "extra"))
        if code["tail"]:
            done.append(await ctx.step.run("tail", effect, "tail"))
        return done

    return order


async def test_an_added_step_runs_and_a_gated_branch_keeps_old_runs_on_old_code(
    pool: Workpool,
) -> None:
    order = define(pool)
    handle = await order.run(None)  # type: ignore[attr-defined]
    await suspend_then_change(pool, handle.id, {"extra": True, "gated": True})
    async with fast_worker(pool):
        result = await handle.result(timeout=10)
        fresh_run = await order.run(None)  # type: ignore[attr-defined]
        await pool.send_event(fresh_run.id, "go", None)
        fresh_result = await fresh_run.result(timeout=10)
    assert result == ["reserve", "middle", "charge 10", "extra", "tail"]
    assert fresh_result == ["reserve", "middle", "charge 10", "receipt-v2", "extra", "tail"]
    assert calls["reserve"] == 2
    assert calls["charge"] == 2


async def test_a_step_called_with_new_arguments_stops_the_run_until_rerun(
    pool: Workpool,
) -> None:
    order = define(pool)
    handle = await order.run(None)  # type: ignore[attr-defined]
    await suspend_then_change(pool, handle.id, {"amount": 20})
    async with fast_worker(pool):
        await wait_until(lambda: status_is(pool, handle.id, "needs_attention"))
        status = await handle.status()
        assert isinstance(status, NeedsAttention)
        assert "'charge' is now called with other arguments" in status.reason
        assert calls["charge"] == 1
        blocked = await order.run(None)  # type: ignore[attr-defined]
        await wait_until(lambda: status_is(pool, blocked.id, "suspended"))  # the slot is free

        with pytest.raises(RunStateError, match="no saved step 'nope'"):
            await pool.rerun(handle.id, from_step="nope")
        await pool.rerun(handle.id, from_step="charge", reason="amount fixed")
        result = await handle.result(timeout=10)  # the event sent before is still there
    assert "charge 20" in result
    assert calls["reserve"] == 2
    assert calls["middle"] == 2
    assert calls["charge"] == 3
    run = await pool.get_run(handle.id)
    assert run.rerun_from is not None
    assert run.rerun_from["reason"] == "amount fixed"
    with pytest.raises(RunStateError, match="succeeded: only a failed"):
        await pool.rerun(handle.id, from_step="charge")


async def test_a_step_removed_before_a_replayed_one_stops_the_run(pool: Workpool) -> None:
    order = define(pool)
    handle = await order.run(None)  # type: ignore[attr-defined]
    await suspend_then_change(pool, handle.id, {"middle": False})
    async with fast_worker(pool):
        await wait_until(lambda: status_is(pool, handle.id, "needs_attention"))
    run = await pool.get_run(handle.id)
    assert run.error is not None
    assert "saved step 'middle'" in run.error.message
    assert calls["tail"] == 0  # nothing new ran after the stale replay
    await pool.cancel(handle.id, "dropped")
    assert (await pool.get_run(handle.id)).status == "canceled"


async def test_a_step_removed_at_the_end_is_not_a_mismatch(pool: Workpool) -> None:
    order = define(pool)
    handle = await order.run(None)  # type: ignore[attr-defined]
    await suspend_then_change(pool, handle.id, {"tail": False})
    async with fast_worker(pool):
        result = await handle.result(timeout=10)
    assert result[-1] == "charge 10"


def test_rerun_has_a_sync_twin(pool: Workpool) -> None:
    with pytest.raises(RunStateError, match="is still active"):
        pool.rerun_sync(define(pool).run_sync(None).id, from_step="reserve")  # type: ignore[attr-defined]
