"""The runs a worker holds right now, and what may be done to them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from workpool.backends.base import ClaimedRun, Finish, Lease
from workpool.engine.context import RunContext
from workpool.engine.fencing import LocalLease

logger = logging.getLogger("workpool.worker")


@dataclass
class ActiveRun:
    """One claimed run: its lease, its context and the task running its handler."""

    claimed: ClaimedRun
    ctx: RunContext
    task: asyncio.Task[Finish]
    started_at: float = 0.0
    """When the worker started it (the pool clock), for the completed event's duration."""
    abandoned: bool = False
    """Set when the lease is gone or handed back: the run's outcome is not written."""
    lease: LocalLease | None = None
    """The local deadline of the run's last confirmed lease (None: not fenced)."""
    fence_timer: asyncio.TimerHandle | None = None
    """Interrupts the handler at that deadline unless a renewal moves it first."""
    give_up_timer: asyncio.TimerHandle | None = None
    """Abandons a run whose handler outlives its time limit by a lease (see
    ``ActiveRuns.give_up_after``)."""

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.claimed.lease.run_id


class ActiveRuns:
    """Index of held runs by id, and the slots they take.

    A slot is taken while a handler executes. A run whose handler is done but whose
    outcome is not written yet is still held (its lease is renewed) but frees its
    slot, so the next claim overlaps the write instead of waiting for it. At most
    ``HELD_PER_SLOT`` runs per slot (and ``HELD_BEYOND_SLOTS`` more than the slots, if
    that is more) are held, which bounds what a slow backend lets pile up.
    """

    HELD_PER_SLOT = 2
    HELD_BEYOND_SLOTS = 200
    """With few slots, two per slot would cap each finish write at a handful of
    outcomes: 10 slots drained short runs at 10 outcomes a write, three quarters of
    what 100 slots do (B2 "1 process, default --concurrency 10")."""

    def __init__(self) -> None:
        self._runs: dict[str, ActiveRun] = {}
        self._executing = 0
        self._slot_freed = asyncio.Event()
        self._changes = 0
        """Counts slots freed and runs left, so a waiter misses none (see wait_for_change)."""
        self.slots_freed = 0
        """How many times a handler ended and freed its slot, so far."""
        self.on_change: Callable[[], None] | None = None
        """Called each time a slot frees or a run leaves (the worker then starts the
        runs it holds ahead that now fit)."""

    def __len__(self) -> int:
        return len(self._runs)

    def free_slots(self, concurrency: int) -> int:
        """How many more runs may be claimed now by a worker with ``concurrency`` slots."""
        held = concurrency + max(concurrency * (self.HELD_PER_SLOT - 1), self.HELD_BEYOND_SLOTS)
        return min(concurrency - self._executing, held - len(self._runs))

    def add(self, entry: ActiveRun) -> None:
        """Track a newly claimed run; its handler takes a slot."""
        self._runs[entry.run_id] = entry
        self._executing += 1

    def free_slot(self) -> None:
        """A held run's handler finished (any way): free the slot it took."""
        self._executing -= 1
        self.slots_freed += 1
        self._changed()

    def remove(self, entry: ActiveRun) -> None:
        """Forget a run (outcome written, lost or released)."""
        for timer in (entry.fence_timer, entry.give_up_timer):
            if timer is not None:
                timer.cancel()
        if self._runs.get(entry.run_id) is entry:
            del self._runs[entry.run_id]
            self._changed()

    def _changed(self) -> None:
        self._changes += 1
        self._slot_freed.set()
        if self.on_change is not None:
            self.on_change()

    @property
    def changes(self) -> int:
        """How many times a slot was freed or a run left, so far."""
        return self._changes

    async def wait_for_change(self, since: int) -> None:
        """Return once a slot was freed or a run left after ``changes`` was ``since``
        (at once if that already happened)."""
        while self._changes == since:
            self._slot_freed.clear()
            await self._slot_freed.wait()

    def fence(self, entry: ActiveRun) -> None:
        """(Re)arm the timer that abandons ``entry`` when its local lease runs out, so a
        stalled worker stops the run one scheduling delay after it resumes."""
        if entry.fence_timer is not None:
            entry.fence_timer.cancel()
        if entry.lease is None or entry.abandoned:
            return
        loop = asyncio.get_running_loop()
        entry.fence_timer = loop.call_later(
            max(0.0, entry.lease.remaining()), self._lease_ran_out, entry
        )

    def give_up_after(self, entry: ActiveRun, seconds: float) -> None:
        """Abandon ``entry`` if its handler still runs ``seconds`` from now: past its
        time limit it was interrupted, and a handler that swallows the interruption
        must not keep the run (its lease is no longer renewed, so it expires and
        another worker takes the run)."""
        loop = asyncio.get_running_loop()
        entry.give_up_timer = loop.call_later(seconds, self._overdue, entry)

    def _overdue(self, entry: ActiveRun) -> None:
        if entry.task.done() or entry.abandoned or self._runs.get(entry.run_id) is not entry:
            return
        logger.warning(
            "run %s: its handler ignored its time limit for a whole lease; the lease is "
            "no longer renewed, so another worker takes the run when it expires",
            entry.run_id,
        )
        self.abandon(entry.claimed.lease, reason="handler ignored its time limit")

    def unstored_progress(self) -> dict[str, str]:
        """The progress each held run reported and did not store yet (run id -> JSON)."""
        reported = {}
        for entry in self._runs.values():
            progress = entry.ctx.unstored_progress()
            if progress is not None and not entry.abandoned:
                reported[entry.run_id] = progress
        return reported

    def progress_stored(self, progress: dict[str, str]) -> None:
        """A renewal stored this progress (from ``unstored_progress``)."""
        for run_id, text in progress.items():
            entry = self._runs.get(run_id)
            if entry is not None:
                entry.ctx.progress_stored(text)

    def holding(self, lease: Lease) -> ActiveRun | None:
        """The run held under ``lease``: None if it is not held, or held under a later
        claim (a renewal or a cancel of the earlier claim must not touch it)."""
        entry = self._runs.get(lease.run_id)
        return entry if entry is not None and entry.claimed.lease == lease else None

    def confirm(self, leases: Iterable[Lease], sent_at: float, lease_seconds: float) -> None:
        """A renewal sent at ``sent_at`` (monotonic) kept these leases."""
        for lease in leases:
            entry = self.holding(lease)
            if entry is not None and entry.lease is not None and not entry.abandoned:
                entry.lease.confirm(sent_at, lease_seconds)
                self.fence(entry)

    def _lease_ran_out(self, entry: ActiveRun) -> None:
        if entry.abandoned or self._runs.get(entry.run_id) is not entry:
            return
        if entry.task.done():
            return  # its outcome waits to be written: the finisher checks the lease first
        logger.warning(
            "run %s: lease not renewed in time (worker stalled or backend unreachable); "
            "another worker may take it, so this one stops it",
            entry.run_id,
        )
        entry.ctx.request_cancel()  # a sync handler sees ctx.cancelled
        self.abandon(entry.claimed.lease, reason="local lease ran out")

    def renewable_leases(self) -> list[Lease]:
        """Leases still held, including runs whose outcome waits to be written."""
        return [entry.claimed.lease for entry in self._runs.values() if not entry.abandoned]

    def handler_tasks(self) -> list[asyncio.Task[Finish]]:
        """Tasks of handlers still running."""
        return [entry.task for entry in self._runs.values() if not entry.task.done()]

    def abandon(self, lease: Lease, *, reason: str) -> ActiveRun | None:
        """Stop the run held under ``lease``, whose lease is gone, without writing its
        outcome; return it, or None if it was not running (unknown, held under a later
        claim, or its handler already done)."""
        entry = self.holding(lease)
        if entry is None or entry.task.done():
            return None  # already finished: its outcome is on its way or written
        logger.warning("run %s abandoned (%s)", lease.run_id, reason)
        self._stop(entry)
        return entry

    def _stop(self, entry: ActiveRun) -> None:
        """Interrupt the handler of ``entry``, whose outcome is then not written."""
        entry.abandoned = True
        if entry.fence_timer is not None:
            entry.fence_timer.cancel()
        entry.task.cancel()

    def hand_back_unfinished(self) -> tuple[list[Lease], list[Lease]]:
        """Stop every run whose handler still runs (the worker shuts down); return the
        leases to hand back, and those whose attempt is used: a handler past its time
        limit (the others' next execution continues their attempt)."""
        handed_back, used = [], []
        for entry in list(self._runs.values()):
            if entry.task.done() or entry.abandoned:
                continue
            if entry.ctx.timed_out:
                logger.warning(
                    "run %s abandoned (worker shutting down, its handler past its time "
                    "limit): its attempt is used",
                    entry.run_id,
                )
                used.append(entry.claimed.lease)
            else:
                logger.info(
                    "run %s handed back (worker shutting down): its next execution "
                    "continues attempt %d",
                    entry.run_id,
                    entry.claimed.attempt,
                )
                handed_back.append(entry.claimed.lease)
            self._stop(entry)
        return handed_back, used

    def request_cancel(self, lease: Lease, canceled_by: str | None = None) -> None:
        """Interrupt the run held under ``lease``, whose cancel was requested (async:
        now; sync: via ctx); ``canceled_by``: the cancel's trace context, if any."""
        entry = self.holding(lease)
        if entry is None or entry.task.done() or entry.ctx.cancelled:
            return
        logger.info("run %s: cancel requested, interrupting", lease.run_id)
        entry.ctx.request_cancel(canceled_by)
        entry.task.cancel()
