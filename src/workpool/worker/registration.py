"""Registration: what a worker tells the store about itself, and keeps telling it.

At start a worker records its app's workflow definitions in the registry
(``sync_registry``, which also removes its app's stale ones) and the defaults of the
queues it serves that its pool declared; then, every ``HEARTBEAT_EVERY``, its worker
record (what it serves, for ``stats`` and ``workpool queues``).

A store can lose what the worker wrote: Redis restarted without persistence, a
FLUSHALL, rows deleted from SQLite. The heartbeat answers, in the same operation, which
of the worker's workflows have no registry record (one lookup per name; nothing is
read or written when none is missing), and the worker then restores those records
(``restore_registry``, which never replaces a record another worker wrote meanwhile)
and declares its queues' defaults again (kept if an operator set others since). So
within one heartbeat period of the loss, every live worker's definitions are back.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from workpool.backends.base import Backend, WorkerRecord

if TYPE_CHECKING:
    from workpool.registry import Registry
    from workpool.settings import Settings
    from workpool.worker.health import BackendHealth
    from workpool.worker.options import WorkerOptions

logger = logging.getLogger("workpool.worker")

HEARTBEAT_EVERY = 10.0
"""Seconds between a worker's heartbeats (its record: what it serves); also how soon
it restores registry records the store lost."""
HEARTBEAT_LIFETIME = 3 * HEARTBEAT_EVERY
"""Seconds a worker counts as live after its last heartbeat (a killed worker's runs
count as unserved this long after it died, unless another worker serves them)."""

REGISTRY_GRACE = 30.0
"""Seconds a registry record must be old before a worker of its app may remove it:
a worker of the previous version may have just written it during a rolling deploy."""


class Registration:
    """One worker's registry records, queue defaults and heartbeats."""

    def __init__(
        self, registry: Registry, settings: Settings, options: WorkerOptions, worker_id: str
    ) -> None:
        self._records = registry.records(settings)  # fails early without an app
        self._settings = settings
        self._app = settings.app or ""
        self._queues = options.queues
        self._queue_defaults = {
            queue: registry.queue_defaults[queue]
            for queue in options.queues
            if queue in registry.queue_defaults
        }
        self._id = worker_id
        self.served = tuple(registry.workflows)
        """The workflows it defines: the only ones whose runs it claims."""
        self._started_at = settings.clock.now()

    async def register(self, backend: Backend) -> None:
        """Record the definitions (removing the app's stale ones) and queue defaults."""
        removed = await backend.sync_registry(
            self._app, self._records, self._settings.clock.now(), REGISTRY_GRACE
        )
        if removed:
            logger.info("removed from the registry (no longer defined): %s", ", ".join(removed))
        await self._declare_queues(backend)

    async def heartbeat(self, backend: Backend) -> None:
        """Store the worker's record; restore its registry records if any are missing."""
        now = self._settings.clock.now()
        record = WorkerRecord(
            id=self._id,
            app=self._app,
            queues=self._queues,
            workflows=self.served,
            started_at=self._started_at,
            seen_at=now,
            expires_at=now + HEARTBEAT_LIFETIME,
        )
        missing = set(await backend.heartbeat(record, now))
        if missing:
            lost = [record for record in self._records if record.name in missing]
            restored = await backend.restore_registry(self._app, lost, now)
            await self._declare_queues(backend)
            if restored:
                logger.warning(
                    "restored to the registry: %s (their records were missing: did the "
                    "store lose its data? The runs it held cannot be restored)",
                    ", ".join(restored),
                    extra={"event": "registry_restored", "workflows": restored},
                )

    async def run(self, backend: Backend, health: BackendHealth) -> None:
        """Heartbeat every ``HEARTBEAT_EVERY`` until cancelled; a failed heartbeat is
        reported to ``health`` and tried at the next one."""
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY)
            try:
                await self.heartbeat(backend)
            except Exception as error:
                health.failed("heartbeat", error)
                continue
            health.succeeded()

    async def _declare_queues(self, backend: Backend) -> None:
        """Store the declared defaults of the queues served that have no settings."""
        for queue, limit in self._queue_defaults.items():
            await backend.set_queue(queue, max_parallelism=limit, only_if_new=True)
