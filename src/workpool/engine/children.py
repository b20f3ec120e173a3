"""Child runs of steps: the run a step starts (with its idempotency key) and what the
step that awaits it returns or raises."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from workpool.backends.base import NewRun, StepRecord
from workpool.builder import build_new_run, prepare_run
from workpool.definitions import Workflow
from workpool.engine.environment import StepEnvironment
from workpool.errors import RunCanceledError, failed_error
from workpool.models import RunError
from workpool.serialization import from_json


def child_run(
    env: StepEnvironment,
    step: str,
    target: tuple[Workflow[Any, Any] | str, Any],
    options: dict[str, Any],
    trace_context: str | None,
) -> NewRun:
    """The child run (``target``: its workflow or name, and its input) that step
    ``step`` of the leased run starts, keyed so a replay enqueues it once."""
    child, input = target
    name = child.name if isinstance(child, Workflow) else child
    if options.get("idempotency_key") is None:
        options["idempotency_key"] = child_key(env.lease.run_id, step, name)
    prepared = prepare_run(env.registry, child, input, **options)
    now = env.settings.clock.now()
    return build_new_run(env.registry, env.settings, prepared, now, trace_context=trace_context)


def child_key(run_id: str, step: str, child: str) -> str:
    """The idempotency key of the child that step ``step`` of run ``run_id`` starts:
    the same on every replay, so the child is enqueued once."""
    digest = hashlib.sha256(json.dumps([step, child]).encode()).hexdigest()[:32]
    return f"step:{run_id}:{digest}"


def child_result(saved: StepRecord, child: Workflow[Any, Any] | str) -> Any:
    """The output of the ended child of a saved step (validated by its workflow's output
    type), or RunFailedError / RunCanceledError."""
    child_id = saved.child_run_id or "?"
    if saved.status == "succeeded":
        value = from_json(saved.output)
        if isinstance(child, Workflow) and child.output_adapter is not None:
            return child.output_adapter.validate_python(value)
        return value
    error = RunError.model_validate(from_json(saved.error) or {"type": "?", "message": ""})
    if saved.status == "canceled":
        raise RunCanceledError(child_id, error.message or None)
    raise failed_error(child_id, error)
