"""The run builder: a PreparedRun, the registry and the settings -> a NewRun to store.

The client (``enqueue_many``), the engine (child runs) and cron (ticks) all make runs
here, from plain values: nothing in it knows the pool.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from workpool.backends.base import CompletionHook, Enqueued, GateSpec, NewRun, RateLimitSpec
from workpool.definitions import PreparedRun, RunOptions, Workflow, run_options
from workpool.errors import ConfigurationError
from workpool.options import Limit, RateLimit, RetryPolicy
from workpool.registry import Registry
from workpool.run_ids import PROCESS_RUN_IDS
from workpool.serialization import check_size, to_json
from workpool.settings import Settings
from workpool.tracing import link_context
from workpool.validation import (
    STRICT_STEP,
    check_name,
    check_time,
    duration_seconds,
    timeout_seconds,
    timestamp_of,
)

__all__ = [
    "STRICT_STEP",
    "batch_callback",
    "build_new_run",
    "new_run_id",
    "prepare_run",
    "rank_offset",
    "sent_runs",
    "stored_retry",
]


def rank_offset(priority: int, aging: float | None) -> float:
    """The seconds a run's rank is ahead of its ``available_at`` (backends claim by
    ``available_at - offset``): ``priority * aging`` in a queue with ``priority_aging``,
    else ``priority * STRICT_STEP``, so priority decides first and age breaks ties."""
    return float(priority) * (STRICT_STEP if aging is None else aging)


@functools.lru_cache(maxsize=64)
def stored_retry(policy: RetryPolicy | None) -> str | None:
    """A retry policy as stored with a run (JSON text), made once per policy: runs of a
    workflow share a handful of policies."""
    return None if policy is None else json.dumps(policy.to_json())


def new_run_id(now: float) -> str:
    """A 32-hex-digit id whose first 12 digits are the creation time in ms, greater than
    every id this process made before (see ``workpool.run_ids``): sorted by id, one
    process's runs are in creation order."""
    return PROCESS_RUN_IDS.new(now)


def prepare_run(
    registry: Registry, target: Workflow[Any, Any] | str, input: Any, **options: Any
) -> PreparedRun:
    """Prepare a run of a workflow given as an object or a name.

    A name defined in ``registry`` is validated like its workflow's ``run``; an unknown
    name (a workflow defined in another codebase) only needs JSON input.
    """
    if isinstance(target, Workflow):
        return target.prepare(input, **options)
    name = check_name(target, what="workflow name")
    definition = registry.workflows.get(name)
    if definition is not None:
        return definition.prepare(input, **options)
    return PreparedRun(
        name, to_json(input, what=f"input of workflow {name!r}"), run_options(options)
    )


def build_new_run(
    registry: Registry,
    settings: Settings,
    prepared: PreparedRun,
    now: float,
    *,
    batch_id: str | None = None,
    trace_context: str | None = None,
) -> NewRun:
    """Resolve queue, retry policy, start time and completion hooks of a prepared run:
    the one way a run is made, by the client, the engine (children) and cron (ticks).
    ``trace_context``: the stored context of the span that enqueues it (its hooks' runs
    keep it as a link)."""
    options = prepared.options
    if batch_id is not None and options.debounce is not None:
        raise ConfigurationError(
            f"a run of workflow {prepared.workflow!r} in a batch cannot be debounced: the "
            "batch counts each run it holds; drop debounce"
        )
    definition = prepared.definition or registry.workflows.get(prepared.workflow)
    queue = options.queue
    if queue is None:
        queue = definition.queue if definition is not None else "default"
    retry = settings.resolve_retry(options.retry, definition.retries if definition else None)
    limit = settings.max_payload_bytes
    check_size(prepared.input_json, what=f"input of workflow {prepared.workflow!r}", limit=limit)
    ttl = duration_seconds(options.idempotency_ttl, what="idempotency_ttl", positive=True)
    if options.idempotency_key is not None:
        check_time(now + ttl, what="idempotency_ttl (the time the key expires)")
    priority = options.priority
    if priority is None:
        priority = definition.priority if definition is not None else 0
    debounce_until = None
    if options.debounce_max is not None:
        most = duration_seconds(options.debounce_max, what="debounce_max", positive=True)
        debounce_until = check_time(now + most, what="debounce_max (the latest start)")
    available_at = _available_at(options, now)
    return NewRun(
        id=new_run_id(now),
        workflow=check_name(prepared.workflow, what="workflow name"),
        queue=check_name(queue, what="queue name"),
        input=prepared.input_json,
        available_at=available_at,
        retry=stored_retry(retry),
        hooks=_hooks(registry, settings, options, definition, trace_context),
        idempotency_key=options.idempotency_key,
        idempotency_ttl=ttl,
        max_concurrency=definition.max_concurrency if definition is not None else None,
        concurrency_key=prepared.concurrency_key,
        rate_limits=_rate_limits(registry, definition, prepared, queue),
        gates=_shared_gates(registry, definition, prepared, queue),
        timeout=None
        if options.timeout is None
        else timeout_seconds(options.timeout, what="timeout"),
        priority=priority,
        rank_offset=rank_offset(priority, registry.queue_priority_aging.get(queue)),
        batch_id=batch_id,
        debounce_key=None
        if options.debounce is None
        else options.debounce_key or prepared.workflow,
        debounce_until=debounce_until,
        trace_context=trace_context,
        deadline=_deadline(options, definition, now, available_at),
    )


def sent_runs(runs: Sequence[NewRun], stored: Sequence[Enqueued]) -> list[tuple[str, str, int]]:
    """(id, queue, priority) of each run of an enqueue, as its span (``tracing.Sending``)
    describes them: the id stored, which an idempotency key may have found."""
    return [
        (outcome.run_id, run.queue, run.priority) for run, outcome in zip(runs, stored, strict=True)
    ]


def batch_callback(
    registry: Registry,
    settings: Settings,
    on_complete: Workflow[Any, Any] | str,
    context: Any,
    trace_context: str | None = None,
) -> CompletionHook:
    """The completion hook a batch's ``on_complete`` becomes, with its ``context``
    (``trace_context``: of the span that stores the batch, kept as a link)."""
    context_json = to_json(context, what="batch on_complete context")
    check_size(context_json, what="batch on_complete context", limit=settings.max_payload_bytes)
    hook = _hook(registry, settings, on_complete, context_json, on_failure_only=False)
    if trace_context is None:
        return hook
    return dataclasses.replace(hook, trace_context=link_context(trace_context))


def _rate_limits(
    registry: Registry, definition: Workflow[Any, Any] | None, prepared: PreparedRun, queue: str
) -> tuple[RateLimitSpec, ...]:
    limits = []
    if definition is not None and definition.rate_limit is not None:
        key = prepared.rate_key or ""
        limiter = f"workflow:{len(definition.name)}:{definition.name}:{key}"
        limits.append(_spec(limiter, definition.rate_limit))
    queue_limit = registry.queue_rate_limits.get(queue)
    if queue_limit is not None:
        limits.append(_spec(f"queue:{queue}", queue_limit))
    for shared, shared_key in _shared(registry, definition, prepared, queue):
        if shared.rate is not None:
            limits.append(_spec(shared.gate(shared_key), shared.rate))
    return tuple(limits)


def _shared_gates(
    registry: Registry, definition: Workflow[Any, Any] | None, prepared: PreparedRun, queue: str
) -> tuple[GateSpec, ...]:
    return tuple(
        GateSpec(limit.gate(key), limit.max_concurrency)
        for limit, key in _shared(registry, definition, prepared, queue)
        if limit.max_concurrency is not None
    )


def _shared(
    registry: Registry, definition: Workflow[Any, Any] | None, prepared: PreparedRun, queue: str
) -> list[tuple[Limit, str | None]]:
    """The run's shared limits and its key for each (a queue's limits have none)."""
    own = definition.limits if definition is not None else ()
    keys = {limit.name: key for limit, key in zip(own, prepared.limit_keys, strict=False)}
    return [(limit, keys.get(limit.name)) for limit in registry.limits_of(definition, queue)]


def _spec(limiter: str, limit: RateLimit) -> RateLimitSpec:
    return RateLimitSpec(limiter, limit.count, limit.seconds)


def _available_at(options: RunOptions, now: float) -> float:
    if options.run_at is not None:
        return timestamp_of(options.run_at, what="run_at")
    if options.run_after is not None:
        seconds = duration_seconds(options.run_after, what="run_after")
        return check_time(now + seconds, what="run_after (the time the run may start)")
    if options.debounce is not None:
        window = duration_seconds(options.debounce, what="debounce", positive=True)
        return check_time(now + window, what="debounce (the end of the run's window)")
    return now


def _deadline(
    options: RunOptions, definition: Workflow[Any, Any] | None, now: float, start: float
) -> float | None:
    """The run's deadline (its own, else its workflow's), refused when it is not after
    now and after the run's start."""
    given = options.deadline
    if given is None and definition is not None:
        given = definition.deadline
    if given is None:
        return None
    if isinstance(given, datetime):
        deadline = timestamp_of(given, what="deadline")
    else:
        seconds = timeout_seconds(given, what="deadline")
        deadline = check_time(now + seconds, what="deadline (the time the run must end by)")
    if deadline <= max(now, start):
        raise ConfigurationError(
            f"deadline {_iso(deadline)} is not after the run's start ({_iso(max(now, start))}): "
            "give a later deadline, or an earlier run_at/run_after"
        )
    return deadline


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat()


def _hooks(
    registry: Registry,
    settings: Settings,
    options: RunOptions,
    definition: Workflow[Any, Any] | None,
    trace_context: str | None,
) -> tuple[CompletionHook, ...]:
    hooks = []
    if options.on_complete is not None:
        context = to_json(options.context, what="on_complete context")
        check_size(context, what="on_complete context", limit=settings.max_payload_bytes)
        hooks.append(_hook(registry, settings, options.on_complete, context, on_failure_only=False))
    if definition is not None and isinstance(definition.on_failure, Workflow):
        hooks.append(_hook(registry, settings, definition.on_failure, "null", on_failure_only=True))
    if trace_context is not None and hooks:
        link = link_context(trace_context)
        return tuple(dataclasses.replace(hook, trace_context=link) for hook in hooks)
    return tuple(hooks)


def _hook(
    registry: Registry,
    settings: Settings,
    target: Workflow[Any, Any] | str,
    context: str,
    *,
    on_failure_only: bool,
) -> CompletionHook:
    target_def = target if isinstance(target, Workflow) else registry.workflows.get(target)
    name = target if isinstance(target, str) else target.name
    retry = settings.resolve_retry(None, target_def.retries if target_def else None)
    queue = target_def.queue if target_def is not None else "default"
    priority = target_def.priority if target_def is not None else 0
    return CompletionHook(
        workflow=check_name(name, what="on_complete workflow name"),
        queue=queue,
        context=context,
        retry=stored_retry(retry),
        on_failure_only=on_failure_only,
        max_concurrency=target_def.max_concurrency if target_def is not None else None,
        priority=priority,
        rank_offset=rank_offset(priority, registry.queue_priority_aging.get(queue)),
    )
