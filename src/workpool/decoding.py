"""Stored records -> values: runs, steps, batches and registry entries as users read them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from workpool.backends.base import (
    BatchRecord,
    RunRecord,
    SkippedTickRecord,
    StepRecord,
    WorkflowInfo,
)
from workpool.errors import BatchNotFoundError, CorruptRecordError, RunNotFoundError
from workpool.models import (
    BatchStatus,
    Canceled,
    Failure,
    Finished,
    NeedsAttention,
    Pending,
    RegisteredWorkflow,
    Run,
    RunError,
    Running,
    RunStatus,
    SkippedTick,
    Step,
    Success,
)
from workpool.options import parse_limit_gate
from workpool.serialization import from_json


def run_from_record(record: RunRecord, children: tuple[str, ...] = ()) -> Run:
    """Decode a stored record; CorruptRecordError names the run and field it chokes on."""
    return Run(
        id=record.id,
        workflow=record.workflow,
        queue=record.queue,
        status=record.status,  # type: ignore[arg-type]
        attempts=record.attempts,
        input=_decode(record, "input", record.input),
        output=_decode(record, "output", record.output),
        error=_decode_error(record),
        created_at=_time(record.created_at),
        available_at=_time(record.available_at),
        started_at=_time(record.started_at) if record.started_at is not None else None,
        finished_at=_time(record.finished_at) if record.finished_at is not None else None,
        cancel_requested=record.cancel_requested,
        cancel_reason=record.cancel_reason,
        idempotency_key=record.idempotency_key,
        parent_run_id=record.parent_run_id,
        children=children,
        retry_of=record.retry_of,
        retried_as=record.retried_as,
        executions=record.executions,
        run_time=timedelta(seconds=record.run_time),
        priority=record.priority,
        waiting=_waiting(record),
        timeout=None if record.timeout is None else timedelta(seconds=record.timeout),
        progress=_decode(record, "progress", record.progress),
        batch_id=record.batch_id,
        deadline=None if record.deadline is None else _time(record.deadline),
        rerun_from=_decode(record, "rerun_from", record.rerun_from),
    )


def require_batch(record: BatchRecord | None, batch_id: str) -> BatchStatus:
    """A stored batch as its status, or BatchNotFoundError."""
    if record is None:
        raise batch_not_found(batch_id)
    return BatchStatus(
        id=record.id,
        total=record.total,
        succeeded=record.succeeded,
        failed=record.failed,
        canceled=record.canceled,
        open=record.open,
        created_at=_time(record.created_at),
        completed_at=None if record.completed_at is None else _time(record.completed_at),
        callback_run_id=record.callback_run_id,
    )


def _waiting(record: RunRecord) -> str | None:
    shared = None if record.gate is None else parse_limit_gate(record.gate)
    if record.waiting_at_gate and shared is not None:
        name, key = shared
        scope = f" for key {key!r}" if key else ""
        return (
            f"waiting: shared limit {name!r}{scope} is at max_concurrency {record.max_concurrency}"
        )
    if record.waiting_at_gate:
        return (
            f"waiting: workflow {record.workflow!r} is at max_concurrency "
            f"{record.max_concurrency} (runs of it start as others end)"
        )
    if record.rate_reserved:
        return f"waiting: rate limited: it may start at {utc_text(record.available_at)}"
    return None


def utc_text(timestamp: float) -> str:
    """A time for messages: ``2026-11-27 06:12:03 UTC``."""
    return _time(timestamp).strftime("%Y-%m-%d %H:%M:%S UTC")


def batch_not_found(batch_id: str) -> BatchNotFoundError:
    """The error for a batch id that names no batch."""
    return BatchNotFoundError(
        f"no batch with id {batch_id!r} exists (a completed batch is deleted with its runs, "
        "by retention)"
    )


def registered_workflow(info: WorkflowInfo) -> RegisteredWorkflow:
    """Decode a registry record."""
    try:
        retry, cron = from_json(info.retry), from_json(info.cron)
        rate_limits = None if info.rate_limits is None else from_json(info.rate_limits)
        limits = None if info.limits is None else from_json(info.limits)
    except ValueError as error:
        raise CorruptRecordError(
            f"workflow {info.name!r}: its registry record is unreadable ({error})"
        ) from error
    return RegisteredWorkflow(
        name=info.name,
        app=info.app,
        queue=info.queue,
        max_concurrency=info.max_concurrency,
        retry=retry,
        cron=cron if isinstance(cron, list) else [],
        updated_at=_time(info.updated_at),
        rate_limits=rate_limits if isinstance(rate_limits, list) else None,
        limits=limits if isinstance(limits, list) else None,
    )


def skipped_tick(record: SkippedTickRecord) -> SkippedTick:
    """Decode a skipped tick's record."""
    return SkippedTick(
        workflow=record.workflow,
        trigger=record.trigger,
        scheduled_at=_time(record.scheduled_at),
        reason=record.reason,
        run_id=record.run_id,
        recorded_at=_time(record.recorded_at),
    )


def step_from_record(run_id: str, record: StepRecord, now: float) -> Step:
    """Decode a saved step; a sleep whose time has come shows as succeeded."""
    status, finished_at = record.status, record.finished_at
    if record.kind == "sleep" and record.wake_at is not None and record.wake_at <= now:
        status, finished_at = "succeeded", record.wake_at
    what = f"step {record.name!r} of run {run_id}"
    try:
        output = from_json(record.output)
        error = from_json(record.error)
        return Step(
            name=record.name,
            kind=record.kind,
            status=status,
            attempts=record.attempts,
            output=output,
            error=None if error is None else RunError.model_validate(error),
            child_run_id=record.child_run_id,
            wake_at=None if record.wake_at is None else _time(record.wake_at),
            started_at=_time(record.started_at),
            finished_at=None if finished_at is None else _time(finished_at),
            position=record.position,
        )
    except ValueError as problem:
        raise CorruptRecordError(f"{what} is unreadable ({problem})") from problem


def status_of(run: Run) -> RunStatus:
    """The short, Convex-shaped status of a run."""
    if run.status in ("scheduled", "queued", "paused"):
        paused = run.status == "paused"
        return Pending(previous_attempts=run.attempts, deadline=run.deadline, paused=paused)
    if run.status in ("running", "suspended"):  # a suspended run's attempt goes on
        return Running(previous_attempts=max(run.attempts - 1, 0), deadline=run.deadline)
    if run.status == "needs_attention":
        reason = run.error.message if run.error is not None else "no reason was stored"
        return NeedsAttention(reason=reason, previous_attempts=max(run.attempts - 1, 0))
    if run.status == "succeeded":
        return Finished(Success(output=run.output))
    if run.status == "failed":
        error = run.error or RunError(type="UnknownError", message="no error was stored")
        return Finished(Failure(error=error))
    return Finished(Canceled(reason=run.cancel_reason))


def require_run(record: RunRecord | None, run_id: str, children: tuple[str, ...] = ()) -> Run:
    """The decoded run, or RunNotFoundError."""
    if record is None:
        raise RunNotFoundError(f"no run with id {run_id!r} exists")
    return run_from_record(record, children)


def _decode(record: RunRecord, field: str, text: str | None) -> Any:
    try:
        return from_json(text)
    except ValueError as error:
        raise CorruptRecordError(
            f"run {record.id}: stored {field} is not valid JSON ({error})"
        ) from error


def _decode_error(record: RunRecord) -> RunError | None:
    value = _decode(record, "error", record.error)
    if value is None:
        return None
    try:
        return RunError.model_validate(value)
    except ValueError as error:
        raise CorruptRecordError(f"run {record.id}: stored error is malformed ({error})") from error


def _time(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=UTC)
