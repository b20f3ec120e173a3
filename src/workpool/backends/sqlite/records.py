"""Rows to values and back: run records, claimed runs, stored hooks, hook inputs, batches.

Every value read from the database is checked; a NULL in a required column or a value
of the wrong type raises ``CorruptRecordError`` naming the run and the column.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol, get_args

from workpool.backends.base import (
    BatchRecord,
    ClaimedRun,
    CompletionHook,
    Lease,
    RateLimitSpec,
    RunRecord,
    RunState,
    StepKind,
    StepRecord,
    StepStatus,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.errors import CorruptRecordError
from workpool.validation import MAX_COUNT

_STATES: frozenset[str] = frozenset(get_args(RunState))
_STEP_KINDS: frozenset[str] = frozenset(get_args(StepKind))
_STEP_STATES: frozenset[str] = frozenset(get_args(StepStatus))
_HOOK_FIELDS = ("workflow", "queue", "context", "retry", "on_failure_only")
EARLIEST, LATEST = -62135596800.0, 253402300799.0
"""The times a run may hold (years 1 to 9999: what datetime reads)."""


class Row(Protocol):
    """A row read by column name: ``sqlite3.Row``, or a dict (the PostgreSQL backend's)."""

    def __getitem__(self, key: str, /) -> Any: ...


def _corrupt(run_id: object, field: str, value: object, expected: str) -> CorruptRecordError:
    return CorruptRecordError(
        f"run {run_id}: column {field!r} holds {value!r}, expected {expected}; the stored "
        "record is corrupt: restore the database from a backup or cancel the run"
    )


def text(row: Row, field: str) -> str:
    """A required TEXT column."""
    value = row[field]
    if not isinstance(value, str):
        raise _corrupt(row["id"], field, value, "text")
    return value


def optional_text(row: Row, field: str) -> str | None:
    """A nullable TEXT column."""
    return None if row[field] is None else text(row, field)


def integer(row: Row, field: str) -> int:
    """A required INTEGER column (booleans stored as 0/1 included), within +-MAX_COUNT."""
    value = row[field]
    if not isinstance(value, int) or abs(value) > MAX_COUNT:
        raise _corrupt(row["id"], field, value, "an integer")
    return value


def number(row: Row, field: str) -> float:
    """A required REAL column: a finite number."""
    value = row[field]
    if not isinstance(value, int | float) or not math.isfinite(value):
        raise _corrupt(row["id"], field, value, "a finite number")
    return float(value)


def time(row: Row, field: str) -> float:
    """A required REAL column holding a time (in years 1 to 9999)."""
    value = number(row, field)
    if not EARLIEST <= value <= LATEST:
        raise _corrupt(row["id"], field, value, "a time in years 1 to 9999")
    return value


def optional_number(row: Row, field: str) -> float | None:
    """A nullable REAL column."""
    return None if row[field] is None else number(row, field)


def optional_time(row: Row, field: str) -> float | None:
    """A nullable REAL column holding a time."""
    return None if row[field] is None else time(row, field)


def flag(row: Row, field: str) -> bool:
    """A 0/1 INTEGER column."""
    value = integer(row, field)
    if value not in (0, 1):
        raise _corrupt(row["id"], field, value, "0 or 1")
    return value == 1


def run_record(row: Row) -> RunRecord:
    """A ``get_run`` row as a RunRecord."""
    status = text(row, "status")
    if status not in _STATES:
        raise _corrupt(row["id"], "status", status, "a run state")
    return RunRecord(
        id=text(row, "id"),
        workflow=text(row, "workflow"),
        queue=text(row, "queue"),
        status=status,
        attempts=integer(row, "attempts"),
        input=text(row, "input"),
        output=optional_text(row, "output"),
        error=optional_text(row, "error"),
        retry=optional_text(row, "retry"),
        created_at=time(row, "created_at"),
        available_at=time(row, "available_at"),
        started_at=optional_time(row, "started_at"),
        finished_at=optional_time(row, "finished_at"),
        cancel_requested=flag(row, "cancel_requested"),
        cancel_reason=optional_text(row, "cancel_reason"),
        lease_losses=integer(row, "lease_losses"),
        idempotency_key=optional_text(row, "idempotency_key"),
        parent_run_id=optional_text(row, "parent_run_id"),
        retry_of=optional_text(row, "retry_of"),
        retried_as=optional_text(row, "retried_as"),
        executions=integer(row, "claims"),
        run_time=number(row, "run_time"),
        max_concurrency=None if row["gate_limit"] is None else integer(row, "gate_limit"),
        waiting_at_gate=flag(row, "waiting_at_gate"),
        gate=optional_text(row, "gate"),
        rate_reserved=flag(row, "rate_reserved"),
        timeout=optional_number(row, "timeout"),
        deadline=optional_number(row, "deadline"),
        progress=optional_text(row, "progress"),
        priority=integer(row, "priority"),
        batch_id=optional_text(row, "batch_id"),
        rerun_from=optional_text(row, "rerun_from"),
    )


def run_problem(row: Row) -> str | None:
    """What is wrong with a ``runs_to_check`` row (its CorruptRecordError's message), or
    None when a claim, a reap and every later read can trust it."""
    try:
        run_record(row)
        number(row, "rank_offset")
        number(row, "attempt_time")
        flag(row, "has_steps")
        flag(row, "resuming")
        optional_text(row, "trace_context")
        optional_text(row, "woken_by")
        if row["gate"] is not None and row["gate_limit"] is None:
            raise _corrupt(row["id"], "gate_limit", None, "the limit of its gate")
    except CorruptRecordError as error:
        return str(error)
    return None


def checked_run(row: Row) -> RunRecord:
    """A ``get_run`` row as a RunRecord; CorruptRecordError for a run whose record is
    corrupt, as a claim would find it (run_problem), or that a claim set aside."""
    problem = run_problem(row)
    if problem is not None:
        raise CorruptRecordError(problem)
    if row["isolate"] == 2:
        raise CorruptRecordError(
            f"run {row['id']}: a claim found its stored record corrupt and set it aside; "
            "it is never claimed: repair or delete it by hand"
        )
    return run_record(row)


def claimed_run(row: Row) -> ClaimedRun:
    """A ``claim_queued`` row as a ClaimedRun."""
    return ClaimedRun(
        lease=Lease(run_id=text(row, "id"), token=text(row, "lease_token")),
        workflow=text(row, "workflow"),
        queue=text(row, "queue"),
        input=text(row, "input"),
        attempt=integer(row, "attempts"),
        retry=optional_text(row, "retry"),
        created_at=number(row, "created_at"),
        available_at=number(row, "available_at"),
        has_steps=flag(row, "has_steps"),
        fence=integer(row, "claims"),
        isolated=flag(row, "isolate"),
        timeout=optional_number(row, "timeout"),
        deadline=optional_number(row, "deadline"),
        elapsed=number(row, "attempt_time"),
        batch_id=optional_text(row, "batch_id"),
        trace_context=optional_text(row, "trace_context"),
        woken_by=optional_text(row, "woken_by"),
    )


def step_record(row: Row) -> StepRecord:
    """A ``get_steps`` row as a StepRecord; CorruptRecordError names the run and step."""
    kind, status = row["kind"], row["status"]
    if kind not in _STEP_KINDS or status not in _STEP_STATES:
        raise CorruptRecordError(
            f"run {row['run_id']}: step {row['name']!r} has kind {kind!r} and status "
            f"{status!r}; the stored record is corrupt"
        )
    try:
        return StepRecord(
            name=str(row["name"]),
            kind=kind,
            status=status,
            attempts=int(row["attempts"]),
            started_at=float(row["started_at"]),
            output=row["output"],
            error=row["error"],
            child_run_id=row["child_run_id"],
            wake_at=None if row["wake_at"] is None else float(row["wake_at"]),
            finished_at=None if row["finished_at"] is None else float(row["finished_at"]),
            position=None if row["position"] is None else int(row["position"]),
            args_hash=row["args_hash"],
        )
    except (TypeError, ValueError) as error:
        raise CorruptRecordError(
            f"run {row['run_id']}: step {row['name']!r} is unreadable ({error})"
        ) from error


def workflow_info(row: Row) -> WorkflowInfo:
    """A ``list_workflows`` row as a WorkflowInfo."""
    limit = row["max_concurrency"]
    return WorkflowInfo(
        name=str(row["name"]),
        app=str(row["app"]),
        queue=str(row["queue"]),
        max_concurrency=None if limit is None else int(limit),
        retry=row["retry"],
        cron=str(row["cron"]),
        updated_at=float(row["updated_at"]),
        rate_limits=row["rate_limits"],
        limits=row["limits"],
    )


def encode_rate_limits(limits: Sequence[RateLimitSpec]) -> str | None:
    """The ``rate_limits`` column: JSON [[limiter, count, per], ...], or NULL for none."""
    if not limits:
        return None
    return json.dumps([[limit.limiter, limit.count, limit.per] for limit in limits])


def encode_hooks(hooks: Sequence[CompletionHook]) -> str:
    """The ``hooks`` column: a JSON list of objects; context and retry kept as text."""
    fields = (*_HOOK_FIELDS, "max_concurrency", "priority", "rank_offset")
    items = [{field: getattr(hook, field) for field in fields} for hook in hooks]
    for item, hook in zip(items, hooks, strict=True):
        if hook.trace_context is not None:  # (only while tracing: kept out of other rows)
            item["trace_context"] = hook.trace_context
    return json.dumps(items)


def decode_hooks(row: Row, field: str = "hooks") -> list[CompletionHook]:
    """The ``hooks`` column of a row (or a column stored alike) back as CompletionHooks."""
    raw = text(row, field)
    try:
        items = json.loads(raw)
        return [_hook(item) for item in items]
    except (ValueError, TypeError, KeyError) as exc:
        raise _corrupt(row["id"], field, raw, "a JSON list of completion hooks") from exc


def _hook(item: dict[str, Any]) -> CompletionHook:
    values: list[object] = [item[field] for field in _HOOK_FIELDS]
    workflow, queue, context, retry, on_failure_only = values
    if not (isinstance(workflow, str) and isinstance(queue, str) and isinstance(context, str)):
        raise TypeError("hook workflow, queue and context must be text")
    if not (retry is None or isinstance(retry, str)) or not isinstance(on_failure_only, bool):
        raise TypeError("hook retry must be text or null, on_failure_only a boolean")
    limit = item.get("max_concurrency")  # absent in hooks stored before gates existed
    if not (limit is None or isinstance(limit, int)):
        raise TypeError("hook max_concurrency must be an integer or null")
    priority = item.get("priority", 0)  # these two: absent in hooks stored before priorities
    offset = item.get("rank_offset", 0.0)
    if type(priority) is not int or not isinstance(offset, int | float):
        raise TypeError("hook priority must be an integer, rank_offset a number")
    trace_context = item.get("trace_context")
    if not (trace_context is None or isinstance(trace_context, str)):
        raise TypeError("hook trace_context must be text or null")
    return CompletionHook(
        workflow,
        queue,
        context,
        retry,
        on_failure_only,
        limit,
        priority,
        float(offset),
        trace_context,
    )


def hook_input(ended: Row, context: str) -> str:
    """The JSON input of a hook run for a run that just ended (an ``end_run`` row).

    ``{"run_id", "workflow", "context", "result"}`` in that order, with stored JSON
    (context, output, error) embedded as values, as ``CompletionHook`` specifies.
    """
    status = text(ended, "status")
    result: dict[str, Any] = {"status": status}
    if status == "succeeded":
        result["output"] = _json_value(ended, "output", optional_text(ended, "output"))
    elif status == "failed":
        result["error"] = _json_value(ended, "error", optional_text(ended, "error"))
    else:
        result["reason"] = optional_text(ended, "cancel_reason")
    document = {
        "run_id": text(ended, "id"),
        "workflow": text(ended, "workflow"),
        "context": _json_value(ended, "hooks", context),
        "result": result,
    }
    return json.dumps(document, separators=(",", ":"))


def batch_record(row: Row) -> BatchRecord:
    """A ``get_batch`` row (or one alike) as a BatchRecord."""
    return BatchRecord(
        id=text(row, "id"),
        created_at=number(row, "created_at"),
        total=integer(row, "total"),
        succeeded=integer(row, "succeeded"),
        failed=integer(row, "failed"),
        canceled=integer(row, "canceled"),
        open=flag(row, "open"),
        completed_at=optional_number(row, "completed_at"),
        callback_run_id=optional_text(row, "callback_run_id"),
    )


def batch_input(batch: BatchRecord, context: str, failed_run_ids: list[str]) -> str:
    """The JSON input of a batch's callback run, as ``NewBatch`` specifies."""
    document = {
        "batch_id": batch.id,
        "context": json.loads(context),
        "total": batch.total,
        "succeeded": batch.succeeded,
        "failed": batch.failed,
        "canceled": batch.canceled,
        "failed_run_ids": failed_run_ids,
    }
    return json.dumps(document, separators=(",", ":"))


def _json_value(row: Row, field: str, stored: str | None) -> Any:
    """Parse stored JSON text (None stays None)."""
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError as exc:
        raise _corrupt(row["id"], field, stored, "JSON text") from exc


def worker_record(row: Row) -> WorkerRecord:
    """A ``live_workers`` row as a WorkerRecord."""
    return WorkerRecord(
        id=text(row, "id"),
        app=text(row, "app"),
        queues=tuple(json.loads(text(row, "queues"))),
        workflows=tuple(json.loads(text(row, "workflows"))),
        started_at=number(row, "started_at"),
        seen_at=number(row, "seen_at"),
        expires_at=number(row, "expires_at"),
    )
