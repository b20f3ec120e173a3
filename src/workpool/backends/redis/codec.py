"""Translation between the protocol's values and what the scripts read and return.

Times cross as decimal strings (``repr`` of a float) so nothing rounds them; JSON
texts (inputs, outputs, errors, retry policies, hook contexts) pass through unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from workpool.backends.base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    ClaimedRun,
    CompletionHook,
    Finish,
    Lease,
    NewRun,
    RunRecord,
)
from workpool.errors import CorruptRecordError


def seconds(value: float) -> str:
    """A time or duration as the exact decimal string the scripts expect."""
    return repr(float(value))


def encode_runs(runs: Sequence[NewRun], now: float) -> list[str]:
    """The flat arguments of ``enqueue.lua`` after ``now``: ten values per run."""
    args: list[str] = []
    for run in runs:
        hooks = json.dumps([_encode_hook(hook) for hook in run.hooks]) if run.hooks else ""
        if run.idempotency_key is None:
            idempotency = ("", "", "")
        else:
            idempotency = (
                run.idempotency_key,
                seconds(now + run.idempotency_ttl),
                str(max(1, math.ceil(run.idempotency_ttl * 1000))),
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
        )
    return args


def _encode_hook(hook: CompletionHook) -> dict[str, Any]:
    return {
        "workflow": hook.workflow,
        "queue": hook.queue,
        "context": hook.context,
        "retry": hook.retry,
        "on_failure_only": hook.on_failure_only,
    }


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
        items.append(item)
    return json.dumps(items, ensure_ascii=False)


def lease_pairs(leases: Sequence[Lease]) -> list[tuple[str, str]]:
    """(run id, token) per lease, as renew.lua and release.lua take them."""
    return [(lease.run_id, lease.token) for lease in leases]


def decode_claimed(row: Sequence[Any]) -> ClaimedRun:
    """A ClaimedRun from one row of claim.lua's reply."""
    run_id, token, attempt, workflow, queue, input_, retry, created_at, available_at = row
    return ClaimedRun(
        lease=Lease(run_id=run_id, token=token),
        workflow=workflow,
        queue=queue,
        input=input_,
        attempt=int(attempt),
        retry=retry,
        created_at=float(created_at),
        available_at=float(available_at),
    )


class _Fields:
    """Reads one run hash, naming the run and field in every CorruptRecordError."""

    def __init__(self, run_id: str, fields: Mapping[str, str]) -> None:
        self._run_id = run_id
        self._fields = fields

    def text(self, name: str) -> str:
        value = self._fields.get(name)
        if value is None:
            raise CorruptRecordError(f"run {self._run_id}: stored field {name!r} is missing")
        return value

    def status(self) -> str:
        status = self.text("status")
        if status not in ACTIVE_STATES and status not in TERMINAL_STATES:
            raise CorruptRecordError(f"run {self._run_id}: stored status {status!r} is unknown")
        return status

    def optional_text(self, name: str) -> str | None:
        return self._fields.get(name)

    def integer(self, name: str) -> int:
        text = self.text(name)
        try:
            return int(text)
        except ValueError:
            raise self._not_a_number(name, text) from None

    def number(self, name: str) -> float:
        text = self.text(name)
        try:
            return float(text)
        except ValueError:
            raise self._not_a_number(name, text) from None

    def optional_number(self, name: str) -> float | None:
        return None if self._fields.get(name) is None else self.number(name)

    def _not_a_number(self, name: str, text: str) -> CorruptRecordError:
        return CorruptRecordError(
            f"run {self._run_id}: stored field {name!r} is not a number: {text!r}"
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
        created_at=read.number("created_at"),
        available_at=read.number("available_at"),
        started_at=read.optional_number("started_at"),
        finished_at=read.optional_number("finished_at"),
        cancel_requested=read.integer("cancel_requested") == 1,
        cancel_reason=read.optional_text("cancel_reason"),
        lease_losses=read.integer("lease_losses"),
        idempotency_key=read.optional_text("idempotency_key"),
    )
