"""Run one claimed run's handler and turn what happened into a Finish."""

from __future__ import annotations

import asyncio
import json
import random
import traceback
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from workpool.backends.base import ClaimedRun, Finish
from workpool.definitions import Workflow
from workpool.engine.context import CancelRequestedError, RunContext
from workpool.errors import CorruptRecordError, NonRetriableError, PayloadError, WorkpoolError
from workpool.options import RetryPolicy
from workpool.retry import backoff_seconds, should_retry
from workpool.serialization import check_size


@dataclass(frozen=True, slots=True)
class Execution:
    """Everything ``execute`` needs besides the run itself."""

    threads: Executor
    """Where sync handlers run."""
    now: Callable[[], float]
    rng: random.Random
    max_payload_bytes: int


def error_json(error: BaseException, *, with_traceback: bool = True) -> str:
    """The stored form of an exception: type, message, traceback."""
    trace = "".join(traceback.format_exception(error)) if with_traceback else None
    return json.dumps({"type": type(error).__name__, "message": str(error), "traceback": trace})


def permanent_failure(claimed: ClaimedRun, error: BaseException) -> Finish:
    """A failure that is never retried."""
    return Finish(claimed.lease, "failed", error=error_json(error))


async def execute(
    workflow: Workflow[Any, Any], claimed: ClaimedRun, ctx: RunContext, env: Execution
) -> Finish:
    """Run the handler once; return the Finish to report.

    Raises ``asyncio.CancelledError`` when the task was cancelled for another reason
    than a cancel request (lease lost, shutdown): the caller then writes nothing.
    """
    try:
        value = workflow.decode_input(claimed.input)
    except (ValueError, ValidationError) as error:
        return permanent_failure(claimed, _undecodable_input(claimed, error))
    try:
        result = await _call(workflow, ctx, value, env)
    except asyncio.CancelledError:
        if ctx.cancelled:
            return Finish(claimed.lease, "canceled")
        raise
    except CancelRequestedError:
        return Finish(claimed.lease, "canceled")
    except NonRetriableError as error:
        return permanent_failure(claimed, error)
    except Exception as error:
        return _failure(claimed, error, env)
    try:
        output = workflow.encode_output(result)
        check_size(
            output, what=f"output of run {claimed.lease.run_id}", limit=env.max_payload_bytes
        )
    except PayloadError as error:
        return permanent_failure(claimed, error)
    return Finish(claimed.lease, "succeeded", output=output)


async def _call(workflow: Workflow[Any, Any], ctx: RunContext, value: Any, env: Execution) -> Any:
    if workflow.is_async:
        return await workflow.handler(ctx, value)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(env.threads, workflow.handler, ctx, value)


def _failure(claimed: ClaimedRun, error: Exception, env: Execution) -> Finish:
    try:
        policy = RetryPolicy.from_json(json.loads(claimed.retry)) if claimed.retry else None
    except (ValueError, KeyError, TypeError, WorkpoolError) as corrupt:
        return permanent_failure(
            claimed,
            CorruptRecordError(
                f"run {claimed.lease.run_id}: stored retry policy is unreadable ({corrupt}); "
                f"the attempt failed with {type(error).__name__}: {error}"
            ),
        )
    if policy is None or not should_retry(policy, claimed.attempt):
        return permanent_failure(claimed, error)
    retry_at = env.now() + backoff_seconds(policy, claimed.attempt, env.rng)
    return Finish(claimed.lease, "retry", error=error_json(error), retry_at=retry_at)


def _undecodable_input(claimed: ClaimedRun, error: Exception) -> Exception:
    if isinstance(error, ValidationError):
        return error
    return CorruptRecordError(
        f"run {claimed.lease.run_id}: stored input is not valid JSON ({error}); "
        "the record was altered outside workpool"
    )
