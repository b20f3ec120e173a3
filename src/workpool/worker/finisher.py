"""Finisher: writes the ends of attempts in batches, one backend call per batch."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from workpool.backends.base import Backend, Finish
from workpool.definitions import FailureCallback, Workflow
from workpool.engine.execute import Execution
from workpool.errors import BackendUnavailableError
from workpool.logs import log_completed
from workpool.models import Failure, OnComplete, RunError
from workpool.worker.active import ActiveRun, ActiveRuns
from workpool.worker.health import BackendHealth

if TYPE_CHECKING:
    from workpool.registry import Registry
    from workpool.settings import Settings
    from workpool.worker.metrics import WorkerMetrics

logger = logging.getLogger("workpool.worker")

BACKEND_ERROR_PAUSE = 1.0

_OUTCOME_WORDS = {"succeeded": "success", "retry": "retrying", "suspend": "suspended"}


class Finisher:
    """Collects finished attempts and writes whatever has accumulated in one call.

    Batching costs no latency: the first outcome is written at once, and outcomes
    that arrive while a write is in flight go together in the next one. A write that
    cannot reach the backend is reported to ``health`` (the worker's; by default one
    of its own) and retried; a batch the backend refuses is written entry by entry.
    """

    def __init__(
        self,
        backend: Backend,
        active: ActiveRuns,
        registry: Registry,
        settings: Settings,
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
        self._registry = registry
        self._settings = settings
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
        finish = task.result()
        progress = entry.ctx.unstored_progress()
        if progress is not None:
            finish = dataclasses.replace(finish, progress=progress)
        self._queue.put_nowait((entry, finish))

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

    async def _write(
        self, batch: list[tuple[ActiveRun, Finish]], *, replacement: bool = False
    ) -> None:
        """Write a batch; ``replacement``: it is the failure that replaced a refused outcome."""
        while True:
            batch = self._fenced(batch)
            finishes = [finish for _, finish in batch]
            if not batch:
                return
            try:
                applied = await self._backend.finish(finishes, self._settings.clock.now())
                break
            except BackendUnavailableError as error:
                self._health.failed("finisher", error)
                await asyncio.sleep(BACKEND_ERROR_PAUSE)
            except Exception as error:  # the backend answered, refusing a value
                await self._refused(batch, error, replacement=replacement)
                return
        self._health.succeeded()
        for (entry, finish), written in zip(batch, applied, strict=True):
            self._active.remove(entry)
            self._report(entry, finish, written)
        if any(finish.status in ("retry", "suspend") for finish in finishes):
            self._on_run_requeued()  # it may be due before the claimer's next wake-up

    async def _refused(
        self, batch: list[tuple[ActiveRun, Finish]], error: Exception, *, replacement: bool
    ) -> None:
        """Write a refused batch entry by entry, so one bad outcome holds up no other. An
        entry still refused becomes a permanent failure of its run; if that is refused
        too, it is dropped (its lease expires and the run is retried elsewhere)."""
        if len(batch) > 1:
            logger.warning(
                "the backend refused %d outcomes written together (%s); writing them one by one",
                len(batch),
                error,
            )
            for item in batch:
                await self._write([item])
            return
        entry, finish = batch[0]
        if replacement:
            logger.error(
                "run %s: its outcome could not be stored, nor its failure (%s); dropped, the "
                "run is retried once its lease expires",
                entry.run_id,
                error,
            )
            self._active.remove(entry)
            return
        logger.error(
            "run %s: its outcome could not be stored (%s); failing the run", entry.run_id, error
        )
        await self._write([(entry, unstorable(finish, error))], replacement=True)

    def _fenced(self, batch: list[tuple[ActiveRun, Finish]]) -> list[tuple[ActiveRun, Finish]]:
        """The entries whose local lease still holds; the others are dropped unwritten
        (another worker may hold the run now: see ``engine/fencing.py``)."""
        kept = []
        for entry, finish in batch:
            if entry.lease is None or entry.lease.held():
                kept.append((entry, finish))
                continue
            logger.warning(
                "run %s: lease not renewed in time; its outcome is not written", entry.run_id
            )
            self._active.remove(entry)
            if self._metrics is not None:
                self._metrics.lease_lost(entry.claimed.workflow)
        return kept

    def _report(self, entry: ActiveRun, finish: Finish, written: bool) -> None:
        if not written:
            logger.warning("run %s: lease lost before its outcome was written", entry.run_id)
            if self._metrics is not None:
                self._metrics.lease_lost(entry.claimed.workflow)
            return
        outcome = _OUTCOME_WORDS.get(finish.status, finish.status)
        now = self._settings.clock.now()
        duration = max(0.0, now - entry.started_at)
        if self._metrics is not None:
            self._metrics.run_completed(
                entry.claimed.workflow, entry.claimed.queue, outcome, duration
            )
        run = {
            "run_id": entry.run_id,
            "workflow": entry.claimed.workflow,
            "queue": entry.claimed.queue,
            "attempt": entry.claimed.attempt,
        }
        log_completed(
            logger, run, outcome, duration, error=finish.error, retry_at=finish.retry_at, now=now
        )
        if entry.ctx.timed_out and self._metrics is not None:
            self._metrics.run_timed_out(entry.claimed.workflow)
        if finish.status == "failed" and (entry.ctx.timed_out or not entry.ctx.cancelled):
            self._call_on_failure(entry, finish)

    def _call_on_failure(self, entry: ActiveRun, finish: Finish) -> None:
        workflow = self._registry.workflows.get(entry.claimed.workflow)
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


def unstorable(finish: Finish, problem: Exception) -> Finish:
    """The permanent failure that replaces an outcome the backend refuses to store; it
    keeps the attempt's own error, if any, in its message and traceback."""
    message = f"the worker could not store this outcome ({finish.status}): {problem}"
    traceback = None
    if finish.error is not None:
        try:
            attempt = RunError.model_validate_json(finish.error)
        except ValueError:
            attempt = RunError(type="UnknownError", message=finish.error)
        message += f"; the attempt failed with {attempt.type}: {attempt.message}"
        traceback = attempt.traceback
    error = {"type": "OutcomeNotStoredError", "message": message, "traceback": traceback}
    return Finish(finish.lease, "failed", error=json.dumps(error))
