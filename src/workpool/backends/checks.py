"""Checks of the times a write would store, run by both backends before its first write.

The client refuses bad values at the API edge; these catch a value that got past it
(a bug, a broken clock, a direct caller of the protocol). A time must be storable
(``workpool.validation.storable_time``), so every stored time reads back. A bad value
raises ValueError naming the run and field, and the operation writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from workpool.backends.base import (
    MAX_RANK_OFFSET,
    TICK_OVERLAPS,
    Finish,
    NewBatch,
    NewRun,
    NewTick,
    StepRecord,
)
from workpool.validation import MAX_TIMEOUT, storable_time


def check_new_runs(runs: Sequence[NewRun], now: float) -> None:
    """Refuse a batch of runs if any holds a time or key lifetime that cannot be stored."""
    check_now(now)
    for run in runs:
        _check(run.id, "available_at", run.available_at)
        _check_offset(run.id, "rank_offset", run.rank_offset)
        for index, hook in enumerate(run.hooks):
            _check_offset(run.id, f"rank_offset of hook {index}", hook.rank_offset)
        if run.idempotency_key is not None:
            if not run.idempotency_ttl > 0:
                raise ValueError(
                    f"run {run.id}: idempotency_ttl {run.idempotency_ttl!r} is not a positive "
                    "number of seconds; nothing was written"
                )
            _check(run.id, "idempotency_ttl (the key's expiry)", now + run.idempotency_ttl)
        if run.timeout is not None and not 0 < run.timeout <= MAX_TIMEOUT:
            raise ValueError(
                f"run {run.id}: timeout {run.timeout!r} is not a number of seconds between 0 "
                f"and {MAX_TIMEOUT:g}; nothing was written"
            )
        if run.debounce_key is not None:
            _check_debounced(run)


def check_tick(tick: NewTick, now: float) -> None:
    """Refuse a cron tick with a bad run, time, trigger id or overlap policy."""
    check_new_runs([tick.run], now)
    _check(tick.run.id, "the tick's scheduled_at", tick.scheduled_at)
    if not tick.trigger:
        raise ValueError(f"run {tick.run.id}: the tick's trigger is empty; nothing was written")
    if tick.overlap not in TICK_OVERLAPS:
        raise ValueError(
            f"run {tick.run.id}: the tick's overlap {tick.overlap!r} is not one of "
            f"{', '.join(TICK_OVERLAPS)}; nothing was written"
        )


def _check_debounced(run: NewRun) -> None:
    if run.idempotency_key is not None or run.batch_id is not None:
        raise ValueError(
            f"run {run.id}: a debounced run has no idempotency key and no batch; nothing "
            "was written"
        )
    if run.debounce_until is not None:
        _check(run.id, "debounce_until", run.debounce_until)


def check_batch(runs: Sequence[NewRun], batch: NewBatch | None) -> str | None:
    """The batch id the runs of one enqueue share (None: no batch); ValueError if some
    runs have another batch id or none, or the id is not one a backend stores."""
    batch_id = batch.id if batch is not None else runs[0].batch_id if runs else None
    for run in runs:
        if run.batch_id != batch_id:
            raise ValueError(
                f"run {run.id}: its batch_id {run.batch_id!r} is not the batch id "
                f"{batch_id!r} of the enqueue; one enqueue stores runs of one batch, or "
                "of none; nothing was written"
            )
    if batch_id is not None and (not batch_id or ":" in batch_id):
        raise ValueError(f"batch id {batch_id!r} is empty or holds ':'; nothing was written")
    return batch_id


def check_finishes(finishes: Sequence[Finish], now: float) -> None:
    """Refuse a batch of outcomes if any holds a time that cannot be stored."""
    check_now(now)
    for finish in finishes:
        for field in ("retry_at", "wake_at"):
            value = getattr(finish, field)
            if value is not None:
                _check(finish.lease.run_id, field, value)


def check_step(run_id: str, step: StepRecord, now: float, child: NewRun | None) -> None:
    """Refuse a step (and its child run) if either holds a time that cannot be stored."""
    check_now(now)
    _check(run_id, f"step {step.name!r} started_at", step.started_at)
    for field in ("wake_at", "finished_at"):
        value = getattr(step, field)
        if value is not None:
            _check(run_id, f"step {step.name!r} {field}", value)
    if step.position is not None and not 0 <= step.position <= 2**53:
        raise ValueError(
            f"run {run_id}: step {step.name!r} position {step.position!r} is not a count"
        )
    if child is not None:
        if child.batch_id is not None or child.debounce_key is not None:
            raise ValueError(f"run {child.id}: a child run has no batch and no debounce")
        check_new_runs([child], now)


def check_now(now: float) -> None:
    """Refuse an operation at a time that cannot be stored (a broken clock)."""
    if not storable_time(now):
        raise ValueError(f"now is {now!r}, not a time workpool can store; nothing was written")


def _check(run_id: str, field: str, value: float) -> None:
    if not storable_time(value):
        raise ValueError(
            f"run {run_id}: {field} is {value!r}, not a time workpool can store (finite, "
            "between years 1 and 9999); nothing was written"
        )


def _check_offset(run_id: str, field: str, value: float) -> None:
    if not (math.isfinite(value) and abs(value) <= MAX_RANK_OFFSET):
        raise ValueError(
            f"run {run_id}: {field} is {value!r}, not a finite number of seconds within "
            f"±{MAX_RANK_OFFSET:.0e}; nothing was written"
        )
