"""Values of the cron tick operations (``Backend.start_tick``, ``list_skipped_ticks``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from workpool.backends.values import NewRun
from workpool.cron import OVERLAPS, Overlap

TickOverlap = Overlap
"""A trigger's overlap policy (see ``Backend.start_tick``)."""

TICK_OVERLAPS = OVERLAPS

SkipReason = Literal["previous_run_active", "buffer_full"]
"""Why a tick was skipped: its trigger's latest run was still active (``skip``), or it
was active and had not started yet (``buffer_one``: the one buffered run)."""

SKIPPED_TICKS_KEPT = 100
"""Skipped ticks kept per (workflow, trigger): recording one more drops the oldest."""


@dataclass(frozen=True, slots=True)
class NewTick:
    """One tick of a cron trigger: the run to start unless the overlap policy skips it."""

    run: NewRun
    """The tick's run; its idempotency key makes each tick start at most one run."""
    trigger: str
    """The trigger's id, unique within its workflow (non-empty)."""
    scheduled_at: float
    """The tick's time (seconds since the epoch)."""
    overlap: TickOverlap = "skip"


@dataclass(frozen=True, slots=True)
class SkippedTickRecord:
    """A tick that started no run, as stored."""

    workflow: str
    trigger: str
    scheduled_at: float
    reason: SkipReason
    run_id: str
    """The trigger's run that was still active (the reason's run)."""
    recorded_at: float
    """The ``now`` of the ``start_tick`` that skipped it."""


@dataclass(frozen=True, slots=True)
class TickStarted:
    """Outcome of ``start_tick``: ``created`` a run, found the run that already holds
    the tick's idempotency key (``created`` False), or ``skipped`` the tick."""

    run_id: str
    """The run created or found; when skipped, the active run that made it skip."""
    created: bool
    skipped: SkippedTickRecord | None = None
