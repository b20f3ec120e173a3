"""Shared limits beside the operator's controls: a run under several gates that is paused,
stopped in needs_attention or re-run in bulk frees, or takes back, every one of its
places (see "Shared limits: several gates per run" in docs/architecture.md)."""

from __future__ import annotations

from tests.conformance.helpers import claim_one, claimed_ids, error_json, fetch, new_id
from tests.conformance.test_shared_limits import PARTNER, QUEUES, finish, limited
from workpool.backends.base import Backend, Finish, GateSpec, RunFilter
from workpool.clock import ManualClock

SHARED = GateSpec(PARTNER, 1)


async def blocked_behind(backend: Backend, now: float) -> tuple[str, str, str]:
    """A run admitted at its workflow's gate (1) and a shared one (1), then a run waiting
    at each of those gates: (the admitted run, the one waiting at its workflow's gate,
    the one waiting at the shared gate)."""
    both = await limited(backend, now, "sync", "q1", SHARED, own=1)
    own_only = await limited(backend, now + 0.1, "sync", "q1", own=1)
    shared_only = await limited(backend, now + 0.2, "invoice", "q2", SHARED, own=None)
    return both, own_only, shared_only


async def test_pausing_a_run_under_several_gates_frees_every_place(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    both, own_only, shared_only = await blocked_behind(backend, now)
    assert await backend.act_on_run("pause", both, now + 1) == "queued"
    claimed = sorted(await claimed_ids(backend, now + 2, queues=QUEUES, limit=10))
    assert claimed == sorted([own_only, shared_only])
    assert await backend.act_on_run("resume", both, now + 3) == "paused"
    assert await claimed_ids(backend, now + 4, queues=QUEUES, limit=10) == []  # both full


async def test_a_stopped_run_under_several_gates_frees_every_place(
    backend: Backend, clock: ManualClock
) -> None:
    now = clock.now()
    both, own_only, shared_only = await blocked_behind(backend, now)
    claimed = await claim_one(backend, now + 1, queues=QUEUES)
    assert claimed.lease.run_id == both
    stop = Finish(claimed.lease, "attention", error=error_json("StepMismatchError"))
    assert await backend.finish([stop], now + 2) == [True]
    claimed_now = sorted(await claimed_ids(backend, now + 3, queues=QUEUES, limit=10))
    assert claimed_now == sorted([own_only, shared_only])


async def test_a_bulk_retry_copies_every_gate_of_a_run(
    backend: Backend, clock: ManualClock
) -> None:
    """The copy of a failed run under its workflow's gate and a shared one waits while
    the shared gate is full, though its workflow's gate has room."""
    now = clock.now()
    failed = await limited(backend, now, "sync", "q1", SHARED, own=1)
    claimed = await claim_one(backend, now + 1, queues=QUEUES)
    assert await backend.finish([Finish(claimed.lease, "failed", error=error_json())], now + 2)
    holder = await limited(backend, now + 3, "invoice", "q2", SHARED, own=None)
    held = await claim_one(backend, now + 4, queues=QUEUES)
    assert held.lease.run_id == holder
    page = await backend.act_on_runs(
        "retry",
        RunFilter(statuses=("failed",), workflow="sync"),
        None,
        10,
        now + 5,
        new_ids=[new_id() for _ in range(10)],
    )
    assert page.changed == 1
    assert await claimed_ids(backend, now + 6, queues=QUEUES, limit=10) == []
    await finish(backend, held, now + 7)
    copy = (await fetch(backend, failed)).retried_as
    assert await claimed_ids(backend, now + 8, queues=QUEUES, limit=10) == [copy]
