"""The cron scheduler: the worker holding its app's cron lease starts each tick's run."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workpool.backends.base import Backend, NewTick, SkippedTickRecord
from workpool.builder import build_new_run
from workpool.cron import Cron
from workpool.decoding import skipped_tick
from workpool.definitions import Workflow
from workpool.registry import Registry
from workpool.settings import Settings
from workpool.worker.health import BackendHealth

if TYPE_CHECKING:
    from workpool.worker.metrics import WorkerMetrics

logger = logging.getLogger("workpool.cron")

LEASE_SECONDS = 10.0
"""How long a leader that stops renewing keeps the lease before another worker takes over."""
RENEW_SECONDS = 2.0
"""The longest the scheduler sleeps: it renews (or tries to take) the lease this often."""


@dataclass(frozen=True, slots=True, eq=False)
class Trigger:
    """One cron trigger of one workflow; compared and hashed by identity (each trigger is
    one object, whatever its Cron's input holds)."""

    workflow: Workflow[Any, Any]
    id: str
    """Unique within its workflow (``workpool.cron.trigger_ids``)."""
    cron: Cron

    def run_key(self, tick: float) -> str:
        """The idempotency key of this trigger's run for ``tick``: each tick runs once."""
        return f"cron:{self.id}:{tick!r}"


class CronScheduler:
    """Fires the pool's cron triggers while this worker holds the cron lease.

    A new leader schedules each trigger's next tick from now: ticks missed while no
    worker led are not fired afterwards (no catch-up). Each tick's run has an
    idempotency key, so two workers that both believed they led fire it once. A tick is
    skipped only by its trigger's overlap policy, judged by the backend against that
    trigger's own latest run (``Backend.start_tick``), which records the skipped tick;
    a started tick may wait at its workflow's ``max_concurrency`` like any run.
    """

    def __init__(self, registry: Registry, settings: Settings, holder: str) -> None:
        self._registry = registry
        self._settings = settings
        self._holder = holder
        self._lease = f"cron:{settings.app}"  # one leader per app: each fires its own crons
        self._triggers = [
            Trigger(workflow, trigger_id, cron)
            for workflow in registry.workflows.values()
            for cron, trigger_id in zip(workflow.cron, workflow.cron_ids, strict=True)
        ]
        self._next: dict[Trigger, float] = {}
        self.leading = False
        self.fired = 0
        self.skipped = 0
        self.metrics: WorkerMetrics | None = None
        """Counts fired and skipped ticks per workflow too, if set (by the worker)."""

    @property
    def has_triggers(self) -> bool:
        """Whether the pool defines any cron trigger."""
        return bool(self._triggers)

    async def run(self, backend: Backend, health: BackendHealth) -> None:
        """Lead when possible and fire due ticks, until cancelled; a failed step is
        reported to ``health`` and tried again ``RENEW_SECONDS`` later."""
        while True:
            try:
                pause = await self.step(backend, self._settings.clock.now())
            except Exception as error:
                health.failed("cron", error)
                pause = RENEW_SECONDS
            else:
                health.succeeded()
            await asyncio.sleep(pause)

    async def step(self, backend: Backend, now: float) -> float:
        """Renew or take the lease, fire the ticks due at ``now``; return the seconds
        until the next step."""
        leading = await backend.acquire_lease(self._lease, self._holder, LEASE_SECONDS, now)
        if leading and not self.leading:
            logger.info("cron: this worker leads (%d triggers)", len(self._triggers))
            self._next = {trigger: trigger.cron.next_after(now) for trigger in self._triggers}
        self.leading = leading
        if not leading:
            return RENEW_SECONDS
        for trigger, tick in list(self._next.items()):
            if tick <= now:
                await self._fire(backend, trigger, tick, now)
                self._next[trigger] = trigger.cron.next_after(max(now, tick))
        soonest = min(self._next.values(), default=now + RENEW_SECONDS)
        return max(0.0, min(RENEW_SECONDS, soonest - now))

    async def _fire(self, backend: Backend, trigger: Trigger, tick: float, now: float) -> None:
        prepared = trigger.workflow.prepare(
            trigger.cron.input, idempotency_key=trigger.run_key(tick)
        )
        run = build_new_run(self._registry, self._settings, prepared, now)
        outcome = await backend.start_tick(
            NewTick(run, trigger.id, tick, trigger.cron.overlap), now
        )
        if outcome.skipped is not None:
            self.skipped += 1
            if self.metrics is not None:
                self.metrics.cron_tick_skipped(trigger.workflow.name)
            logger.warning("cron: %s (%d skipped)", describe_skip(outcome.skipped), self.skipped)
        elif outcome.created:
            self.fired += 1
            if self.metrics is not None:
                self.metrics.cron_tick_fired(trigger.workflow.name)
            logger.info(
                "cron: started %s run %s for trigger %r",
                trigger.workflow.name,
                outcome.run_id,
                trigger.id,
            )


def describe_skip(record: SkippedTickRecord) -> str:
    """A skipped tick in words, naming its workflow, trigger, time and reason."""
    tick = skipped_tick(record)
    at = tick.scheduled_at.isoformat(timespec="seconds")
    return f"tick {at} of {tick.workflow} trigger {tick.trigger!r} skipped: {tick.describe()}"
