"""Worker: a supervisor of named side tasks (claimer, renewer, finisher, housekeeper;
cron if any)."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Awaitable
from types import TracebackType
from typing import TYPE_CHECKING

from workpool.backends import describe_store
from workpool.backends.base import Backend, ClaimResult
from workpool.engine.execute import Execution
from workpool.engine.threads import HandlerThreads
from workpool.worker.active import ActiveRuns
from workpool.worker.ahead import ClaimAhead
from workpool.worker.cron import CronScheduler
from workpool.worker.finisher import Finisher
from workpool.worker.health import BackendHealth, report_set_aside, warn_about_settings
from workpool.worker.housekeeping import Housekeeper
from workpool.worker.options import WorkerOptions
from workpool.worker.registration import Registration
from workpool.worker.renewal import Renewer
from workpool.worker.starting import RunStarter

if TYPE_CHECKING:
    from workpool.client import Client
    from workpool.worker.metrics import WorkerMetrics

logger = logging.getLogger("workpool.worker")

BACKEND_ERROR_PAUSE = 1.0
"""Seconds a side task waits after a backend error before trying again."""

CLAIM_SHARE = 4
"""One claim takes at most 1/CLAIM_SHARE of the slots (but CLAIM_FLOOR). Many free
slots are filled by a few claims in a row: the first runs start sooner, and a worker
whose slots free up together does not fall into waves of one long claim, then every
handler at once (B4 in docs/benchmarks.md; B2 is unchanged)."""
CLAIM_FLOOR = 10
"""A claim may always take this many runs (or every free slot, if fewer): with few
slots, a quarter of them is one or two runs a claim, and a claim per run or two made
the default 10 slots drain a third as fast as 100 (B2). It changes nothing from 40
slots up (B4 runs 50)."""

AHEAD_FLOOR = 100
"""Runs a worker may always hold ahead of its slots (how many it does hold follows its
start rate, see ``ClaimAhead``): four claims' worth of 10 slots was 40 runs, so short
runs at the default concurrency drained at the speed of 40-run claims (B2)."""


def _consume_outcome(task: asyncio.Future[object]) -> None:
    if not task.cancelled():
        task.exception()


class Worker:
    """Claims runs from its queues and executes them; see ``WorkerOptions``.

    ``await worker.run()`` works until ``stop()`` is called (or SIGTERM/SIGINT when
    started from the CLI). ``async with pool.worker(...)`` runs it in the background.
    """

    def __init__(
        self, client: Client, options: WorkerOptions, *, metrics: WorkerMetrics | None = None
    ) -> None:
        self.client = client
        """Its backends (one per event loop), and what its metrics read."""
        self.registry = registry = client.registry
        self.settings = settings = client.settings
        self.options = options
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._registration = Registration(registry, settings, options, self.id)
        self._active = ActiveRuns()
        self._ahead = ClaimAhead(
            max(AHEAD_FLOOR, 4 * max(CLAIM_FLOOR, options.concurrency // CLAIM_SHARE)),
            options.lease.total_seconds(),
        )
        self._stopping = asyncio.Event()
        self._nudged = asyncio.Event()
        self._threads = HandlerThreads("workpool-handler", on_abandon=self._thread_abandoned)
        self._env = Execution(
            threads=self._threads,
            now=settings.clock.now,
            rng=random.Random(),
            max_payload_bytes=settings.max_payload_bytes,
            trace_links=settings.trace_links,
        )
        self._background: asyncio.Task[None] | None = None
        self.cron = CronScheduler(registry, settings, self.id)
        """Fires the pool's cron triggers while this worker leads."""
        self.housekeeper = Housekeeper(settings, self.id, interval=options.housekeeping_every)
        """Reports and deletes expired runs while this worker leads housekeeping."""
        self.metrics = metrics
        """Prometheus metrics, served from ``run()``; None (the default): no metrics.
        Set it before ``run()`` (``pool.worker()`` does not take it)."""
        self._served = self._registration.served
        """The workflows it defines: the only ones whose runs it claims."""
        self._make_room_for_isolated = False
        """Claim nothing until no run is held: one runs alone, or one waits to."""
        self.health = BackendHealth()
        """Whether the backend answers, as the side tasks find; logs its outages."""
        self.started = asyncio.Event()
        """Set once ``run()`` serves: registry written, first heartbeat sent, metrics up."""
        self._runs_started = 0
        self._recycle_reason: str | None = None

    def _thread_abandoned(self, what: str) -> None:
        if self.options.recycle_on_abandoned_thread:
            self.request_recycle(f"{what}: a sync handler's thread was abandoned")

    @property
    def abandoned_threads(self) -> int:
        """Threads of sync handlers stopped (time limit, cancel, lost lease, shutdown)
        that still run: Python cannot interrupt a thread, so each runs until its
        function returns, outside any slot."""
        return self._threads.abandoned

    def stop(self) -> None:
        """Ask the worker to stop: no new claims; in-flight runs get the grace period."""
        self._stopping.set()

    def request_recycle(self, reason: str) -> None:
        """Ask for this worker to be replaced by a fresh process; ``reason`` is logged.

        The worker claims no more runs, lets those it holds finish within
        ``shutdown_grace`` (the rest are handed back, as on ``stop()``), and ``run()``
        returns with ``recycle_reason`` set. ``workpool worker`` then exits with status
        75 (``workpool.worker.supervisor.EXIT_RECYCLE``): the supervisor of
        ``--processes`` or ``--max-runs-per-process`` starts a new process at once;
        without one, the process just ends (systemd's ``Restart=on-failure`` restarts
        it). A later call keeps the first reason; on a worker already stopping it does
        nothing. Call it on the worker's event loop (from another thread:
        ``loop.call_soon_threadsafe``)."""
        if self._stopping.is_set():
            return
        self._recycle_reason = reason
        logger.info(
            "worker %s recycling: %s; it claims no more and lets %d held runs finish",
            self.id,
            reason,
            len(self._active.handler_tasks()),
        )
        self._stopping.set()

    @property
    def held_ahead(self) -> int:
        """Runs claimed ahead of free slots, each to start as a slot frees (see
        ``ClaimAhead``): a worker draining short runs holds a few, one running long
        ones none."""
        return len(self._ahead)

    @property
    def recycle_reason(self) -> str | None:
        """Why the worker was recycled (``request_recycle``), else None."""
        return self._recycle_reason

    async def run(self) -> None:
        """Work until stopped; then shut down gracefully."""
        backend = await self.client.backend()
        await self._registration.register(backend)
        await warn_about_settings(backend)
        await self._registration.heartbeat(backend)  # serves its workflows from now on
        if self.metrics is not None:
            self.metrics.start_server()  # ConfigurationError if the port is taken
            self.metrics.count_abandoned_threads(lambda: self._threads.abandoned)
            backend = self.metrics.timed(backend)
            self.cron.metrics = self.metrics
        finisher = Finisher(
            backend,
            self._active,
            self.registry,
            self.settings,
            self._env,
            self._nudged.set,
            metrics=self.metrics,
            health=self.health,
        )
        starter = RunStarter(
            backend,
            finisher,
            self.registry,
            self.settings,
            self.options,
            self._threads,
            self._active,
            self._env,
            self.metrics,
        )
        renewer = Renewer(self._active, self.options, self.settings, self.health, self.metrics)
        side_tasks = [
            asyncio.create_task(self._claim_loop(backend, starter), name="claimer"),
            asyncio.create_task(renewer.run(backend), name="renewer"),
            asyncio.create_task(self._registration.run(backend, self.health), name="heartbeat"),
            asyncio.create_task(finisher.run(), name="finisher"),
            asyncio.create_task(self.housekeeper.run(backend, self.health), name="housekeeper"),
        ]
        if self.cron.has_triggers:
            side_tasks.append(asyncio.create_task(self.cron.run(backend, self.health), name="cron"))
        if self.metrics is not None:
            watch = self.metrics.watch_queues(self.client, self.options.queues, self.health)
            side_tasks.append(asyncio.create_task(watch, name="metrics"))
        stop_wait = asyncio.create_task(self._stopping.wait(), name="stop-signal")
        store = describe_store(self.settings.url, prefix=self.settings.prefix)
        logger.info(
            "worker %s started on queues %s, store %s",
            self.id,
            ",".join(self.options.queues),
            store,
        )
        self.started.set()
        try:
            await asyncio.wait([stop_wait, *side_tasks], return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._stopping.set()
            try:
                await self._shutdown(backend, finisher, side_tasks)
            finally:
                stop_wait.cancel()
                if self.metrics is not None:
                    await self.metrics.stop_server()
        for task in side_tasks:
            if not task.cancelled() and task.exception() is not None:
                raise RuntimeError(f"worker side task {task.get_name()} died") from task.exception()

    async def __aenter__(self) -> Worker:
        self._background = asyncio.create_task(self.run(), name=f"worker {self.id}")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if self._background is not None:
            await self._background

    async def _claim_loop(self, backend: Backend, starter: RunStarter) -> None:
        self._active.on_change = lambda: self._start_held(starter)
        while not self._stopping.is_set():
            seen = self._active.changes
            self._start_held(starter)
            alone = len(self._active) == 0 and len(self._ahead) == 0
            size = self._claimable()
            if size <= 0 or (self._make_room_for_isolated and not alone):
                # A nudge (a retry or resume became due) cannot be acted on until a
                # slot frees: waiting for the nudge too would turn this loop busily.
                await self._until_stopping(
                    self._slot_freed_or_held_too_long(backend, seen), on_nudge=False
                )
                continue
            now = self.settings.clock.now()
            self._nudged.clear()
            sent_at = time.monotonic()
            self._ahead.claim_sent(self._active.slots_freed, sent_at)
            try:
                result = await backend.claim(
                    self.options.queues,
                    self.id,
                    size,
                    self.options.lease.total_seconds(),
                    self.options.max_lease_losses,
                    now,
                    workflows=self._served,
                    alone=alone,
                )
            except Exception as error:
                self.health.failed("claimer", error)
                await self._until_stopping(asyncio.sleep(BACKEND_ERROR_PAUSE))
                continue
            self.health.succeeded()
            report_set_aside(result.set_aside)
            self._make_room_for_isolated = self._should_make_room(result, alone, now)
            self._ahead.claim_returned(sent_at, size, result.runs, time.monotonic())
            self._start_held(starter)
            self._count_started(len(result.runs))
            if len(result.runs) < size and not self._make_room_for_isolated and not self._ahead:
                # (With runs still held ahead, the next turn waits for a slot instead,
                # and hands them back if none frees in time.)
                wait = backend.wait_for_work(
                    self.options.queues,
                    self._idle_wait(result.next_wake_at),
                    workflows=self._served,
                )
                await self._until_stopping(wait)

    def _claimable(self) -> int:
        """How many runs the next claim may take: free slots (a share of them at a time)
        and as many more as to hold ahead, no more than ``max_runs`` leaves."""
        concurrency = self.options.concurrency
        share = max(CLAIM_FLOOR, concurrency // CLAIM_SHARE)
        free = min(self._active.free_slots(concurrency) - len(self._ahead), share)
        size = max(0, free) + (self._ahead.wanted() if self.options.claim_ahead else 0)
        if self.options.max_runs is None:
            return size
        return min(size, self.options.max_runs - self._runs_started)

    def _start_held(self, starter: RunStarter) -> None:
        """Start runs held ahead while slots are free."""
        while len(self._ahead) and self._active.free_slots(self.options.concurrency) > 0:
            held = self._ahead.take()
            assert held is not None
            starter.start(held[0], held[1])

    async def _slot_freed_or_held_too_long(self, backend: Backend, seen: int) -> None:
        """Wait for a slot to free; hand back the runs held ahead if that takes longer
        than ``max_hold`` (a slow run came after fast ones: another worker may be idle)."""
        due = self._ahead.hand_back_at()
        if due is None:
            await self._active.wait_for_change(seen)
            return
        try:
            await asyncio.wait_for(self._active.wait_for_change(seen), due - time.monotonic())
            return
        except TimeoutError:
            pass
        held = self._ahead.take_all()
        self._runs_started -= len(held)
        logger.info("handing back %d runs held ahead: no slot freed for them in time", len(held))
        leases = [run.lease for run in held]
        await backend.release(leases, self.settings.clock.now())

    def _count_started(self, runs: int) -> None:
        """Count runs started; recycle the worker once ``max_runs`` have started."""
        self._runs_started += runs
        limit = self.options.max_runs
        if runs and limit is not None and self._runs_started >= limit:
            self.request_recycle(f"it started {self._runs_started} runs (max_runs={limit})")

    def _should_make_room(self, result: ClaimResult, alone: bool, now: float) -> bool:
        """Whether to stop claiming until this worker holds nothing, so it can take a
        run to isolate: one took (it runs alone), or one has waited longer than a
        lease for a worker that holds nothing."""
        if any(claimed.isolated for claimed in result.runs):
            return True
        waited = None if result.isolated_since is None else now - result.isolated_since
        return not alone and waited is not None and waited >= self.options.lease.total_seconds()

    def _idle_wait(self, next_wake_at: float | None) -> float:
        longest = self.options.max_idle_wait.total_seconds()
        if next_wake_at is None:
            return longest
        return max(0.0, min(longest, next_wake_at - self.settings.clock.now()))

    async def _until_stopping(self, awaitable: Awaitable[object], *, on_nudge: bool = True) -> None:
        """Await ``awaitable`` unless the worker starts stopping (or, if ``on_nudge``,
        is nudged) first.

        The finisher nudges the claimer when it schedules a retry, which may be due
        before the wake-up time the claimer knew of.

        A backend error while waiting is reported to ``health`` and followed by a
        pause, not raised: the claim loop carries on once the backend is back.
        """
        waiter = asyncio.ensure_future(awaitable)
        others = [asyncio.ensure_future(self._stopping.wait())]
        if on_nudge:
            others.append(asyncio.ensure_future(self._nudged.wait()))
        try:
            await asyncio.wait([waiter, *others], return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when this task itself is cancelled: leave no waiter behind
            for task in (waiter, *others):
                task.cancel()
            # A waiter can still fail before the cancel reaches it (the backend went
            # away meanwhile); nobody awaits it any more, so consume that outcome.
            waiter.add_done_callback(_consume_outcome)
        if not waiter.done() or waiter.cancelled():
            return
        error = waiter.exception()
        if error is not None:
            self.health.failed("claimer", error)
            await asyncio.sleep(BACKEND_ERROR_PAUSE)

    async def _shutdown(
        self, backend: Backend, finisher: Finisher, side_tasks: list[asyncio.Task[None]]
    ) -> None:
        claimer = side_tasks[0]
        # A claim already sent commits in the store whether or not its reply is read:
        # let it return (the claimer stops at its next wait), so the runs it took are
        # started and then finished or handed back, not left to their leases.
        await asyncio.wait([claimer], timeout=self.options.lease.total_seconds())
        claimer.cancel()
        handler_tasks = self._active.handler_tasks()
        if handler_tasks:
            logger.info(
                "waiting up to %s for %d runs (and %d held ahead)",
                self.options.shutdown_grace,
                len(handler_tasks),
                len(self._ahead),
            )
        # Runs held ahead start as slots free: they were claimed, so they run now
        # rather than be handed back with nothing done.
        deadline = time.monotonic() + self.options.shutdown_grace.total_seconds()
        while handler_tasks and (left := deadline - time.monotonic()) > 0:
            await asyncio.wait(handler_tasks, timeout=left)
            handler_tasks = self._active.handler_tasks()
        handed_back, over_limit = self._active.hand_back_unfinished()
        handed_back += [run.lease for run in self._ahead.take_all()]
        for leases, used in ((handed_back, False), (over_limit, True)):
            if not leases:
                continue
            try:
                await backend.release(leases, self.settings.clock.now(), attempt_used=used)
            except Exception:
                logger.exception("could not hand back %d leases; they expire", len(leases))
        await finisher.drain()
        for task in side_tasks:
            task.cancel()
        await asyncio.gather(*side_tasks, return_exceptions=True)
        try:
            await backend.remove_worker(self.id)
        except Exception as error:
            self.health.failed("shutdown", error)  # its record expires by itself
        self._threads.shutdown(wait=False, cancel_futures=True)
        logger.info("worker %s stopped", self.id)
