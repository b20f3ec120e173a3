"""The client side: turning PreparedRuns into stored runs, and stored runs into values."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import TypeAdapter

from workpool.backends.base import (
    CompletionHook,
    NewRun,
    RateLimitSpec,
    RunRecord,
    StepRecord,
    WorkflowInfo,
)
from workpool.definitions import PreparedRun, RunOptions, Workflow
from workpool.errors import (
    CorruptRecordError,
    RunCanceledError,
    RunFailedError,
    RunNotFoundError,
)
from workpool.models import (
    Canceled,
    Failure,
    Finished,
    Pending,
    RegisteredWorkflow,
    Run,
    RunError,
    Running,
    RunStatus,
    Step,
    Success,
)
from workpool.options import RateLimit
from workpool.run_ids import PROCESS_RUN_IDS
from workpool.serialization import check_size, from_json, to_json
from workpool.validation import check_name, check_time, duration_seconds, timestamp_of

if TYPE_CHECKING:
    from workpool.app import Workpool

OutputT = TypeVar("OutputT")


def new_run_id(now: float) -> str:
    """A 32-hex-digit id whose first 12 digits are the creation time in ms, greater than
    every id this process made before (see ``workpool.run_ids``): sorted by id, one
    process's runs are in creation order."""
    return PROCESS_RUN_IDS.new(now)


class RunHandle(Generic[OutputT]):
    """A reference to one run: read its status, wait for its result, cancel it."""

    def __init__(
        self, pool: Workpool, run_id: str, output_adapter: TypeAdapter[Any] | None = None
    ) -> None:
        self.pool = pool
        self.id = run_id
        self._output_adapter = output_adapter

    def __repr__(self) -> str:
        return f"<RunHandle {self.id}>"

    async def status(self) -> RunStatus:
        """``Pending``, ``Running`` or ``Finished`` (with the result)."""
        return status_of(await self._read())

    async def result(self, timeout: timedelta | float | None = None) -> OutputT:
        """Wait for the run to finish and return its output.

        Raises RunFailedError or RunCanceledError when it did not succeed, and
        TimeoutError when ``timeout`` (a timedelta or seconds; None: no limit) passes
        first (the run itself goes on).
        """
        seconds = None
        if timeout is not None:
            seconds = duration_seconds(timeout, what="result() timeout", positive=True)
        try:
            async with asyncio.timeout(seconds):
                run = await self._wait_finished()
        except TimeoutError:
            raise TimeoutError(
                f"run {self.id} did not finish within {seconds} s; it keeps going, "
                "call result() again to wait longer"
            ) from None
        if run.status == "failed":
            raise RunFailedError(self.id, run.error)
        if run.status == "canceled":
            raise RunCanceledError(self.id, run.cancel_reason)
        if self._output_adapter is not None:
            return self._output_adapter.validate_python(run.output)  # type: ignore[no-any-return]
        return run.output  # type: ignore[no-any-return]

    async def cancel(self, reason: str | None = None) -> None:
        """Cancel the run (see ``Workpool.cancel``)."""
        await self.pool.cancel(self.id, reason)

    def status_sync(self) -> RunStatus:
        """``status`` for synchronous code."""
        return self.pool.portal.call(self.status(), "handle.status")

    def result_sync(self, timeout: timedelta | float | None = None) -> OutputT:
        """``result`` for synchronous code."""
        return self.pool.portal.call(self.result(timeout), "handle.result")

    def cancel_sync(self, reason: str | None = None) -> None:
        """``cancel`` for synchronous code."""
        self.pool.portal.call(self.cancel(reason), "handle.cancel")

    async def _read(self) -> Run:
        """The run without its children: one backend read."""
        backend = await self.pool.backend()
        return require_run(await backend.get_run(self.id), self.id)

    async def _wait_finished(self) -> Run:
        delay = 0.005
        while True:
            run = await self._read()
            if run.finished:
                return run
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.25)


def prepare_run(
    pool: Workpool, target: Workflow[Any, Any] | str, input: Any, **options: Any
) -> PreparedRun:
    """Prepare a run of a workflow given as an object or a name.

    A name defined on ``pool`` is validated like its workflow's ``run``; an unknown
    name (a workflow defined in another codebase) only needs JSON input.
    """
    if isinstance(target, Workflow):
        return target.prepare(input, **options)
    name = check_name(target, what="workflow name")
    definition = pool.workflows.get(name)
    if definition is not None:
        return definition.prepare(input, **options)
    return PreparedRun(
        name, to_json(input, what=f"input of workflow {name!r}"), RunOptions(**options)
    )


def build_new_run(pool: Workpool, prepared: PreparedRun, now: float) -> NewRun:
    """Resolve queue, retry policy, start time and completion hooks of a prepared run."""
    options = prepared.options
    definition = prepared.definition or pool.workflows.get(prepared.workflow)
    queue = options.queue
    if queue is None:
        queue = definition.queue if definition is not None else "default"
    retry = pool.resolve_retry(options.retry, definition.retries if definition else None)
    limit = pool.max_payload_bytes
    check_size(prepared.input_json, what=f"input of workflow {prepared.workflow!r}", limit=limit)
    ttl = duration_seconds(options.idempotency_ttl, what="idempotency_ttl", positive=True)
    if options.idempotency_key is not None:
        check_time(now + ttl, what="idempotency_ttl (the time the key expires)")
    return NewRun(
        id=new_run_id(now),
        workflow=check_name(prepared.workflow, what="workflow name"),
        queue=check_name(queue, what="queue name"),
        input=prepared.input_json,
        available_at=_available_at(options, now),
        retry=json.dumps(retry.to_json()) if retry is not None else None,
        hooks=_hooks(pool, options, definition),
        idempotency_key=options.idempotency_key,
        idempotency_ttl=ttl,
        max_concurrency=definition.max_concurrency if definition is not None else None,
        concurrency_key=prepared.concurrency_key,
        rate_limits=_rate_limits(pool, definition, prepared, queue),
    )


def _rate_limits(
    pool: Workpool, definition: Workflow[Any, Any] | None, prepared: PreparedRun, queue: str
) -> tuple[RateLimitSpec, ...]:
    limits = []
    if definition is not None and definition.rate_limit is not None:
        key = prepared.rate_key or ""
        limiter = f"workflow:{len(definition.name)}:{definition.name}:{key}"
        limits.append(_spec(limiter, definition.rate_limit))
    queue_limit = pool.queue_rate_limits.get(queue)
    if queue_limit is not None:
        limits.append(_spec(f"queue:{queue}", queue_limit))
    return tuple(limits)


def _spec(limiter: str, limit: RateLimit) -> RateLimitSpec:
    return RateLimitSpec(limiter, limit.count, limit.seconds)


def _available_at(options: RunOptions, now: float) -> float:
    if options.run_at is not None:
        return timestamp_of(options.run_at, what="run_at")
    if options.run_after is not None:
        seconds = duration_seconds(options.run_after, what="run_after")
        return check_time(now + seconds, what="run_after (the time the run may start)")
    return now


def _hooks(
    pool: Workpool, options: RunOptions, definition: Workflow[Any, Any] | None
) -> tuple[CompletionHook, ...]:
    hooks = []
    if options.on_complete is not None:
        context = to_json(options.context, what="on_complete context")
        check_size(context, what="on_complete context", limit=pool.max_payload_bytes)
        hooks.append(_hook(pool, options.on_complete, context, on_failure_only=False))
    if definition is not None and isinstance(definition.on_failure, Workflow):
        hooks.append(_hook(pool, definition.on_failure, "null", on_failure_only=True))
    return tuple(hooks)


def _hook(
    pool: Workpool, target: Workflow[Any, Any] | str, context: str, *, on_failure_only: bool
) -> CompletionHook:
    target_def = target if isinstance(target, Workflow) else pool.workflows.get(target)
    name = target if isinstance(target, str) else target.name
    retry = pool.resolve_retry(None, target_def.retries if target_def else None)
    return CompletionHook(
        workflow=check_name(name, what="on_complete workflow name"),
        queue=target_def.queue if target_def is not None else "default",
        context=context,
        retry=json.dumps(retry.to_json()) if retry is not None else None,
        on_failure_only=on_failure_only,
        max_concurrency=target_def.max_concurrency if target_def is not None else None,
    )


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
        waiting=_waiting(record),
    )


def _waiting(record: RunRecord) -> str | None:
    if record.waiting_at_gate:
        return (
            f"waiting: workflow {record.workflow!r} is at max_concurrency "
            f"{record.max_concurrency} (runs of it start as others end)"
        )
    return None


def registered_workflow(info: WorkflowInfo) -> RegisteredWorkflow:
    """Decode a registry record."""
    try:
        retry, cron = from_json(info.retry), from_json(info.cron)
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
        )
    except ValueError as problem:
        raise CorruptRecordError(f"{what} is unreadable ({problem})") from problem


def status_of(run: Run) -> RunStatus:
    """The short, Convex-shaped status of a run."""
    if run.status in ("scheduled", "queued"):
        return Pending(previous_attempts=run.attempts)
    if run.status == "running":
        return Running(previous_attempts=max(run.attempts - 1, 0))
    if run.status == "suspended":  # its attempt goes on when it resumes
        return Running(previous_attempts=max(run.attempts - 1, 0))
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
