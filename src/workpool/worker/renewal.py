"""Renewer: extends the leases of the runs a worker holds, and acts on what each renewal
learns (a lease lost, a cancel requested)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from workpool.backends.base import Backend
from workpool.worker.active import ActiveRuns
from workpool.worker.health import BackendHealth
from workpool.worker.options import WorkerOptions

if TYPE_CHECKING:
    from workpool.settings import Settings
    from workpool.worker.metrics import WorkerMetrics


class Renewer:
    """Every ``renew_every``, renews the leases of the worker's active runs in one call."""

    def __init__(
        self,
        active: ActiveRuns,
        options: WorkerOptions,
        settings: Settings,
        health: BackendHealth,
        metrics: WorkerMetrics | None,
    ) -> None:
        self._active = active
        self._options = options
        self._settings = settings
        self._health = health
        self._metrics = metrics

    async def run(self, backend: Backend) -> None:
        """Renew until cancelled; a backend error is reported and the next turn retries."""
        interval = self._options.renew_every.total_seconds()
        while True:
            await asyncio.sleep(interval)
            leases = self._active.renewable_leases()
            if not leases:
                continue
            progress = self._active.unstored_progress()
            lease_seconds = self._options.lease.total_seconds()
            sent_at = time.monotonic()
            try:
                result = await backend.renew(
                    leases, lease_seconds, self._settings.clock.now(), progress=progress
                )
            except Exception as error:
                self._health.failed("renewer", error)
                continue
            self._health.succeeded()
            self._active.progress_stored(progress)
            # By lease, not run id: the same worker may hold a later claim of a run by
            # the time the reply comes (an attempt ended and its retry was due at once).
            kept = [lease for lease in leases if lease.run_id not in result.lost]
            self._active.confirm(kept, sent_at, lease_seconds)
            for lease in leases:
                if lease.run_id in result.lost:
                    lost = self._active.abandon(lease, reason="lease lost")
                    if lost is not None and self._metrics is not None:
                        self._metrics.lease_lost(lost.claimed.workflow)
                elif lease.run_id in result.cancel_requested:
                    self._active.request_cancel(lease, result.canceled_by.get(lease.run_id))
