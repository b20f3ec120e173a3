"""Shared limits: gates and limiters that runs of several workflows and queues count
against, besides their workflow's own gate (see "Several gates" in ``enqueue.py``)."""

from __future__ import annotations

from dataclasses import replace

from tests.conformance.helpers import (
    claim,
    claimed_ids,
    enqueue,
    fetch,
    new_run,
    status_of,
)
from workpool.backends.base import (
    Backend,
    ClaimedRun,
    Finish,
    GateSpec,
    GateUsage,
    RateLimitSpec,
)
from workpool.clock import ManualClock

PARTNER = "limit:7:partner:"
PARTNER_OF_3 = GateSpec(PARTNER, 3)
QUEUES = ("q1", "q2")
# three workflows in two queues, each with its own gate (two at once) besides the shared one
WORKFLOWS = (("sync", "q1"), ("refund", "q1"), ("invoice", "q2"))


async def limited(
    backend: Backend, now: float, workflow: str, queue: str, *gates: GateSpec, own: int | None = 2
) -> str:
    run = replace(
        new_run(now, workflow=workflow, queue=queue, max_concurrency=own), gates=tuple(gates)
    )
    return await enqueue(backend, run, now)


async def finish(backend: Backend, run: ClaimedRun, now: float) -> None:
    assert await backend.finish([Finish(run.lease, "succeeded", output="1")], now) == [True]


async def test_a_shared_limit_holds_across_workflows_and_queues(
    backend: Backend, clock: ManualClock
) -> None:
    """Twelve runs of three workflows in two queues under one limit of 3: a claim of many
    slots gets 3 of them, never more while they run, and each end lets exactly one in;
    a run outside the limit is claimed beside them (waiting runs hold no slot)."""
    now = clock.now()
    ids = [
        await limited(backend, now + index * 0.001, workflow, queue, PARTNER_OF_3)
        for index in range(4)
        for workflow, queue in WORKFLOWS
    ]
    free = await enqueue(backend, new_run(now + 1, workflow="free", queue="q1"), now + 1)
    running = list((await claim(backend, now + 2, queues=QUEUES, limit=20)).runs)
    assert free in {run.lease.run_id for run in running}
    running = [run for run in running if run.lease.run_id != free]
    assert len(running) == 3
    started = {run.lease.run_id for run in running}
    at = now + 3
    while running:
        assert await claimed_ids(backend, at, queues=QUEUES, limit=20) == []  # full
        await finish(backend, running.pop(0), at)
        more = (await claim(backend, at, queues=QUEUES, limit=20)).runs
        assert len(more) <= 1
        running.extend(more)
        started.update(run.lease.run_id for run in more)
        assert len(running) <= 3
        at += 1
    assert started == set(ids)


async def test_a_waiting_run_is_woken_by_the_last_of_its_limits_to_free(
    backend: Backend, clock: ManualClock
) -> None:
    """A run under its workflow's gate (1) and a shared one (2) waits at the full shared
    gate holding no place at its own, which another run takes; when the shared gate frees
    it moves to wait at its own, and is admitted when that frees, taking both places."""
    now = clock.now()
    shared = GateSpec(PARTNER, 2)
    blockers = [await limited(backend, now + i * 0.01, "sync", "q1", shared) for i in range(2)]
    waiting = await limited(backend, now + 0.1, "refund", "q1", shared, own=1)
    other = await limited(backend, now + 0.2, "refund", "q1", own=1)  # its own gate only
    first = (await claim(backend, now + 1, queues=QUEUES)).runs
    assert sorted(run.lease.run_id for run in first) == sorted([*blockers, other])
    assert (await fetch(backend, waiting)).waiting_at_gate
    await finish(backend, first[0] if first[0].lease.run_id in blockers else first[1], now + 2)
    assert await claimed_ids(backend, now + 2, queues=QUEUES) == []  # its own gate is full
    await finish(backend, next(run for run in first if run.lease.run_id == other), now + 3)
    assert await claimed_ids(backend, now + 3, queues=QUEUES) == [waiting]
    late = await limited(backend, now + 4, "invoice", "q2", shared)
    assert await status_of(backend, late) == "queued"
    assert (await fetch(backend, late)).waiting_at_gate  # the woken run holds a shared place


async def test_several_shared_limits_on_one_run_all_admit_it(
    backend: Backend, clock: ManualClock
) -> None:
    """A run under two shared gates starts only when both have room; one that is full
    keeps it waiting while the other's runs go on."""
    now = clock.now()
    api, db = GateSpec("limit:3:api:", 1), GateSpec("limit:2:db:", 5)
    holder = await limited(backend, now, "sync", "q1", api, own=None)
    both = await limited(backend, now + 0.1, "refund", "q1", api, db, own=None)
    db_only = await limited(backend, now + 0.2, "invoice", "q2", db, own=None)
    running = (await claim(backend, now + 1, queues=QUEUES)).runs
    assert sorted(run.lease.run_id for run in running) == sorted([holder, db_only])
    await finish(backend, next(run for run in running if run.lease.run_id == holder), now + 2)
    assert await claimed_ids(backend, now + 2, queues=QUEUES) == [both]


async def test_canceling_runs_under_several_gates_frees_every_place(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    shared = GateSpec(PARTNER, 1)
    admitted = await limited(backend, now, "sync", "q1", shared, own=1)
    waiting = await limited(backend, now + 0.1, "sync", "q1", shared, own=1)
    assert await backend.cancel(waiting, None, now + 1) == "canceled"
    assert await backend.cancel(admitted, None, now + 1) == "canceled"
    own_only = await limited(backend, now + 2, "sync", "q1", own=1)
    shared_only = await limited(backend, now + 2, "invoice", "q2", shared, own=None)
    assert sorted(await claimed_ids(backend, now + 3, queues=QUEUES)) == sorted(
        [own_only, shared_only]
    )


async def test_a_shared_rate_limit_spaces_the_starts_of_every_workflow(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    rate = RateLimitSpec(PARTNER, 2, 10.0)
    ids = []
    for workflow, queue in WORKFLOWS:
        run = replace(new_run(now, workflow=workflow, queue=queue), rate_limits=(rate,))
        ids.append(await enqueue(backend, run, now))
    assert [await status_of(backend, run_id) for run_id in ids] == ["queued"] * 2 + ["scheduled"]
    assert (await fetch(backend, ids[2])).available_at == now + 5
    assert sorted(await claimed_ids(backend, now, queues=QUEUES)) == sorted(ids[:2])
    assert await claimed_ids(backend, now + 5, queues=QUEUES) == [ids[2]]


async def test_the_gates_of_shared_limits_are_read_with_their_runs(
    backend: Backend, clock: ManualClock
) -> None:
    """get_gates: places held and runs waiting, per gate whose id has the prefix."""
    now = clock.now()
    assert await backend.get_gates("limit:") == []
    for index in range(5):
        await limited(backend, now + index * 0.01, "sync", "q1", GateSpec(PARTNER, 2), own=None)
    await limited(backend, now, "sync", "q1", GateSpec("limit:3:api:k", 1), own=None)
    await limited(backend, now, "other", "q1", own=1)
    assert await backend.get_gates("limit:") == [
        GateUsage("limit:3:api:k", 1, 0),
        GateUsage(PARTNER, 2, 3),
    ]
    assert await backend.get_gates("limit:7:") == [GateUsage(PARTNER, 2, 3)]


async def test_a_run_says_which_gate_it_waits_at(backend: Backend, clock: ManualClock) -> None:
    now = clock.now()
    shared = GateSpec(PARTNER, 1)
    first = await limited(backend, now, "sync", "q1", shared, own=None)
    waiting = await limited(backend, now + 0.1, "sync", "q1", shared, own=None)
    assert (await fetch(backend, first)).gate == PARTNER
    record = await fetch(backend, waiting)
    assert (record.waiting_at_gate, record.gate, record.max_concurrency) == (True, PARTNER, 1)
