"""Cron ticks: a trigger's tick starts a run unless the trigger's overlap policy skips it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from workpool.backends.contract.runs import NewRun
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


class CronTicks(Protocol):
    """Starting cron ticks and reading the skipped ones."""

    async def start_tick(self, tick: NewTick, now: float) -> TickStarted:
        """Start a cron tick's run unless its trigger's overlap policy skips it, in ONE
        operation.

        A trigger's latest run is the run that ``start_tick`` last created for its
        (workflow, trigger); it is active unless it ended (or is gone). In order:

        1. The run's idempotency key is held (another leader started this tick): return
           that run, ``created`` False; nothing is written.
        2. ``skip``: the latest run is active; ``buffer_one``: it is active and has not
           started (``queued`` or ``scheduled`` with no execution yet). Then store
           nothing but a ``SkippedTickRecord`` (reason ``previous_run_active`` or
           ``buffer_full``, ``run_id`` the latest run, ``recorded_at`` now), keep the
           newest ``SKIPPED_TICKS_KEPT`` of the (workflow, trigger), and return it in
           ``skipped``. ``allow_all`` never skips. Runs of other triggers, or enqueued
           otherwise, are not looked at: a full gate does not skip a tick.
        3. Else enqueue the run as ``enqueue`` does (it may wait at its gate, or for its
           rate limits), make it the trigger's latest run and return it, ``created``.

        ValueError, writing nothing, for a time that cannot be stored (the run's, now,
        ``scheduled_at``), an empty trigger or an unknown overlap.
        """
        ...

    async def list_skipped_ticks(self, workflow: str | None, limit: int) -> list[SkippedTickRecord]:
        """The newest ``limit`` (>= 1) skipped ticks kept (of ``workflow``, or of every
        workflow), latest ``scheduled_at`` first."""
        ...
