"""RunStarter: starts a claimed run's handler as a task among the worker's active runs."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from workpool.backends.base import Backend, ClaimedRun
from workpool.engine.context import context_for
from workpool.engine.environment import StepEnvironment
from workpool.engine.execute import Execution, execute, time_left
from workpool.engine.fencing import LocalLease
from workpool.engine.threads import HandlerThreads
from workpool.worker.active import ActiveRun, ActiveRuns
from workpool.worker.finisher import Finisher
from workpool.worker.options import WorkerOptions

if TYPE_CHECKING:
    from workpool.registry import Registry
    from workpool.settings import Settings
    from workpool.worker.metrics import WorkerMetrics

logger = logging.getLogger("workpool.worker")


class RunStarter:
    """Starts claimed runs on one backend; the finisher writes how each ends."""

    def __init__(
        self,
        backend: Backend,
        finisher: Finisher,
        registry: Registry,
        settings: Settings,
        options: WorkerOptions,
        threads: HandlerThreads,
        active: ActiveRuns,
        env: Execution,
        metrics: WorkerMetrics | None,
    ) -> None:
        self._backend = backend
        self._finisher = finisher
        self._registry = registry
        self._settings = settings
        self._options = options
        self._threads = threads
        self._active = active
        self._env = env
        self._metrics = metrics

    def start(self, claimed: ClaimedRun, sent_at: float) -> None:
        """Start the run's handler (its claim was sent at ``sent_at``, monotonic time)."""
        lease = LocalLease(sent_at + self._options.lease.total_seconds())
        workflow = self._registry.workflows[claimed.workflow]  # the claim took served ones only
        env = StepEnvironment(
            self._registry,
            self._settings,
            self._backend,
            claimed.lease,
            self._threads,
            claimed.has_steps,
            local_lease=lease,
        )
        ctx = context_for(claimed, env, with_steps=workflow.is_async)
        task = asyncio.create_task(execute(workflow, claimed, ctx, self._env))
        task.set_name(f"run {claimed.lease.run_id}")
        now = self._settings.clock.now()
        entry = ActiveRun(claimed, ctx, task, started_at=now, lease=lease)
        self._active.add(entry)
        self._active.fence(entry)
        seconds = time_left(workflow, claimed)
        if seconds is not None:
            # Past its limit, a handler that ignores the interruption gets one lease
            # to end; then the worker stops renewing, so another worker takes it.
            self._active.give_up_after(entry, seconds + self._options.lease.total_seconds())
        if claimed.isolated:
            logger.warning(
                "run %s runs alone: it lost its lease before (its worker died or stalled), "
                "so this worker takes nothing else until it ends",
                claimed.lease.run_id,
            )
        task.add_done_callback(lambda done: self._finisher.handler_done(entry, done))
        if self._metrics is not None:
            self._metrics.run_started(claimed, max(0.0, now - claimed.available_at))
        if logger.isEnabledFor(logging.INFO):
            lag = round(max(0.0, now - claimed.available_at), 6)
            logger.info(
                "run %s started: workflow=%s queue=%s attempt=%d lag=%.3fs",
                claimed.lease.run_id,
                claimed.workflow,
                claimed.queue,
                claimed.attempt,
                lag,
                extra={
                    "event": "started",
                    "run_id": claimed.lease.run_id,
                    "workflow": claimed.workflow,
                    "queue": claimed.queue,
                    "attempt": claimed.attempt,
                    "lag": lag,
                },
            )
