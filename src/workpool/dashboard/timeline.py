"""A run's steps as a timeline: where each step starts and how long it lasts, as
fractions of the span from the first step's start to the last one's end (or now)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from workpool.models import Step

SHORTEST = 0.004
"""The narrowest bar, as a fraction of the span: an instant step stays visible."""


@dataclass(frozen=True, slots=True)
class StepRow:
    """One step and its bar."""

    step: Step
    offset: float
    """Where its bar starts, from 0 (the span's start) to 1."""
    width: float
    """Its bar's length, as a fraction of the span."""
    duration: timedelta | None
    """Start to finish; None while it waits."""


def timeline(steps: Sequence[Step], now: datetime) -> list[StepRow]:
    """The rows of ``steps`` (oldest first), bars placed on one shared span."""
    if not steps:
        return []
    start = min(step.started_at for step in steps)
    end = max(_end(step, now) for step in steps)
    span = max((end - start).total_seconds(), 1e-6)
    rows = []
    for step in steps:
        offset = (step.started_at - start).total_seconds() / span
        width = (_end(step, now) - step.started_at).total_seconds() / span
        width = max(SHORTEST, min(width, 1.0 - offset))
        duration = step.finished_at - step.started_at if step.finished_at else None
        rows.append(StepRow(step, min(offset, 1.0 - SHORTEST), width, duration))
    return rows


def _end(step: Step, now: datetime) -> datetime:
    """When the step ended, or now while it waits (a sleep's bar reaches its wake-up
    time only once that has come)."""
    if step.finished_at is not None:
        return step.finished_at
    return max(now, step.started_at)
