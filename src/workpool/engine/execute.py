"""Run one claimed run's handler and turn what happened into a Finish."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import random
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from workpool import tracing
from workpool.backends.base import ClaimedRun, Finish
from workpool.definitions import Workflow
from workpool.engine.context import CancelRequestedError, RunContext
from workpool.engine.environment import LeaseLost, SuspendRun, check_lease
from workpool.engine.steps import Steps
from workpool.engine.threads import HandlerThreads
from workpool.errors import (
    BackendUnavailableError,
    CorruptRecordError,
    NonRetriableError,
    PayloadError,
    RunTimeoutError,
    StepMismatchError,
    WorkpoolError,
)
from workpool.options import RetryPolicy
from workpool.retry import backoff_seconds, should_retry
from workpool.serialization import check_size, error_json

logger = logging.getLogger("workpool.worker")

OUTAGE_RETRY_SECONDS = 5.0
"""A run whose execution failed because the backend was unreachable runs again this
long after its outcome is written, without using an attempt."""


@dataclass(frozen=True, slots=True)
class Execution:
    """Everything ``execute`` needs besides the run itself."""

    threads: HandlerThreads
    """Where sync handlers run."""
    now: Callable[[], float]
    rng: random.Random
    max_payload_bytes: int
    trace_links: bool = False
    """Executions link to the span that enqueued their run instead of being its
    children (``Settings.trace_links``)."""


def permanent_failure(claimed: ClaimedRun, error: BaseException) -> Finish:
    """A failure that is never retried."""
    tracing.record_error(error)
    return Finish(claimed.lease, "failed", error=error_json(error))


def attempt_timeout(workflow: Workflow[Any, Any], claimed: ClaimedRun) -> float | None:
    """Seconds one attempt of the run may execute: its own timeout, else its
    workflow's (None: no limit)."""
    return claimed.timeout if claimed.timeout is not None else workflow.timeout


def time_left(workflow: Workflow[Any, Any], claimed: ClaimedRun) -> float | None:
    """Seconds this execution may take: the attempt's timeout less what the attempt
    executed before it was suspended (None: no limit)."""
    limit = attempt_timeout(workflow, claimed)
    return None if limit is None else _remaining(limit, claimed)


def _remaining(limit: float, claimed: ClaimedRun) -> float:
    return max(0.0, limit - claimed.elapsed)


def deadline_failure(claimed: ClaimedRun, why: str) -> Finish:
    """The run's end by its deadline (``why``: what was happening), never retried."""
    message = f"run {claimed.lease.run_id} passed its deadline {why}; it is not retried"
    error = {"type": "DeadlineExceededError", "message": message, "traceback": None}
    return Finish(claimed.lease, "failed", error=json.dumps(error))


class _Deadline:
    """Interrupts the handler's task when the attempt's time runs out, or the run's
    deadline comes first (``until_deadline``: seconds left to it)."""

    def __init__(
        self,
        ctx: RunContext,
        claimed: ClaimedRun,
        limit: float | None,
        until_deadline: float | None,
    ) -> None:
        self._ctx = ctx
        self._claimed = claimed
        self._limit = limit
        self._started = time.monotonic()
        self._task = asyncio.current_task()
        remaining = math.inf if limit is None else _remaining(limit, claimed)
        self.by_deadline = until_deadline is not None and until_deadline < remaining
        if until_deadline is not None:
            remaining = max(0.0, min(remaining, until_deadline))
        self._timer = asyncio.get_running_loop().call_later(remaining, self._expire)

    def _expire(self) -> None:
        self._ctx.time_ran_out()  # a sync handler sees ctx.cancelled
        if self._task is not None:
            self._task.cancel()

    def cancel(self) -> None:
        self._timer.cancel()

    def outcome(self, env: Execution) -> Finish:
        """What the interrupted attempt ends as."""
        claimed = self._claimed
        ran = claimed.elapsed + time.monotonic() - self._started
        if self.by_deadline or self._limit is None:
            return deadline_failure(
                claimed, f"while running (attempt {claimed.attempt}, {ran:.3f} s) and was stopped"
            )
        return _failure(claimed, self._error(ran), env)

    def _error(self, ran: float) -> RunTimeoutError:
        claimed = self._claimed
        return RunTimeoutError(
            f"run {claimed.lease.run_id} attempt {claimed.attempt} exceeded its timeout of "
            f"{self._limit:g} s (it ran {ran:.3f} s) and was stopped"
        )


async def execute(
    workflow: Workflow[Any, Any], claimed: ClaimedRun, ctx: RunContext, env: Execution
) -> Finish:
    """Run the handler once; return the Finish to report.

    Raises ``asyncio.CancelledError`` when the task was cancelled for another reason
    than a cancel request (lease lost, shutdown), or the local lease ran out before the
    handler could start (a stall since the claim): the caller then writes nothing.
    With tracing on, the execution is a CONSUMER span (see ``workpool.tracing``).
    """
    _check_lease_before_start(ctx)
    traced = tracing.tracer()
    if traced is None:
        return await _execute(workflow, claimed, ctx, env, traced=False)
    with tracing.processing(
        traced,
        run_id=claimed.lease.run_id,
        workflow=claimed.workflow,
        queue=claimed.queue,
        attempt=claimed.attempt,
        trace_context=claimed.trace_context,
        links_only=env.trace_links,
        woken_by=claimed.woken_by,
        claim=claimed.fence,
    ) as span:
        try:
            finish = await _execute(workflow, claimed, ctx, env, traced=True)
        except asyncio.CancelledError:
            tracing.abandoned(span)
            raise
        finally:
            tracing.canceled_by(span, ctx._canceled_by)
        tracing.ended(
            span,
            finish.status,
            timed_out=ctx.timed_out,
            wake_at=finish.wake_at,
            waiting_on=finish.waiting_on,
            events=finish.events,
        )
        return finish


async def _execute(
    workflow: Workflow[Any, Any],
    claimed: ClaimedRun,
    ctx: RunContext,
    env: Execution,
    *,
    traced: bool,
) -> Finish:
    try:
        value = workflow.decode_input(claimed.input)
    except (ValueError, ValidationError) as error:
        return permanent_failure(claimed, _undecodable_input(claimed, error))
    limit = attempt_timeout(workflow, claimed)
    until_deadline = None if claimed.deadline is None else claimed.deadline - env.now()
    deadline = None
    if limit is not None or until_deadline is not None:
        deadline = _Deadline(ctx, claimed, limit, until_deadline)
    try:
        result = await _call(workflow, ctx, value, env, traced)
    except BaseException as error:  # every way a handler can end but returning
        if deadline is not None and ctx.timed_out:
            return deadline.outcome(env)
        return _outcome_of_error(claimed, ctx, error, env)
    finally:
        if deadline is not None:
            deadline.cancel()
    if deadline is not None and ctx.timed_out:  # it ignored the interruption
        return deadline.outcome(env)
    unfit = _steps_unfit(claimed, ctx)
    if unfit is not None:
        return unfit
    try:
        output = workflow.encode_output(result)
        check_size(
            output, what=f"output of run {claimed.lease.run_id}", limit=env.max_payload_bytes
        )
    except PayloadError as error:
        return permanent_failure(claimed, error)
    return Finish(claimed.lease, "succeeded", output=output)


def _steps_unfit(claimed: ClaimedRun, ctx: RunContext) -> Finish | None:
    """The outcome of a handler that returned when its steps do not fit the saved ones:
    a step name used twice fails the run; a replay that met a mismatch stops it."""
    steps = ctx._steps
    if steps is None:
        return None
    if steps.duplicate is not None:
        return permanent_failure(claimed, steps.duplicate)
    if steps.mismatch is None:
        with suppress(StepMismatchError):  # recorded in steps.mismatch
            steps.check_end()
    return None if steps.mismatch is None else _stopped(claimed, steps.mismatch)


def _check_lease_before_start(ctx: RunContext) -> None:
    """Start nothing for a run whose local lease ran out since its claim (the worker
    stalled): another worker may have taken the run, even finished it. This covers the
    replay of a resumed run too, which starts with its handler."""
    if ctx._env is None:
        return
    try:
        check_lease(ctx._env, "start its handler")
    except LeaseLost as lost:
        logger.warning("%s (the worker stalled since the claim)", lost)
        raise asyncio.CancelledError from lost


async def _call(
    workflow: Workflow[Any, Any], ctx: RunContext, value: Any, env: Execution, traced: bool
) -> Any:
    if workflow.is_async:
        return await workflow.handler(ctx, value)
    if traced:  # the handler's thread runs in the execution's span
        future = env.threads.submit(contextvars.copy_context().run, workflow.handler, ctx, value)
    else:
        future = env.threads.submit(workflow.handler, ctx, value)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        env.threads.abandon(future, f"run {ctx.run_id}")
        raise


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
    tracing.record_error(error)
    retry_at = env.now() + backoff_seconds(policy, claimed.attempt, env.rng)
    if claimed.deadline is not None and retry_at >= claimed.deadline:
        return deadline_failure(
            claimed,
            f"before its next attempt could start (attempt {claimed.attempt} failed with "
            f"{type(error).__name__}: {error})",
        )
    return Finish(claimed.lease, "retry", error=error_json(error), retry_at=retry_at)


def _outcome_of_error(
    claimed: ClaimedRun, ctx: RunContext, error: BaseException, env: Execution
) -> Finish:
    steps = ctx._steps
    if isinstance(error, asyncio.CancelledError):
        if ctx.cancelled:
            return Finish(claimed.lease, "canceled")
        raise error
    if isinstance(error, CancelRequestedError):
        return Finish(claimed.lease, "canceled")
    if steps is not None and steps.duplicate is not None:
        return permanent_failure(claimed, steps.duplicate)
    if steps is not None and steps.mismatch is None and not isinstance(error, LeaseLost):
        with suppress(StepMismatchError):  # recorded in steps.mismatch
            steps.check_end()
    if steps is not None and steps.mismatch is not None:
        return _stopped(claimed, steps.mismatch)
    if isinstance(error, NonRetriableError):
        return permanent_failure(claimed, error)
    if isinstance(error, BackendUnavailableError):
        # The store, not the handler, failed: put the run back without using its attempt.
        wake_at = env.now() + OUTAGE_RETRY_SECONDS
        return Finish(claimed.lease, "suspend", wake_at=wake_at)
    if isinstance(error, Exception):
        return _failure(claimed, error, env)
    return _signal_outcome(claimed, error, steps)


def _signal_outcome(claimed: ClaimedRun, signal: BaseException, steps: Steps | None) -> Finish:
    """The handler was unwound by the step engine (possibly inside an exception group)."""
    if _only(signal, LeaseLost):
        raise asyncio.CancelledError from signal  # the lease is gone: write nothing
    if steps is not None and steps.suspension is not None and _only(signal, SuspendRun):
        wait = steps.suspension
        return Finish(
            claimed.lease,
            "suspend",
            wake_at=wait.wake_at,
            waiting_on=wait.waiting_on,
            events=wait.events,
        )
    raise signal


def _stopped(claimed: ClaimedRun, mismatch: StepMismatchError) -> Finish:
    """The run's saved steps no longer fit its code: it waits for an operator."""
    logger.warning("%s", mismatch)
    return Finish(claimed.lease, "attention", error=error_json(mismatch))


def _only(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``error`` is ``kind`` or a group of nothing but ``kind`` (and cancellations)."""
    if isinstance(error, BaseExceptionGroup):
        return all(
            _only(inner, kind) or isinstance(inner, asyncio.CancelledError)
            for inner in error.exceptions
        ) and any(_only(inner, kind) for inner in error.exceptions)
    return isinstance(error, kind)


def _undecodable_input(claimed: ClaimedRun, error: Exception) -> Exception:
    if isinstance(error, ValidationError):
        return error
    return CorruptRecordError(
        f"run {claimed.lease.run_id}: stored input is not valid JSON ({error}); "
        "the record was altered outside workpool"
    )
