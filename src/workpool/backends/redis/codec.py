"""Translation between the protocol's values and what the scripts read and return.

Times cross as decimal strings (``repr`` of a float) so nothing rounds them; JSON
texts (inputs, outputs, errors, retry policies, hook contexts) pass through unchanged.
A step is stored as one JSON object whose times are decimal strings too (Lua's cjson
would round numbers when it rewrites a step) and whose JSON texts are strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from types import EllipsisType
from typing import Any, cast, get_args

from workpool.backends.base import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    ClaimedRun,
    CompletionHook,
    Finish,
    Lease,
    NewRun,
    PairActivity,
    PairCounters,
    QueueSettings,
    RateLimitSpec,
    RunRecord,
    StatsSnapshot,
    StepKind,
    StepRecord,
    StepStatus,
    WorkerRecord,
    WorkflowInfo,
)
from workpool.backends.redis.keys import gate_suffix, split_pair
from workpool.errors import CorruptRecordError


def seconds(value: float) -> str:
    """A time or duration as the exact decimal string the scripts expect."""
    return repr(float(value))


def milliseconds(duration: float) -> str:
    """A duration as the whole milliseconds of a key's real TTL (PX): rounded up, at
    least 1 (Redis refuses a zero or negative TTL)."""
    return str(max(1, math.ceil(duration * 1000)))


RUN_FIELDS = 14
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
            "1" if run.skip_if_busy else "",
            encode_rate_limits(run.rate_limits),
        )
    return args


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


def gate_fields(max_concurrency: int | None, concurrency_key: str | None) -> tuple[str, str]:
    """(max_concurrency, concurrency key) as enqueue arguments: ('', '') when ungated."""
    if max_concurrency is None:
        return ("", "")
    return (str(max_concurrency), gate_suffix(concurrency_key))


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
        items.append(item)
    return json.dumps(items, ensure_ascii=False)


def encode_queue_change(
    max_parallelism: int | EllipsisType | None, paused: bool | None
) -> tuple[str, str]:
    """The max_parallelism and paused arguments of ``set_queue.lua``: 'keep' leaves a
    setting unchanged, 'none' removes the limit; a limit must be a whole number >= 0."""
    if max_parallelism is ...:
        limit = "keep"
    elif max_parallelism is None:
        limit = "none"
    elif isinstance(max_parallelism, bool) or max_parallelism < 0:
        raise ValueError(
            f"max_parallelism must be a whole number >= 0 or None, not {max_parallelism!r}"
        )
    else:
        limit = str(int(max_parallelism))
    return limit, "keep" if paused is None else ("1" if paused else "0")


def decode_settings(queue: str, max_parallelism: str | None, paused: str | None) -> QueueSettings:
    """QueueSettings from a settings hash's two fields (both None: no settings)."""
    if max_parallelism is None:
        limit = None
    elif max_parallelism.isdigit():
        limit = int(max_parallelism)
    else:
        raise CorruptRecordError(
            f"queue {queue}: stored max_parallelism is not a whole number: {max_parallelism!r}"
        )
    return QueueSettings(name=queue, max_parallelism=limit, paused=paused == "1")


def lease_pairs(leases: Sequence[Lease]) -> list[tuple[str, str]]:
    """(run id, token) per lease, as renew.lua and release.lua take them."""
    return [(lease.run_id, lease.token) for lease in leases]


def decode_claimed(row: Sequence[Any]) -> ClaimedRun:
    """A ClaimedRun from one row of claim.lua's reply."""
    run_id, token, attempt, workflow, queue, input_, retry, created_at, available_at = row[:9]
    steps, claims, isolated = row[9:]
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
        parent_run_id=read.optional_text("parent_run_id"),
        retry_of=read.optional_text("retry_of"),
        retried_as=read.optional_text("retried_as"),
        executions=int(fields.get("claims") or 0),
        run_time=float(fields.get("run_time") or 0.0),
        max_concurrency=int(fields["gate_limit"]) if fields.get("gate_limit") else None,
        waiting_at_gate=bool(fields.get("gate"))
        and fields.get("status") == "queued"
        and fields.get("admitted") != "1",
    )


def optional_argument(value: str | None) -> str:
    """An optional text as list_runs.lua takes it: '' for None, else '=' + the text (so
    an empty name is still a name)."""
    return "" if value is None else "=" + value


COUNTER_NAMES = ("timed", "reaped", "run_time", "succeeded", "failed", "canceled", "retried")
"""The counters a minute's stats hash holds per pair (see lua/library/counters.lua)."""


def decode_stats(
    activity: Sequence[Any],
    counters: Sequence[Any],
    oldest: Sequence[Any],
    workers: Sequence[Any],
    now: float,
) -> StatsSnapshot:
    """A StatsSnapshot from get_stats.lua's reply (four lists; the workers live at
    ``now``), or CorruptRecordError for a pair or counter it cannot read."""
    active = [
        PairActivity(*_split(activity[i]), *(int(n) for n in activity[i + 1 : i + 5]))
        for i in range(0, len(activity), 5)
    ]
    sums: dict[tuple[str, str], dict[str, float]] = {}
    for i in range(0, len(counters), 2):
        counter, _, name = str(counters[i]).partition(":")
        if counter not in COUNTER_NAMES:
            raise CorruptRecordError(f"counters: unknown field {counters[i]!r}")
        sums.setdefault(_split(name), {})[counter] = float(counters[i + 1])
    totals = []
    for (queue, workflow), values in sums.items():
        whole = {name: int(values.get(name, 0)) for name in COUNTER_NAMES if name != "run_time"}
        if not any(whole.values()) and not values.get("run_time"):
            continue
        totals.append(
            PairCounters(
                queue,
                workflow,
                executions=whole["timed"] + whole["reaped"],
                timed=whole["timed"],
                run_time=values.get("run_time", 0.0),
                succeeded=whole["succeeded"],
                failed=whole["failed"],
                canceled=whole["canceled"],
                retried=whole["retried"],
            )
        )
    return StatsSnapshot(
        activity=sorted(active, key=lambda pair: (pair.queue, pair.workflow)),
        counters=sorted(totals, key=lambda pair: (pair.queue, pair.workflow)),
        oldest_claimable={str(oldest[i]): float(oldest[i + 1]) for i in range(0, len(oldest), 2)},
        workers=live_workers(workers, now),
    )


def encode_worker(worker: WorkerRecord) -> str:
    """A worker record as stored in the workers hash."""
    return json.dumps(
        {
            "id": worker.id,
            "app": worker.app,
            "queues": list(worker.queues),
            "workflows": list(worker.workflows),
            "started_at": seconds(worker.started_at),
            "seen_at": seconds(worker.seen_at),
            "expires_at": seconds(worker.expires_at),
        }
    )


def live_workers(texts: Sequence[Any], now: float) -> list[WorkerRecord]:
    """The records (JSON texts) not expired at ``now``, by id; unreadable ones skipped
    (a worker record is advisory: it only says what is served)."""
    workers = []
    for text in texts:
        try:
            data = json.loads(text)
            worker = WorkerRecord(
                id=str(data["id"]),
                app=str(data["app"]),
                queues=tuple(str(queue) for queue in data["queues"]),
                workflows=tuple(str(name) for name in data["workflows"]),
                started_at=float(data["started_at"]),
                seen_at=float(data["seen_at"]),
                expires_at=float(data["expires_at"]),
            )
        except (ValueError, KeyError, TypeError):
            continue
        if worker.expires_at > now:
            workers.append(worker)
    return sorted(workers, key=lambda worker: worker.id)


def _split(name: Any) -> tuple[str, str]:
    """(queue, workflow) of a pair's name, or CorruptRecordError."""
    try:
        return split_pair(str(name))
    except ValueError as error:
        raise CorruptRecordError(f"stats: {error}") from None


STEP_KINDS: frozenset[str] = frozenset(get_args(StepKind))
STEP_STATUSES: frozenset[str] = frozenset(get_args(StepStatus))


def encode_step(step: StepRecord) -> str:
    """The JSON text a step is stored as (its name is the field it is stored under)."""
    item: dict[str, Any] = {
        "kind": step.kind,
        "status": step.status,
        "attempts": step.attempts,
        "started_at": seconds(step.started_at),
    }
    for name in ("output", "error", "child_run_id"):
        if getattr(step, name) is not None:
            item[name] = getattr(step, name)
    for name in ("wake_at", "finished_at"):
        if getattr(step, name) is not None:
            item[name] = seconds(getattr(step, name))
    return json.dumps(item, ensure_ascii=False)


class _StepFields:
    """Reads one stored step, naming the run and step in every CorruptRecordError."""

    def __init__(self, run_id: str, name: str, text: str) -> None:
        self._where = f"run {run_id}, step {name!r}"
        try:
            fields = json.loads(text)
        except ValueError:
            raise self.corrupt(f"not JSON: {text!r}") from None
        if not isinstance(fields, dict):
            raise self.corrupt(f"not a JSON object: {text!r}")
        self._fields: dict[str, Any] = fields

    def corrupt(self, problem: str) -> CorruptRecordError:
        return CorruptRecordError(f"{self._where}: stored step is {problem}")

    def choice(self, name: str, allowed: frozenset[str]) -> str:
        value = self._fields.get(name)
        if not isinstance(value, str) or value not in allowed:
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def integer(self, name: str) -> int:
        value = self._fields.get(name)
        # cjson writes back whole numbers it decoded as integers, but accept 2.0 too.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        value = self._fields.get(name)
        if value is not None and not isinstance(value, str):
            raise self.corrupt(f"invalid: {name} {value!r}")
        return value

    def optional_time(self, name: str) -> float | None:
        text = self.optional_text(name)
        if text is None:
            return None
        try:
            return float(text)
        except ValueError:
            raise self.corrupt(f"invalid: {name} {text!r} is not a number") from None

    def time(self, name: str) -> float:
        value = self.optional_time(name)
        if value is None:
            raise self.corrupt(f"missing {name}")
        return value


def decode_step(run_id: str, name: str, text: str) -> StepRecord:
    """A StepRecord from its stored JSON text, or CorruptRecordError."""
    read = _StepFields(run_id, name, text)
    return StepRecord(
        name=name,
        kind=cast(StepKind, read.choice("kind", STEP_KINDS)),
        status=cast(StepStatus, read.choice("status", STEP_STATUSES)),
        attempts=read.integer("attempts"),
        started_at=read.time("started_at"),
        output=read.optional_text("output"),
        error=read.optional_text("error"),
        child_run_id=read.optional_text("child_run_id"),
        wake_at=read.optional_time("wake_at"),
        finished_at=read.optional_time("finished_at"),
    )


def decode_steps(run_id: str, stored: Mapping[str, str]) -> list[StepRecord]:
    """Every step of a steps hash (HGETALL), oldest ``started_at`` first, then by name."""
    steps = [decode_step(run_id, name, text) for name, text in stored.items()]
    steps.sort(key=lambda step: (step.started_at, step.name))
    return steps


def encode_workflow(workflow: WorkflowInfo, now: float) -> str:
    """The registry record of a workflow, as sync_registry.lua stores it."""
    return json.dumps(
        {
            "app": workflow.app,
            "queue": workflow.queue,
            "max_concurrency": workflow.max_concurrency,
            "retry": workflow.retry,
            "cron": workflow.cron,
            "updated_at": seconds(now),
        },
        ensure_ascii=False,
    )


def decode_workflow(name: str, text: str) -> WorkflowInfo:
    """A WorkflowInfo from its registry record, or CorruptRecordError."""
    try:
        record = json.loads(text)
        limit = record["max_concurrency"]
        return WorkflowInfo(
            name=name,
            app=str(record["app"]),
            queue=str(record["queue"]),
            max_concurrency=None if limit is None else int(limit),
            retry=record["retry"],
            cron=str(record["cron"]),
            updated_at=float(record["updated_at"]),
        )
    except (ValueError, KeyError, TypeError) as error:
        raise CorruptRecordError(
            f"workflow {name!r}: its registry record is unreadable ({error}): {text!r}"
        ) from error
