"""Finisher: writes the ends of attempts in batches, one backend call per batch."""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from workpool.backends.base import Backend, Finish
from workpool.definitions import FailureCallback, Workflow
from workpool.engine.execute import Execution
from workpool.models import Failure, OnComplete, RunError
from workpool.worker.active import ActiveRun, ActiveRuns
from workpool.worker.health import BackendHealth

if TYPE_CHECKING:
    from workpool.app import Workpool
    from workpool.worker.metrics import WorkerMetrics

logger = logging.getLogger("workpool.worker")

BACKEND_ERROR_PAUSE = 1.0

_OUTCOME_WORDS = {"succeeded": "success", "retry": "retrying", "suspend": "suspended"}


class Finisher:
    """Collects finished attempts and writes whatever has accumulated in one call.

    Batching costs no latency: the first outcome is written at once, and outcomes
    that arrive while a write is in flight go together in the next one. A failed
    write is reported to ``health`` (the worker's; by default one of its own) and
    retried.
    """

    def __init__(
        self,
        backend: Backend,
        active: ActiveRuns,
        pool: Workpool,
        env: Execution,
        on_run_requeued: Callable[[], None],
        *,
        metrics: WorkerMetrics | None = None,
        health: BackendHealth | None = None,
    ) -> None:
        self._backend = backend
        self._health = health or BackendHealth()
        self._metrics = metrics
        self._on_run_requeued = on_run_requeued
        self._active = active
        self._pool = pool
        self._env = env
        self._queue: asyncio.Queue[tuple[ActiveRun, Finish]] = asyncio.Queue()
        self._callbacks: set[asyncio.Task[None]] = set()

    def handler_done(self, entry: ActiveRun, task: asyncio.Task[Finish]) -> None:
        """Done-callback of a handler task: queue its outcome, or drop an abandoned run."""
        self._active.free_slot()
        if entry.abandoned or task.cancelled():
            self._active.remove(entry)
            return
        error = task.exception()
        if error is not None:
            logger.error("run %s: worker error, outcome not written", entry.run_id, exc_info=error)
            self._active.remove(entry)
            return
        self._queue.put_nowait((entry, task.result()))

    async def run(self) -> None:
        """Write outcomes as they come, until cancelled."""
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            await self._write(batch)
            for _ in batch:
                self._queue.task_done()

    async def drain(self) -> None:
        """Wait until every queued outcome is written, then for failure callbacks."""
        await self._queue.join()
        if self._callbacks:
            await asyncio.gather(*self._callbacks, return_exceptions=True)

    async def _write(self, batch: list[tuple[ActiveRun, Finish]]) -> None:
        finishes = [finish for _, finish in batch]
        while True:
            try:
                applied = await self._backend.finish(finishes, self._pool.clock.now())
                break
            except Exception as error:
                self._health.failed("finisher", error)
                await asyncio.sleep(BACKEND_ERROR_PAUSE)
        self._health.succeeded()
        for (entry, finish), written in zip(batch, applied, strict=True):
            self._active.remove(entry)
            self._report(entry, finish, written)
        if any(finish.status in ("retry", "suspend") for finish in finishes):
            self._on_run_requeued()  # it may be due before the claimer's next wake-up

    def _report(self, entry: ActiveRun, finish: Finish, written: bool) -> None:
        if not written:
            logger.warning("run %s: lease lost before its outcome was written", entry.run_id)
            if self._metrics is not None:
                self._metrics.lease_lost(entry.claimed.workflow)
            return
        if self._metrics is not None:
            self._metrics.run_completed(
                entry.claimed.workflow,
                entry.claimed.queue,
                _OUTCOME_WORDS.get(finish.status, finish.status),
                max(0.0, self._pool.clock.now() - entry.started_at),
            )
        if logger.isEnabledFor(logging.INFO):
            outcome = _OUTCOME_WORDS.get(finish.status, finish.status)
            duration = round(max(0.0, self._pool.clock.now() - entry.started_at), 6)
            logger.info(
                "run %s completed: workflow=%s attempt=%d outcome=%s duration=%.3fs",
                entry.run_id,
                entry.claimed.workflow,
                entry.claimed.attempt,
                outcome,
                duration,
                extra={
                    "event": "completed",
                    "run_id": entry.run_id,
                    "workflow": entry.claimed.workflow,
                    "queue": entry.claimed.queue,
                    "attempt": entry.claimed.attempt,
                    "duration": duration,
                    "outcome": outcome,
                },
            )
        if finish.status == "failed" and not entry.ctx.cancelled:
            self._call_on_failure(entry, finish)

    def _call_on_failure(self, entry: ActiveRun, finish: Finish) -> None:
        workflow = self._pool.workflows.get(entry.claimed.workflow)
        callback = workflow.on_failure if workflow is not None else None
        if callback is None or isinstance(callback, Workflow):
            return  # none, or a workflow: enqueued by the backend with the transition
        error = RunError.model_validate(json.loads(finish.error or "{}"))
        event = OnComplete(
            run_id=entry.run_id, workflow=entry.claimed.workflow, result=Failure(error=error)
        )
        task = asyncio.create_task(self._invoke(callback, event))
        self._callbacks.add(task)
        task.add_done_callback(self._callbacks.discard)

    async def _invoke(self, callback: FailureCallback, event: OnComplete) -> None:
        try:
            if inspect.iscoroutinefunction(callback):
                await callback(event)
            else:
                loop = asyncio.get_running_loop()
                await loop.run_in_executor(self._env.threads, callback, event)
        except Exception:
            logger.exception("on_failure callback of run %s raised", event.run_id)
