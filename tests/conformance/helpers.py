"""Small builders and shortcuts that keep the conformance tests short."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from workpool.backends.base import (
    Backend,
    ClaimedRun,
    ClaimResult,
    CompletionHook,
    Enqueued,
    NewRun,
    RunRecord,
)
from workpool.builder import rank_offset as strict_rank_offset

BackendFactory = Callable[[], Awaitable[Backend]]
"""The type of the ``backend_factory`` fixture."""

WORKFLOW = "send_email"
QUEUE = "default"
HOOK_QUEUE = "hooks"
LEASE_SECONDS = 30.0
MAX_LEASE_LOSSES = 3
DEFAULT_TTL = 7 * 24 * 3600.0
INPUT = '{"to": "a@example.com", "attempt_note": null}'
RETRY = '{"max_attempts": 3, "initial_backoff": 0.25, "base": 2.0}'


def new_id() -> str:
    """A fresh run id."""
    return uuid.uuid4().hex


def strict_offset(priority: int) -> float:
    """The rank offset the client gives a run of ``priority`` in a queue without aging."""
    return strict_rank_offset(priority, None)


def new_run(
    available_at: float,
    *,
    run_id: str | None = None,
    workflow: str = WORKFLOW,
    queue: str = QUEUE,
    input: str = INPUT,
    retry: str | None = None,
    hooks: Sequence[CompletionHook] = (),
    idempotency_key: str | None = None,
    idempotency_ttl: float = DEFAULT_TTL,
    max_concurrency: int | None = None,
    concurrency_key: str | None = None,
    timeout: float | None = None,
    priority: int = 0,
    rank_offset: float | None = None,
) -> NewRun:
    """A NewRun with a fresh id unless one is given; its rank offset is the one the
    client gives ``priority`` in a queue without aging, unless one is given."""
    return NewRun(
        id=run_id if run_id is not None else new_id(),
        workflow=workflow,
        queue=queue,
        input=input,
        available_at=available_at,
        retry=retry,
        hooks=tuple(hooks),
        idempotency_key=idempotency_key,
        idempotency_ttl=idempotency_ttl,
        max_concurrency=max_concurrency,
        concurrency_key=concurrency_key,
        timeout=timeout,
        priority=priority,
        rank_offset=rank_offset if rank_offset is not None else strict_offset(priority),
    )


def hook(
    workflow: str = "notify",
    *,
    queue: str = HOOK_QUEUE,
    context: str = '{"channel": "ops"}',
    retry: str | None = None,
    on_failure_only: bool = False,
) -> CompletionHook:
    """A CompletionHook with readable defaults."""
    return CompletionHook(
        workflow=workflow,
        queue=queue,
        context=context,
        retry=retry,
        on_failure_only=on_failure_only,
    )


def error_json(error_type: str = "ValueError", message: str = "boom") -> str:
    """The JSON text of an error as workers report it."""
    return json.dumps({"type": error_type, "message": message, "traceback": "Traceback ..."})


async def enqueue(backend: Backend, run: NewRun, now: float) -> str:
    """Enqueue one run, check that it was created, return its id."""
    assert await backend.enqueue([run], now) == [Enqueued(run.id, True)]
    return run.id


async def enqueue_new(backend: Backend, now: float, **fields: Any) -> str:
    """Enqueue a new run available at ``now`` (or ``available_at``); return its id."""
    available_at = fields.pop("available_at", now)
    return await enqueue(backend, new_run(available_at, **fields), now)


async def claim(
    backend: Backend,
    now: float,
    *,
    queues: Sequence[str] = (QUEUE,),
    limit: int = 10,
    lease_seconds: float = LEASE_SECONDS,
    max_lease_losses: int = MAX_LEASE_LOSSES,
    worker_id: str = "worker-1",
    workflows: Sequence[str] | None = None,
    alone: bool = True,
) -> ClaimResult:
    """Claim with the suite's default lease settings, as a worker that holds no run (so
    it may take a run to isolate) and serves every workflow, unless told otherwise."""
    return await backend.claim(
        queues,
        worker_id,
        limit,
        lease_seconds,
        max_lease_losses,
        now,
        workflows=workflows,
        alone=alone,
    )


async def claim_one(backend: Backend, now: float, **options: Any) -> ClaimedRun:
    """Claim and check that exactly one run was handed out."""
    result = await claim(backend, now, limit=1, **options)
    assert len(result.runs) == 1, result
    return result.runs[0]


async def claimed_ids(backend: Backend, now: float, **options: Any) -> list[str]:
    """The ids of the runs one claim hands out, in the order returned."""
    result = await claim(backend, now, **options)
    return [run.lease.run_id for run in result.runs]


async def fetch(backend: Backend, run_id: str) -> RunRecord:
    """Read a run that must exist."""
    record = await backend.get_run(run_id)
    assert record is not None, f"run {run_id} not found"
    return record


async def status_of(backend: Backend, run_id: str) -> str:
    """The stored status of a run that must exist."""
    return (await fetch(backend, run_id)).status
