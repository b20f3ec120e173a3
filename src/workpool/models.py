"""Frozen value types returned to users: run records, statuses, completion results,
batches."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RunState = Literal[
    "scheduled",
    "queued",
    "running",
    "suspended",
    "needs_attention",
    "paused",
    "succeeded",
    "failed",
    "canceled",
]
"""``suspended``: waiting on a child run or a sleep, holding no worker slot.
``needs_attention``: stopped because its saved steps no longer fit its code (its error
says why), holding no slot, until rerun from a step or canceled.
``paused``: a queued or scheduled run an operator paused: never started, holding no slot,
until resumed or canceled."""


class RunError(BaseModel):
    """A failure as stored: exception type name, message and formatted traceback."""

    model_config = ConfigDict(frozen=True)

    type: str
    message: str
    traceback: str | None = None


class Success(BaseModel):
    """The run returned ``output``."""

    model_config = ConfigDict(frozen=True)

    status: Literal["succeeded"] = "succeeded"
    output: Any = None


class Failure(BaseModel):
    """The run failed for good with ``error``."""

    model_config = ConfigDict(frozen=True)

    status: Literal["failed"] = "failed"
    error: RunError


class Canceled(BaseModel):
    """The run was canceled, with the reason given to cancel, if any."""

    model_config = ConfigDict(frozen=True)

    status: Literal["canceled"] = "canceled"
    reason: str | None = None


RunResult = Annotated[Success | Failure | Canceled, Field(discriminator="status")]
"""How a finished run ended."""


class OnComplete(BaseModel):
    """Input of an ``on_complete`` (or ``on_failure``) workflow: which run ended, and how."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    workflow: str
    context: Any = None
    result: RunResult


class OnBatchComplete(BaseModel):
    """Input of a batch's ``on_complete`` workflow: how its runs ended."""

    model_config = ConfigDict(frozen=True)

    batch_id: str
    context: Any = None
    """The ``context`` given to ``pool.batch``."""
    total: int
    """Runs in the batch."""
    succeeded: int
    failed: int
    """Runs that failed for good (after their last attempt)."""
    canceled: int
    failed_run_ids: list[str]
    """The first 1,000 runs to fail, in the order they failed (``failed`` counts them all)."""


@dataclass(frozen=True, slots=True)
class Pending:
    """The run waits to start (queued, scheduled, waiting out a retry backoff, or paused
    by an operator)."""

    previous_attempts: int
    state: Literal["pending"] = "pending"
    deadline: datetime | None = None
    """When the whole run must have ended, if it has a deadline."""
    paused: bool = False
    """An operator paused it (``pause_run``): it starts only once resumed."""


@dataclass(frozen=True, slots=True)
class Running:
    """The run is executing in a worker, or suspended while it waits on a step."""

    previous_attempts: int
    state: Literal["running"] = "running"
    deadline: datetime | None = None
    """When the whole run must have ended, if it has a deadline."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The run reached a terminal state; ``result`` says how."""

    result: Success | Failure | Canceled
    state: Literal["finished"] = "finished"


@dataclass(frozen=True, slots=True)
class NeedsAttention:
    """The run stopped because its saved steps no longer fit its code: ``reason`` says
    how. It holds no slot; rerun it from a step or cancel it."""

    reason: str
    previous_attempts: int
    state: Literal["needs_attention"] = "needs_attention"


RunStatus = Pending | Running | NeedsAttention | Finished
"""The short status of a run, shaped as in the Convex workpool."""


@dataclass(frozen=True, slots=True)
class Run:
    """The full record of a run."""

    id: str
    workflow: str
    queue: str
    status: RunState
    attempts: int
    """Attempts started so far; it never goes down. An attempt is one try of the run
    that its retry policy counts: resuming after a durable wait (a child, a sleep) is
    the same attempt; a restart after a lost worker is a new one."""
    input: Any
    """The input as stored (JSON value)."""
    output: Any
    """The output as stored (JSON value), for succeeded runs; else None."""
    error: RunError | None
    """The latest failure, if any (kept across retries)."""
    created_at: datetime
    available_at: datetime
    """When the run may start (or, once started, when it became available)."""
    started_at: datetime | None
    """When the latest attempt started."""
    finished_at: datetime | None
    cancel_requested: bool
    cancel_reason: str | None
    idempotency_key: str | None
    parent_run_id: str | None = None
    """The run whose step started this one, if any."""
    children: tuple[str, ...] = ()
    """Runs started by this run's steps (``run_workflow``, ``emit_workflow``), oldest
    first; filled by ``get_run`` (``list_runs`` leaves it empty)."""
    retry_of: str | None = None
    """The run this one re-runs (``Workpool.retry_run``), if any."""
    retried_as: str | None = None
    """The run that re-runs this one, if any."""
    executions: int = 0
    """How many times a worker took the run: attempts, plus resumes after a durable
    wait, plus restarts of an attempt handed back at a worker's shutdown, plus claims
    handed back before the handler began (runs a worker held ahead of its slots)."""
    run_time: timedelta = timedelta(0)
    """Time spent executing, every execution added up (``started_at`` to
    ``finished_at`` is the last execution only, waits included)."""
    priority: int = 0
    """Its priority, from -100 to 100: within a queue, higher runs are claimed first
    (see ``Workpool.queue``'s ``priority_aging``)."""
    waiting: str | None = None
    """Why a pending run cannot start yet, when the record tells: e.g. "waiting: workflow
    'invoice' is at max_concurrency 1", or "waiting: rate limited: it may start at ...".
    ``Workpool.waiting_reason`` also knows about workers, scheduled starts and queue
    settings."""
    timeout: timedelta | None = None
    """The run's own limit on one attempt's execution, if it was given one (else its
    workflow's ``timeout`` applies, as the worker defines it)."""
    progress: Any = None
    """The latest value its handler reported with ``ctx.set_progress`` (JSON), if any."""
    batch_id: str | None = None
    """The batch it belongs to (``Workpool.batch``), if any."""
    deadline: datetime | None = None
    """When the whole run must have ended (``deadline=``), if it has a deadline: past
    it the run fails with ``DeadlineExceededError``."""
    rerun_from: Any = None
    """The latest ``Workpool.rerun(from_step=...)``: ``{"step", "reason", "at"}``."""

    @property
    def finished(self) -> bool:
        """Whether the run reached a terminal state."""
        return self.status in ("succeeded", "failed", "canceled")


@dataclass(frozen=True, slots=True)
class BatchStatus:
    """A batch's counts so far (``Batch.status``)."""

    id: str
    total: int
    """Runs stored in it so far."""
    succeeded: int
    failed: int
    canceled: int
    open: bool
    """Whether runs may still be added (``Batch.add``) until ``Batch.close``."""
    created_at: datetime
    completed_at: datetime | None
    """When it completed: closed, and its last run ended (its callback enqueued then)."""
    callback_run_id: str | None
    """The run of its ``on_complete`` workflow, once enqueued."""

    @property
    def pending(self) -> int:
        """Runs that have not ended yet."""
        return self.total - self.succeeded - self.failed - self.canceled

    @property
    def completed(self) -> bool:
        """Whether it completed (closed, every run ended)."""
        return self.completed_at is not None


@dataclass(frozen=True, slots=True)
class RunList:
    """One page of ``Workpool.list_runs``, newest first."""

    runs: list[Run]
    cursor: str | None
    """Pass as ``cursor=`` for the next page; None when there is no more."""


@dataclass(frozen=True, slots=True)
class Step:
    """One saved step of a run (``ctx.step.*``), as ``Workpool.get_steps`` reports it."""

    name: str
    kind: Literal["run", "workflow", "emit", "sleep", "event"]
    """``run``: a function's result; ``workflow``: a child run awaited; ``emit``: a child
    run started and not awaited; ``sleep``: a durable timer; ``event``: an event awaited
    (``wait_for_event``)."""
    status: Literal["waiting", "succeeded", "failed", "canceled"]
    """``waiting``: its child, timer or event is pending; ``canceled``: its child was
    canceled."""
    attempts: int
    """Executions of the step that reached an outcome (a failed one is run again)."""
    output: Any
    """The saved result (JSON value); an ``emit`` step's is the child's run id, an
    ``event`` step's the event's payload (None if the wait timed out)."""
    error: RunError | None
    child_run_id: str | None
    wake_at: datetime | None
    """A sleep's end, or when waiting for a child or an event times out."""
    started_at: datetime
    finished_at: datetime | None
    position: int | None = None
    """Where the execution that saved it reached it among the run's steps, from 0."""


@dataclass(frozen=True, slots=True)
class RegisteredWorkflow:
    """A workflow as the workers of an app registered it (``Workpool.list_workflows``)."""

    name: str
    app: str
    queue: str
    max_concurrency: int | None
    retry: Any
    """The retry policy as stored (JSON), or None: one attempt."""
    cron: list[Any]
    updated_at: datetime
    """When a worker of the app last started with this definition."""
    rate_limits: list[Any] | None = None
    """The rate limits its runs get, as its workers define them: a list of
    {"scope": "workflow" or "queue", "count", "per" (seconds), "keyed"}; None if a
    worker of an earlier version registered it."""
    limits: list[Any] | None = None
    """The shared limits (``Workpool.limit``) its runs count against: a list of {"name",
    "max_concurrency", "rate": {"count", "per"} or None, "keyed"}; None if a worker of
    an earlier version registered it."""


@dataclass(frozen=True, slots=True)
class SkippedTick:
    """A cron tick that started no run (``Workpool.list_skipped_ticks``)."""

    workflow: str
    trigger: str
    """The trigger's id: its ``name``, else ``"<expression> <timezone>"``."""
    scheduled_at: datetime
    """The tick's time (UTC)."""
    reason: Literal["previous_run_active", "buffer_full"]
    """``previous_run_active``: the trigger's overlap is ``skip`` and its previous run was
    still active; ``buffer_full``: it is ``buffer_one`` and the run it buffers had not
    started yet."""
    run_id: str
    """That active run of the trigger."""
    recorded_at: datetime

    def describe(self) -> str:
        """Why the tick was skipped, in words."""
        if self.reason == "buffer_full":
            return f"its buffered run {self.run_id} had not started yet (overlap buffer_one)"
        return f"its previous run {self.run_id} was still active (overlap skip)"


@dataclass(frozen=True, slots=True)
class RunFilter:
    """The runs a bulk action (``retry_runs``, ``cancel_runs``, ``delete_runs``) selects:
    those matching every field given. ``status``: one state or several; None: every
    state the action applies to."""

    workflow: str | None = None
    queue: str | None = None
    status: RunState | tuple[RunState, ...] | None = None
    error_type: str | None = None
    """The type name of the run's stored error, as ``Run.error.type`` (``"ValueError"``)."""
    since: datetime | None = None
    """Only runs created at or after this time (naive: local time)."""
    until: datetime | None = None
    """Only runs created before this time (naive: local time)."""


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """The failed runs stored of one workflow with one error type (``pool.failures()``)."""

    workflow: str
    error_type: str
    """The type name of their error ('' when the stored error had none)."""
    count: int
    first_seen: datetime
    """When the earliest of them failed (since the group last had no run)."""
    last_seen: datetime
    """When the latest failed."""
    example_run_id: str | None
    """The latest failed run, or None if it has been deleted since."""

    def run_filter(self) -> RunFilter:
        """The filter that selects these runs (``pool.retry_runs(group.run_filter())``)."""
        return RunFilter(workflow=self.workflow, status="failed", error_type=self.error_type)
