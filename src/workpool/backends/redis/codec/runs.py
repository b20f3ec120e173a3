"""Runs and claims: ``enqueue.lua``'s flat arguments, finish batches, leases, claimed
rows and run hashes.

JSON texts (inputs, outputs, errors, retry policies, hook contexts) pass through
unchanged; a run hash's fields are checked as they are read (``CorruptRecordError``
names the run and the field).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from workpool.backends.base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    BatchRecord,
    ClaimedRun,
    CompletionHook,
    Finish,
    GateSpec,
    Lease,
    NewRun,
    RateLimitSpec,
    RunRecord,
    SetAside,
)
from workpool.backends.redis.codec.times import milliseconds, seconds
from workpool.backends.redis.keys import gate_suffix
from workpool.errors import CorruptRecordError
from workpool.validation import MAX_COUNT

RUN_FIELDS = 21
"""Flat values per run in ``encode_runs`` (RUN_FIELDS of ``lua/library/enqueueing.lua``)."""


def encode_runs(runs: Sequence[NewRun], now: float) -> list[str]:
    """The flat arguments of ``enqueue.lua`` after ``now``: RUN_FIELDS values per run."""
    args: list[str] = []
    for run in runs:
        hooks = json.dumps([_encode_hook(hook) for hook in run.hooks]) if run.hooks else ""
        if run.idempotency_key is None:
            idempotency = ("", "", "")
        else:
            idempotency = (
                run.idempotency_key,
                seconds(now + run.idempotency_ttl),
                milliseconds(run.idempotency_ttl),
            )
        args += (
            run.id,
            run.workflow,
            run.queue,
            run.input,
            seconds(run.available_at),
            run.retry or "",
            hooks,
            *idempotency,
            *gate_fields(run.max_concurrency, run.concurrency_key),
            encode_rate_limits(run.rate_limits),
            "" if run.timeout is None else seconds(run.timeout),
            *rank_fields(run.priority, run.rank_offset),
            run.debounce_key or "",
            "" if run.debounce_until is None else seconds(run.debounce_until),
            run.trace_context or "",
            "" if run.deadline is None else seconds(run.deadline),
            encode_gates(run.gates),
        )
    return args


def encode_gates(gates: Sequence[GateSpec]) -> str:
    """A run's shared gates as enqueue arguments: JSON text of [[gate, limit], ...], or
    '' for none. Raises ValueError for a limit below 1."""
    for gate in gates:
        if isinstance(gate.limit, bool) or gate.limit < 1:
            raise ValueError(f"gate {gate.gate!r}: limit must be a whole number >= 1")
    pairs = [[gate.gate, gate.limit] for gate in gates]
    return json.dumps(pairs, ensure_ascii=False, separators=(",", ":")) if pairs else ""


def encode_rate_limits(limits: Sequence[RateLimitSpec]) -> str:
    """A run's rate limits as the scripts store them (its hash field ``rate``): JSON
    text of [[limiter id, count, per], ...], or '' for none. Raises ValueError for a
    count below 1 or a ``per`` that is not a positive number of seconds."""
    if not limits:
        return ""
    for limit in limits:
        if isinstance(limit.count, bool) or limit.count < 1:
            raise ValueError(f"rate limit {limit.limiter!r}: count must be a whole number >= 1")
        if not math.isfinite(limit.per) or limit.per <= 0:
            raise ValueError(f"rate limit {limit.limiter!r}: per must be a positive duration")
    triples = [[limit.limiter, limit.count, float(limit.per)] for limit in limits]
    return json.dumps(triples, ensure_ascii=False, separators=(",", ":"))


def rank_fields(priority: int, rank_offset: float) -> tuple[str, str]:
    """(priority, rank_offset) as enqueue arguments and hook fields: '' for 0, so a run
    without a priority stores neither field and keeps its available_at as its score."""
    return (str(priority) if priority else "", seconds(rank_offset) if rank_offset else "")


def gate_fields(max_concurrency: int | None, concurrency_key: str | None) -> tuple[str, str]:
    """(max_concurrency, concurrency key) as enqueue arguments: ('', '') when ungated."""
    if max_concurrency is None:
        return ("", "")
    return (str(max_concurrency), gate_suffix(concurrency_key))


def encode_hook(hook: CompletionHook) -> str:
    """A hook as JSON text, as the scripts store a batch's callback."""
    return json.dumps(_encode_hook(hook))


def _encode_hook(hook: CompletionHook) -> dict[str, Any]:
    item: dict[str, Any] = {
        "workflow": hook.workflow,
        "queue": hook.queue,
        "context": hook.context,
        "retry": hook.retry,
        "on_failure_only": hook.on_failure_only,
    }
    if hook.max_concurrency is not None:
        item["max_concurrency"] = hook.max_concurrency
    priority, offset = rank_fields(hook.priority, hook.rank_offset)
    if priority:
        item["priority"] = priority  # strings, stored into the hook run's hash as they are
    if offset:
        item["rank_offset"] = offset
    if hook.trace_context is not None:
        item["trace"] = hook.trace_context
    return item


def encode_finishes(finishes: Sequence[Finish]) -> str:
    """The JSON batch argument of ``finish.lua``."""
    items = []
    for finish in finishes:
        item: dict[str, Any] = {
            "run_id": finish.lease.run_id,
            "token": finish.lease.token,
            "status": finish.status,
        }
        if finish.output is not None:
            item["output"] = finish.output
        if finish.error is not None:
            item["error"] = finish.error
        if finish.retry_at is not None:
            item["retry_at"] = seconds(finish.retry_at)
        if finish.wake_at is not None:
            item["wake_at"] = seconds(finish.wake_at)
        if finish.waiting_on:
            item["waiting_on"] = list(finish.waiting_on)
        if finish.events:
            item["events"] = list(finish.events)
        if finish.progress is not None:
            item["progress"] = finish.progress
        items.append(item)
    return json.dumps(items, ensure_ascii=False)


def lease_pairs(leases: Sequence[Lease]) -> list[tuple[str, str]]:
    """(run id, token) per lease, as release.lua takes them."""
    return [(lease.run_id, lease.token) for lease in leases]


def renewals(leases: Sequence[Lease], progress: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(run id, token, progress JSON text or '') per lease, as renew.lua takes them."""
    return [(lease.run_id, lease.token, progress.get(lease.run_id, "")) for lease in leases]


def decode_claimed(row: Sequence[Any]) -> ClaimedRun:
    """A ClaimedRun from one row of claim.lua's reply."""
    run_id, token, attempt, workflow, queue, input_, retry, created_at, available_at = row[:9]
    steps, claims, isolated, timeout, elapsed, batch_id, trace_context, woken_by = row[9:17]
    deadline = row[17] if len(row) > 17 else None
    return ClaimedRun(
        lease=Lease(run_id=run_id, token=token),
        workflow=workflow,
        queue=queue,
        input=input_,
        attempt=int(attempt),
        retry=retry,
        created_at=float(created_at),
        available_at=float(available_at),
        has_steps=int(steps) == 1,
        fence=int(claims),
        isolated=int(isolated) == 1,
        timeout=None if timeout is None else float(timeout),
        elapsed=float(elapsed),
        batch_id=batch_id,
        trace_context=trace_context,
        woken_by=woken_by,
        deadline=None if deadline is None else float(deadline),
    )


_DECIMAL = re.compile(r"[0-9.eE+-]+")
_WHOLE = re.compile(r"-?[0-9]{1,16}")
EARLIEST, LATEST = -62135596800.0, 253402300799.0
"""The times a run may hold (years 1 to 9999), as lua/library/checks.lua checks them."""


class _Fields:
    """Reads one run hash (or a batch's), naming it and the field in every
    CorruptRecordError; numbers are read as strictly as lua/library/checks.lua does."""

    def __init__(self, run_id: str, fields: Mapping[str, str], kind: str = "run") -> None:
        self._run_id = f"{kind} {run_id}"
        self._fields = fields

    def text(self, name: str) -> str:
        value = self._fields.get(name)
        if value is None:
            raise CorruptRecordError(f"{self._run_id}: stored field {name!r} is missing")
        return value

    def status(self) -> str:
        status = self.text("status")
        if status not in ACTIVE_STATES and status not in TERMINAL_STATES:
            raise CorruptRecordError(f"{self._run_id}: stored status {status!r} is unknown")
        return status

    def optional_text(self, name: str) -> str | None:
        return self._fields.get(name)

    def integer(self, name: str) -> int:
        text = self.text(name)
        if not _WHOLE.fullmatch(text) or abs(int(text)) > MAX_COUNT:
            raise self._malformed(name, text, "a whole number")
        return int(text)

    def flag(self, name: str) -> bool:
        text = self.text(name)
        if text not in ("0", "1"):
            raise self._malformed(name, text, "0 or 1")
        return text == "1"

    def number(self, name: str) -> float:
        text = self.text(name)
        try:
            value = float(text) if _DECIMAL.fullmatch(text) else math.nan
        except ValueError:  # e.g. "1.2.3"
            value = math.nan
        if not math.isfinite(value):
            raise self._malformed(name, text, "a finite number")
        return value

    def time(self, name: str) -> float:
        value = self.number(name)
        if not EARLIEST <= value <= LATEST:
            raise self._malformed(name, self.text(name), "a time in years 1 to 9999")
        return value

    def optional_number(self, name: str) -> float | None:
        return None if self._fields.get(name) is None else self.number(name)

    def optional_time(self, name: str) -> float | None:
        return None if self._fields.get(name) is None else self.time(name)

    def optional_integer(self, name: str) -> int | None:
        return None if self._fields.get(name) is None else self.integer(name)

    def _malformed(self, name: str, text: str, expected: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"{self._run_id}: stored field {name!r} holds {text!r}, expected {expected}; "
            "the record was altered outside workpool (the run is set aside: repair or "
            "delete it by hand)"
        )


def decode_run(run_id: str, fields: Mapping[str, str]) -> RunRecord:
    """A RunRecord from a run hash (HGETALL), or CorruptRecordError."""
    read = _Fields(run_id, fields)
    return RunRecord(
        id=read.text("id"),
        workflow=read.text("workflow"),
        queue=read.text("queue"),
        status=read.status(),
        attempts=read.integer("attempts"),
        input=read.text("input"),
        output=read.optional_text("output"),
        error=read.optional_text("error"),
        retry=read.optional_text("retry"),
        created_at=read.time("created_at"),
        available_at=read.time("available_at"),
        started_at=read.optional_time("started_at"),
        finished_at=read.optional_time("finished_at"),
        cancel_requested=read.flag("cancel_requested"),
        cancel_reason=read.optional_text("cancel_reason"),
        lease_losses=read.integer("lease_losses"),
        idempotency_key=read.optional_text("idempotency_key"),
        parent_run_id=read.optional_text("parent_run_id"),
        retry_of=read.optional_text("retry_of"),
        retried_as=read.optional_text("retried_as"),
        executions=read.optional_integer("claims") or 0,
        run_time=read.optional_number("run_time") or 0.0,
        max_concurrency=read.optional_integer("gate_limit"),
        gate=read.optional_text("gate"),
        waiting_at_gate=bool(fields.get("gate"))
        and fields.get("status") == "queued"
        and fields.get("admitted") != "1",
        rate_reserved=fields.get("status") == "scheduled" and fields.get("rate_reserved") == "1",
        timeout=read.optional_number("timeout"),
        progress=read.optional_text("progress"),
        priority=read.optional_integer("priority") or 0,
        batch_id=read.optional_text("batch"),
        deadline=read.optional_number("deadline"),
        rerun_from=read.optional_text("rerun_from"),
    )


def decode_set_aside(flat: Sequence[str]) -> tuple[SetAside, ...]:
    """claim.lua's runs set aside, flat (run id, problem) pairs, as SetAside values."""
    return tuple(
        SetAside(run_id=flat[index], problem=flat[index + 1]) for index in range(0, len(flat), 2)
    )


def set_aside_error(run_id: str, problem: str) -> CorruptRecordError:
    """The error for reading a run a script set aside as corrupt."""
    return CorruptRecordError(
        f"run {run_id}: its stored record is corrupt ({problem}); it was set aside and is "
        "never claimed: repair or delete it by hand"
    )


def decode_batch(batch_id: str, fields: Mapping[str, str]) -> BatchRecord:
    """A BatchRecord from a batch hash (HGETALL), or CorruptRecordError."""
    read = _Fields(batch_id, fields, "batch")
    return BatchRecord(
        id=batch_id,
        created_at=read.number("created_at"),
        total=read.integer("total"),
        succeeded=read.integer("succeeded"),
        failed=read.integer("failed"),
        canceled=read.integer("canceled"),
        open=read.integer("open") == 1,
        completed_at=read.optional_number("completed_at"),
        callback_run_id=read.optional_text("callback_run_id"),
    )


def optional_argument(value: str | None) -> str:
    """An optional text as list_runs.lua takes it: '' for None, else '=' + the text (so
    an empty name is still a name)."""
    return "" if value is None else "=" + value
