"""A time the store could not read back is refused before the first write.

A batch (enqueue, finish) or a step (save_step) with one bad value raises ValueError
naming the run and field, and leaves the store exactly as it was and readable:
get_run, list_runs and get_stats still work and good operations go on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from tests.conformance.helpers import (
    LEASE_SECONDS,
    claim,
    enqueue_new,
    error_json,
    new_id,
    new_run,
)
from workpool.backends.base import (
    Backend,
    ClaimedRun,
    Finish,
    NewRun,
    RunPage,
    RunRecord,
    StatsSnapshot,
    StepRecord,
)
from workpool.clock import ManualClock

BAD_TIMES = [math.nan, math.inf, -math.inf, 1e300, -1e300]
BAD_IDS = ["nan", "inf", "-inf", "huge", "-huge"]


@dataclass(frozen=True)
class Store:
    """Everything a reader can see of the store."""

    runs: list[RunRecord | None]
    steps: list[list[StepRecord]]
    page: RunPage
    stats: StatsSnapshot


async def look(backend: Backend, run_ids: list[str], now: float) -> Store:
    """Read every run, its steps, the first page of runs and the stats."""
    return Store(
        runs=[await backend.get_run(run_id) for run_id in run_ids],
        steps=[await backend.get_steps(run_id) for run_id in run_ids],
        page=await backend.list_runs(None, None, None, 100, None),
        stats=await backend.get_stats(now - 300, now),
    )


async def three_running(backend: Backend, now: float) -> list[ClaimedRun]:
    """Three runs claimed at ``now``."""
    for _ in range(3):
        await enqueue_new(backend, now)
    runs = (await claim(backend, now)).runs
    assert len(runs) == 3
    return runs


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
@pytest.mark.parametrize(("status", "field"), [("retry", "retry_at"), ("suspend", "wake_at")])
async def test_a_finish_batch_with_one_bad_time_changes_nothing(
    backend: Backend, clock: ManualClock, bad: float, status: str, field: str
) -> None:
    now = clock.now()
    first, middle, last = await three_running(backend, now)
    run_ids = [run.lease.run_id for run in (first, middle, last)]
    before = await look(backend, run_ids, now)
    bad_finish = (
        Finish(middle.lease, "retry", error=error_json(), retry_at=bad)
        if status == "retry"
        else Finish(middle.lease, "suspend", wake_at=bad)
    )
    batch = [Finish(first.lease, "succeeded", output="1"), bad_finish, Finish(last.lease, "failed")]

    with pytest.raises(ValueError, match=f"{middle.lease.run_id}.*{field}"):
        await backend.finish(batch, now + 1)

    assert await look(backend, run_ids, now) == before
    assert await backend.finish([batch[0], batch[2]], now + 1) == [True, True]
    renewed = await backend.renew([middle.lease], LEASE_SECONDS, now + 1)
    assert not renewed.lost  # its lease is still held: the worker can write it again


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
async def test_a_finish_at_a_bad_now_changes_nothing(
    backend: Backend, clock: ManualClock, bad: float
) -> None:
    now = clock.now()
    runs = await three_running(backend, now)
    run_ids = [run.lease.run_id for run in runs]
    before = await look(backend, run_ids, now)

    with pytest.raises(ValueError, match="now"):
        await backend.finish([Finish(run.lease, "succeeded", output="1") for run in runs], bad)

    assert await look(backend, run_ids, now) == before


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
async def test_an_enqueue_batch_with_one_bad_start_stores_nothing(
    backend: Backend, clock: ManualClock, bad: float
) -> None:
    now = clock.now()
    batch = [new_run(now), new_run(bad), new_run(now + 60)]
    before = await look(backend, [run.id for run in batch], now)

    with pytest.raises(ValueError, match=f"{batch[1].id}.*available_at"):
        await backend.enqueue(batch, now)

    after = await look(backend, [run.id for run in batch], now)
    assert after == before
    assert after.runs == [None, None, None]
    assert after.page.runs == []
    assert (await claim(backend, now + 120)).runs == []


@pytest.mark.parametrize("ttl", [math.nan, math.inf, 0.0, -1.0, 1e300])
async def test_an_enqueue_batch_with_one_bad_key_lifetime_stores_nothing(
    backend: Backend, clock: ManualClock, ttl: float
) -> None:
    now = clock.now()
    batch = [
        new_run(now, idempotency_key="a"),
        new_run(now, idempotency_key="b", idempotency_ttl=ttl),
    ]

    with pytest.raises(ValueError, match=f"{batch[1].id}.*idempotency_ttl"):
        await backend.enqueue(batch, now)

    assert (await backend.list_runs(None, None, None, 100, None)).runs == []
    good = new_run(now, idempotency_key="b")  # the key was not remembered either
    assert [outcome.created for outcome in await backend.enqueue([good], now)] == [True]


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
@pytest.mark.parametrize("field", ["started_at", "wake_at", "finished_at"])
async def test_a_step_with_a_bad_time_is_not_saved(
    backend: Backend, clock: ManualClock, bad: float, field: str
) -> None:
    now = clock.now()
    running = (await three_running(backend, now))[0]
    run_id = running.lease.run_id
    times = {"started_at": now, "wake_at": now + 5, "finished_at": None, field: bad}
    step = StepRecord("nap", "sleep", "waiting", 1, **times)  # type: ignore[arg-type]
    before = await look(backend, [run_id], now)

    with pytest.raises(ValueError, match=f"{run_id}.*{field}"):
        await backend.save_step(running.lease, step, now)

    assert await look(backend, [run_id], now) == before
    good = StepRecord("nap", "sleep", "waiting", 1, now, wake_at=now + 5)
    assert await backend.save_step(running.lease, good, now) == good


@pytest.mark.parametrize("bad", BAD_TIMES, ids=BAD_IDS)
async def test_a_step_whose_child_has_a_bad_start_stores_neither(
    backend: Backend, clock: ManualClock, bad: float
) -> None:
    now = clock.now()
    running = (await three_running(backend, now))[0]
    parent_id = running.lease.run_id
    child: NewRun = new_run(bad, run_id=new_id(), idempotency_key="step:child")
    step = StepRecord("ship", "workflow", "waiting", 1, now)
    before = await look(backend, [parent_id, child.id], now)

    with pytest.raises(ValueError, match=f"{child.id}.*available_at"):
        await backend.save_step(running.lease, step, now, child)

    assert await look(backend, [parent_id, child.id], now) == before
    assert await backend.get_children(parent_id) == []
