"""CompletionHook: every terminal transition enqueues the owning run's hooks, once."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.conformance.helpers import (
    HOOK_QUEUE,
    LEASE_SECONDS,
    WORKFLOW,
    claim,
    claim_one,
    claimed_ids,
    enqueue,
    error_json,
    fetch,
    hook,
    new_run,
)
from workpool.backends.base import Backend, Finish
from workpool.clock import ManualClock

CONTEXT = '{"channel": "ops", "tags": ["a", "b"]}'
HOOK_RETRY = '{"max_attempts": 2, "initial_backoff": 1.0, "base": 2.0}'
OUTPUT = '{"total": 12.5}'
ERROR = error_json("ValueError", "bad order")
ALWAYS = hook("notify", context=CONTEXT, retry=HOOK_RETRY)
ON_FAILURE = hook("compensate", context='{"undo": true}', on_failure_only=True)

Ending = Callable[[Backend, str, float], Awaitable[float]]
"""Drives a queued run (id, now) to a terminal state; returns the time it ended."""


async def _succeed(backend: Backend, run_id: str, now: float) -> float:
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "succeeded", output=OUTPUT)], now + 1) == [
        True
    ]
    return now + 1


async def _fail(backend: Backend, run_id: str, now: float) -> float:
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "failed", error=ERROR)], now + 1) == [True]
    return now + 1


async def _finish_canceled(backend: Backend, run_id: str, now: float) -> float:
    claimed = await claim_one(backend, now)
    assert await backend.finish([Finish(claimed.lease, "canceled")], now + 1) == [True]
    return now + 1


async def _cancel_queued(backend: Backend, run_id: str, now: float) -> float:
    assert await backend.cancel(run_id, "user asked", now + 1) == "canceled"
    return now + 1


async def _cancel_running_then_fail(backend: Backend, run_id: str, now: float) -> float:
    claimed = await claim_one(backend, now)
    assert await backend.cancel(run_id, "user asked", now + 1) == "requested"
    assert await backend.finish([Finish(claimed.lease, "failed", error=ERROR)], now + 2) == [True]
    return now + 2


async def _cancel_running_then_reap(backend: Backend, run_id: str, now: float) -> float:
    await claim_one(backend, now)
    assert await backend.cancel(run_id, "user asked", now + 1) == "requested"
    assert (await claim(backend, now + LEASE_SECONDS)).runs == []
    return now + LEASE_SECONDS


async def _cancel_running_then_release(backend: Backend, run_id: str, now: float) -> float:
    claimed = await claim_one(backend, now)
    assert await backend.cancel(run_id, "user asked", now + 1) == "requested"
    await backend.release([claimed.lease], now + 2)
    return now + 2


async def _cancel_many(backend: Backend, run_id: str, now: float) -> float:
    assert await backend.cancel_many(None, WORKFLOW, "user asked", 10, now + 1) == 1
    return now + 1


async def _lose_worker(backend: Backend, run_id: str, now: float) -> float:
    await claim_one(backend, now, max_lease_losses=1)
    assert (await claim(backend, now + LEASE_SECONDS, max_lease_losses=1)).runs == []
    return now + LEASE_SECONDS


def _succeeded_result(record_error: Any) -> dict[str, Any]:
    return {"status": "succeeded", "output": json.loads(OUTPUT)}


def _failed_result(record_error: Any) -> dict[str, Any]:
    return {"status": "failed", "error": record_error}


def _canceled_result(reason: str | None) -> Callable[[Any], dict[str, Any]]:
    return lambda _error: {"status": "canceled", "reason": reason}


# (ending, expected hook result given the stored error, hook indexes that fire)
PATHS: dict[str, tuple[Ending, Callable[[Any], dict[str, Any]], list[int]]] = {
    "succeeded": (_succeed, _succeeded_result, [0]),
    "failed": (_fail, _failed_result, [0, 1]),
    "finish-canceled": (_finish_canceled, _canceled_result(None), [0]),
    "cancel-queued": (_cancel_queued, _canceled_result("user asked"), [0]),
    "cancel-running": (_cancel_running_then_fail, _canceled_result("user asked"), [0]),
    "cancel-reaped": (_cancel_running_then_reap, _canceled_result("user asked"), [0]),
    "cancel-released": (_cancel_running_then_release, _canceled_result("user asked"), [0]),
    "cancel-many": (_cancel_many, _canceled_result("user asked"), [0]),
    "worker-lost": (_lose_worker, _failed_result, [0, 1]),
}


@pytest.mark.parametrize("path", list(PATHS))
async def test_terminal_transition_enqueues_hooks_once(
    backend: Backend, clock: ManualClock, path: str
) -> None:
    ending, expected_result, fired = PATHS[path]
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ALWAYS, ON_FAILURE]), start)

    ended_at = await ending(backend, run_id, start)

    owner = await fetch(backend, run_id)
    owner_error = json.loads(owner.error) if owner.error is not None else None
    expected_inputs = {
        0: {
            "run_id": run_id,
            "workflow": WORKFLOW,
            "context": json.loads(CONTEXT),
            "result": expected_result(owner_error),
        },
        1: {
            "run_id": run_id,
            "workflow": WORKFLOW,
            "context": {"undo": True},
            "result": expected_result(owner_error),
        },
    }
    for index in (0, 1):
        record = await backend.get_run(f"{run_id}-{index}")
        if index not in fired:
            assert record is None, f"hook {index} fired on {path}"
            continue
        assert record is not None, f"hook {index} did not fire on {path}"
        assert json.loads(record.input) == expected_inputs[index]
        assert (record.status, record.attempts) == ("queued", 0)
        assert (record.created_at, record.available_at) == (ended_at, ended_at)
    assert sorted(await claimed_ids(backend, ended_at + 1, queues=[HOOK_QUEUE])) == sorted(
        f"{run_id}-{index}" for index in fired
    )


async def test_hook_run_takes_workflow_queue_and_retry_from_the_hook(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    special = hook("audit.log", queue="audit", context="null", retry=HOOK_RETRY)
    run_id = await enqueue(backend, new_run(start, hooks=[special]), start)
    await _succeed(backend, run_id, start)

    hook_run = await fetch(backend, f"{run_id}-0")

    assert (hook_run.workflow, hook_run.queue, hook_run.retry) == ("audit.log", "audit", HOOK_RETRY)
    assert json.loads(hook_run.input)["context"] is None
    assert (hook_run.idempotency_key, hook_run.lease_losses, hook_run.output) == (None, 0, None)
    claimed = await claim_one(backend, start + 2, queues=["audit"])
    assert (claimed.lease.run_id, claimed.workflow, claimed.retry) == (
        f"{run_id}-0",
        "audit.log",
        HOOK_RETRY,
    )


async def test_hook_input_keys_are_in_the_documented_order(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ALWAYS]), start)
    await _fail(backend, run_id, start)

    hook_input = json.loads((await fetch(backend, f"{run_id}-0")).input)

    assert list(hook_input) == ["run_id", "workflow", "context", "result"]
    assert list(hook_input["result"]) == ["status", "error"]


async def test_worker_lost_hook_carries_the_worker_lost_error(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ON_FAILURE]), start)
    await _lose_worker(backend, run_id, start)

    result = json.loads((await fetch(backend, f"{run_id}-0")).input)["result"]

    assert result["status"] == "failed"
    assert (result["error"]["type"], result["error"]["traceback"]) == ("WorkerLostError", None)


async def test_retry_does_not_fire_hooks(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ALWAYS, ON_FAILURE]), start)
    first = await claim_one(backend, start)
    retry = Finish(first.lease, "retry", error=ERROR, retry_at=start + 5)
    assert await backend.finish([retry], start + 1) == [True]

    assert await backend.get_run(f"{run_id}-0") is None
    assert await backend.get_run(f"{run_id}-1") is None

    second = await claim_one(backend, start + 5)
    await backend.finish([Finish(second.lease, "succeeded", output=OUTPUT)], start + 6)
    assert await claimed_ids(backend, start + 7, queues=[HOOK_QUEUE]) == [f"{run_id}-0"]


async def test_reaped_and_reclaimed_run_does_not_fire_hooks(
    backend: Backend, clock: ManualClock
) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ALWAYS, ON_FAILURE]), start)
    await claim_one(backend, start)

    assert (await claim_one(backend, start + LEASE_SECONDS)).attempt == 2

    assert await backend.get_run(f"{run_id}-0") is None
    assert await backend.get_run(f"{run_id}-1") is None


async def test_hooks_do_not_fire_again_after_the_end(backend: Backend, clock: ManualClock) -> None:
    start = clock.now()
    run_id = await enqueue(backend, new_run(start, hooks=[ALWAYS]), start)
    claimed = await claim_one(backend, start)
    await backend.finish([Finish(claimed.lease, "succeeded", output=OUTPUT)], start + 1)
    assert await claimed_ids(backend, start + 1, queues=[HOOK_QUEUE]) == [f"{run_id}-0"]

    await backend.finish([Finish(claimed.lease, "failed", error=ERROR)], start + 2)
    assert await backend.cancel(run_id, None, start + 2) == "finished"
    assert await backend.cancel_many(None, WORKFLOW, None, 100, start + 2) == 0

    assert await claimed_ids(backend, start + 3, queues=[HOOK_QUEUE]) == []
