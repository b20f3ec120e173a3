"""Housekeeping: one worker at a time reports activity and deletes expired runs.

Every worker runs a ``Housekeeper``; the one holding the backend lease
``housekeeping`` does the work each interval (default: a minute): it logs the report
of the Convex workpool as one structured event on the ``workpool.report`` logger, and
deletes finished runs older than the pool's ``retention`` in batches. If it dies, its
lease runs out and another worker takes over.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING

from workpool.backends.base import Backend
from workpool.errors import UnservedWorkflowError
from workpool.history import MAX_SPAN
from workpool.serialization import error_json
from workpool.stats import MAX_WINDOW, Stats, Unserved, summarize
from workpool.worker.health import BackendHealth

if TYPE_CHECKING:
    from workpool.settings import Settings

logger = logging.getLogger("workpool.report")

LEASE_NAME = "housekeeping"
PURGE_BATCH = 500
"""Runs deleted per transaction: short enough not to hold up the hot path for long."""
NO_RUNS = 0.0
"""A ``finished_before`` no run has: purge then deletes only old counters."""


class Housekeeper:
    """Reports and purges while this worker holds the housekeeping lease."""

    def __init__(
        self,
        settings: Settings,
        holder: str,
        *,
        interval: timedelta = timedelta(minutes=1),
        batch: int = PURGE_BATCH,
    ) -> None:
        self._settings = settings
        self._holder = holder
        self._interval = interval.total_seconds()
        self._batch = batch
        self._unserved_since: dict[tuple[str, str], float] = {}
        """When this leader first saw each pair unserved (pool clock)."""

    async def run(self, backend: Backend, health: BackendHealth) -> None:
        """Take a step every interval (the first one interval after start), until
        cancelled; a failed step is reported to ``health`` and tried at the next one."""
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.step(backend, self._settings.clock.now())
            except Exception as error:
                health.failed("housekeeper", error)
            else:
                health.succeeded()

    async def step(self, backend: Backend, now: float) -> int | None:
        """Lead if possible, then report and purge; return how many runs were deleted,
        or None if another worker leads."""
        lease = max(2 * self._interval, 1.0)
        if not await backend.acquire_lease(LEASE_NAME, self._holder, lease, now):
            return None
        minute = now // 60 * 60
        snapshot = await backend.get_stats(minute - 60, minute - 1)
        workers = await backend.list_workers(now)  # live now, not a minute ago
        stats = summarize(replace(snapshot, workers=workers), now, timedelta(minutes=1))
        self._report(stats)
        await self._fail_unserved(backend, stats.unserved, now)
        return await self._purge(backend, now)

    def _report(self, stats: Stats) -> None:
        """Log the last whole minute's outcomes and the backlog now, and a warning
        naming the workflows whose runs no live worker serves."""
        if stats.unserved:
            logger.warning(
                "runs wait for workflows no live worker defines: %s",
                "; ".join(item.describe() for item in stats.unserved),
                extra={
                    "event": "unserved",
                    "unserved": [f"{item.queue}/{item.workflow}" for item in stats.unserved],
                },
            )
        if not logger.isEnabledFor(logging.INFO):
            return
        figures = stats.total
        fields = {
            "completed": figures.completed,
            "succeeded": figures.succeeded,
            "failed": figures.failed,
            "retries": figures.retries,
            "canceled": figures.canceled,
            "running": figures.running,
            "backlog": figures.pending,
            "unserved": figures.unserved,
            "failure_rate": round(figures.error_rate or 0.0, 4),
            "permanent_failure_rate": round(figures.permanent_failure_rate or 0.0, 4),
        }
        logger.info(
            "report: %s",
            " ".join(f"{name}={value}" for name, value in fields.items()),
            extra={"event": "report", **fields},
        )

    async def _fail_unserved(self, backend: Backend, unserved: list[Unserved], now: float) -> None:
        """With ``fail_unserved_after``: fail the runs of pairs no live worker has
        served for that long (as seen by this leader) that waited that long."""
        after = self._settings.fail_unserved_after
        pairs = {(item.queue, item.workflow) for item in unserved}
        self._unserved_since = {
            pair: self._unserved_since.get(pair, now) for pair in pairs
        }  # a pair served again starts over
        if after is None:
            return
        limit = after.total_seconds()
        for (queue, workflow), since in self._unserved_since.items():
            if now - since < limit:
                continue
            error = error_json(
                UnservedWorkflowError(
                    f"no worker defined workflow {workflow!r} on queue {queue!r} for "
                    f"{after} (fail_unserved_after); deploy a worker that defines it "
                    "and retry the run"
                ),
                with_traceback=False,
            )
            failed = self._batch
            while failed == self._batch:
                failed = await backend.fail_unserved(
                    queue, workflow, now - limit, self._batch, error, now
                )
            logger.warning(
                "failed the runs of workflow %r on queue %r that waited over %s for a worker",
                workflow,
                queue,
                after,
            )

    async def _purge(self, backend: Backend, now: float) -> int:
        """Delete finished runs past the retention, a batch per transaction."""
        counters_before = now - MAX_WINDOW.total_seconds()
        hours_before = now - MAX_SPAN.total_seconds()
        retention = self._settings.retention
        if retention is None:
            await backend.purge(NO_RUNS, 1, counters_before, hours_before)
            return 0
        cutoff = now - retention.total_seconds()
        total = 0
        while True:
            deleted = await backend.purge(cutoff, self._batch, counters_before, hours_before)
            total += deleted
            if deleted < self._batch:
                break
            await asyncio.sleep(0)  # let the worker's own tasks run between batches
        if total:
            logger.info("deleted %d runs finished over %s ago", total, retention)
        return total
