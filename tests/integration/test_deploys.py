"""A deploy with runs in flight: worker processes on version 1 of a module
(``deploy_v1``) leave runs suspended at a durable sleep, an event wait and a child;
workers on version 2 (``deploy_v2``: a step inserted, one renamed, one removed, one
with new arguments, a patched branch) finish or stop each run as the README's table
says, and no completed step's side effect runs twice."""

from __future__ import annotations

import collections
from pathlib import Path

from tests.integration.processes import Workers
from tests.polling import wait_until
from workpool import NeedsAttention, Workpool

V1 = "tests.integration.deploy_v1:pool"
V2 = "tests.integration.deploy_v2:pool"


def effects(log: Path) -> collections.Counter[tuple[str, ...]]:
    """How many times each (run, step, arguments) side effect ran."""
    lines = log.read_text().splitlines() if log.exists() else []
    return collections.Counter(tuple(line.split()[1:]) for line in lines)


async def test_a_deploy_finishes_or_stops_each_suspended_run(
    pool: Workpool, workers: Workers
) -> None:
    workers.start(app=V1)
    await wait_until(lambda: _registered(pool, "parent"))
    sleeper = await pool.run_by_name("sleeper", 4.0)
    approver = await pool.run_by_name("approver", 7)
    parent = await pool.run_by_name("parent", None)
    for run in (sleeper, approver, parent):
        await wait_until(lambda run=run: _is(pool, run.id, "suspended"))
    child_id = (await pool.get_run(parent.id)).children[0]
    await wait_until(lambda: _is(pool, child_id, "suspended"))
    workers.stop_all()
    before = effects(workers.log_path)
    assert all(count == 1 for count in before.values())

    workers.start(app=V2)
    await pool.send_event(approver.id, "approve", True)
    await pool.send_event(child_id, "release", True)
    assert await sleeper.result(timeout=30) == ["reserve", "weigh", "dispatch"]
    await wait_until(lambda: _is(pool, approver.id, "needs_attention"))
    await wait_until(lambda: _is(pool, parent.id, "needs_attention"))
    fresh = await pool.run_by_name("sleeper", 0.0)
    assert await fresh.result(timeout=30) == ["reserve", "audit", "weigh", "dispatch"]

    stopped = await approver.status()
    assert isinstance(stopped, NeedsAttention)
    assert "'charge'" in stopped.reason
    assert "saved step 'notify'" in (await parent.status()).reason  # type: ignore[union-attr]
    after = effects(workers.log_path)
    assert max(after.values()) == 1, after  # no completed step's side effect ran twice
    assert (approver.id, "charge", "700") not in after  # a stale result was not read past
    assert (parent.id, "report") not in after

    await pool.rerun(approver.id, from_step="charge", reason="the new price applies")
    assert await approver.result(timeout=30) == ["charge", "confirm"]
    await pool.cancel(parent.id, "notify was dropped on purpose")
    assert await _is(pool, parent.id, "canceled")
    final = effects(workers.log_path)
    assert final[(approver.id, "charge", "700")] == 1
    assert final[(approver.id, "charge", "7")] == 1
    assert max(final.values()) == 1, final


async def _registered(pool: Workpool, name: str) -> bool:
    return name in {workflow.name for workflow in await pool.list_workflows()}


async def _is(pool: Workpool, run_id: str, state: str) -> bool:
    return (await pool.get_run(run_id)).status == state
