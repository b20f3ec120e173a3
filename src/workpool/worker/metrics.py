"""Prometheus metrics of one worker, served over HTTP at ``/metrics``.

``WorkerMetrics`` owns a ``CollectorRegistry`` of its own (not the process-wide
default), so several workers in one process, and tests, never collide. The worker
calls its small methods at each event when it has one (``worker.metrics``), and only
then: without metrics, the worker pays one ``is not None`` test per event and uses
its backend unwrapped.

Labels are kept low-cardinality: workflow, queue, outcome, operation; never run ids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from time import perf_counter
from typing import TYPE_CHECKING, Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from workpool.backends.base import (
    Backend,
    ClaimedRun,
    ClaimResult,
    Finish,
    Lease,
    NewRun,
    RenewResult,
    StepRecord,
)
from workpool.errors import ConfigurationError
from workpool.stats import Figures, Stats
from workpool.validation import check_count, timeout_seconds

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from workpool.client import Client
    from workpool.worker.health import BackendHealth

logger = logging.getLogger("workpool.worker")

T = TypeVar("T")

RUN_SECONDS_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)  # fmt: skip
"""Buckets of run durations and start lags: milliseconds to ten minutes."""

BACKEND_SECONDS_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
)  # fmt: skip
"""Buckets of backend operation latencies: half a millisecond to five seconds."""

STATS_WINDOW = timedelta(minutes=1)
"""Window of the ``pool.stats`` read behind the queue gauges (only its "now" figures are
used; the shortest window keeps the read small)."""


class WorkerMetrics:
    """The metrics of one worker, and the HTTP server that exposes them.

    ``port`` None: no server (the registry can still be read, e.g. by tests or by an
    application serving it itself). ``refresh_every``: seconds between two reads of
    the queue gauges while the worker runs.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        host: str = "0.0.0.0",
        refresh_every: float = 15.0,
    ) -> None:
        self.refresh_every = timeout_seconds(refresh_every, what="refresh_every")
        if port is not None:
            check_count(port, what="metrics port", minimum=1, maximum=65535, none="no server")
        self.port = port
        self.host = host
        self.registry = CollectorRegistry()
        self._server: WSGIServer | None = None
        registry = self.registry
        self.runs_started = Counter(
            "workpool_runs_started",
            "Runs this worker started (each attempt counts).",
            ["workflow", "queue"],
            registry=registry,
        )
        self.runs_finished = Counter(
            "workpool_runs_finished",
            "Attempts this worker ended and recorded, by outcome "
            "(success, failed, canceled, retrying, suspended).",
            ["workflow", "queue", "outcome"],
            registry=registry,
        )
        self.run_duration = Histogram(
            "workpool_run_duration_seconds",
            "Seconds from an attempt's start to its recorded outcome.",
            ["workflow"],
            buckets=RUN_SECONDS_BUCKETS,
            registry=registry,
        )
        self.start_lag = Histogram(
            "workpool_run_start_lag_seconds",
            "Seconds from a run becoming available to this worker starting it.",
            ["queue"],
            buckets=RUN_SECONDS_BUCKETS,
            registry=registry,
        )
        self.queue_pending = Gauge(
            "workpool_queue_pending_runs",
            "Runs of the queue waiting to start (queued + scheduled), cluster-wide.",
            ["queue"],
            registry=registry,
        )
        self.queue_running = Gauge(
            "workpool_queue_running_runs",
            "Runs of the queue running now, on any worker.",
            ["queue"],
            registry=registry,
        )
        self.queue_suspended = Gauge(
            "workpool_queue_suspended_runs",
            "Runs of the queue suspended (waiting on a child run or a durable sleep).",
            ["queue"],
            registry=registry,
        )
        self.queue_needs_attention = Gauge(
            "workpool_queue_needs_attention_runs",
            "Runs of the queue stopped because their saved steps no longer fit their code.",
            ["queue"],
            registry=registry,
        )
        self.queue_paused = Gauge(
            "workpool_queue_paused_runs",
            "Runs of the queue an operator paused (never claimed until resumed).",
            ["queue"],
            registry=registry,
        )
        self.lease_losses = Counter(
            "workpool_lease_losses",
            "Runs this worker stopped or could not record because their lease was lost.",
            ["workflow"],
            registry=registry,
        )
        self.backend_latency = Histogram(
            "workpool_backend_operation_seconds",
            "Seconds taken by the backend calls of this worker's run loop.",
            ["operation"],
            buckets=BACKEND_SECONDS_BUCKETS,
            registry=registry,
        )
        self.backend_errors = Counter(
            "workpool_backend_operation_errors",
            "Backend calls of this worker's run loop that raised.",
            ["operation"],
            registry=registry,
        )
        self.cron_fired = Counter(
            "workpool_cron_ticks_fired",
            "Cron ticks that started a run (while this worker led cron).",
            ["workflow"],
            registry=registry,
        )
        self.abandoned_threads = Gauge(
            "workpool_abandoned_threads",
            "Threads of sync handlers stopped (time limit, cancel, lost lease) that still run.",
            registry=registry,
        )
        self.runs_timed_out = Counter(
            "workpool_runs_timed_out",
            "Attempts this worker stopped at their time limit.",
            ["workflow"],
            registry=registry,
        )
        self.cron_skipped = Counter(
            "workpool_cron_ticks_skipped",
            "Cron ticks skipped by their trigger's overlap policy (its previous run still active).",
            ["workflow"],
            registry=registry,
        )

    # -- events -------------------------------------------------------------------

    def run_started(self, claimed: ClaimedRun, lag: float) -> None:
        """The worker started an attempt ``lag`` seconds after the run became available."""
        self.runs_started.labels(claimed.workflow, claimed.queue).inc()
        self.start_lag.labels(claimed.queue).observe(lag)

    def run_completed(self, workflow: str, queue: str, outcome: str, duration: float) -> None:
        """An attempt's outcome was recorded (``outcome``: the word of the completed event)."""
        self.runs_finished.labels(workflow, queue, outcome).inc()
        self.run_duration.labels(workflow).observe(duration)

    def count_abandoned_threads(self, count: Callable[[], int]) -> None:
        """Read the abandoned threads gauge from ``count`` at each scrape."""
        self.abandoned_threads.set_function(count)

    def run_timed_out(self, workflow: str) -> None:
        """An attempt was stopped at its time limit."""
        self.runs_timed_out.labels(workflow).inc()

    def lease_lost(self, workflow: str) -> None:
        """A run's lease was found lost: the run was stopped or its outcome not written."""
        self.lease_losses.labels(workflow).inc()

    def cron_tick_fired(self, workflow: str) -> None:
        """A cron tick started a run."""
        self.cron_fired.labels(workflow).inc()

    def cron_tick_skipped(self, workflow: str) -> None:
        """A cron tick was skipped by its trigger's overlap policy."""
        self.cron_skipped.labels(workflow).inc()

    def set_queue_stats(self, stats: Stats, queues: Sequence[str]) -> None:
        """Set the queue gauges of ``queues`` from ``stats`` (a queue without runs: 0)."""
        for queue in queues:
            figures = stats.by_queue.get(queue) or Figures()
            self.queue_pending.labels(queue).set(figures.pending)
            self.queue_running.labels(queue).set(figures.running)
            self.queue_suspended.labels(queue).set(figures.suspended)
            self.queue_needs_attention.labels(queue).set(figures.needs_attention)
            self.queue_paused.labels(queue).set(figures.paused)

    async def watch_queues(
        self, client: Client, queues: Sequence[str], health: BackendHealth
    ) -> None:
        """Refresh the queue gauges now, then every ``refresh_every`` seconds, until
        cancelled. A failed read is reported to ``health`` and the gauges keep their
        last values."""
        while True:
            try:
                stats = await client.stats(window=STATS_WINDOW)
            except Exception as error:
                health.failed("metrics", error)
            else:
                health.succeeded()
                self.set_queue_stats(stats, queues)
            await asyncio.sleep(self.refresh_every)

    def timed(self, backend: Backend) -> Backend:
        """``backend`` behind a layer that times the worker's run-loop operations."""
        return TimedBackend(backend, self.backend_latency, self.backend_errors)

    # -- HTTP server --------------------------------------------------------------

    def start_server(self) -> None:
        """Serve ``/metrics`` on ``host:port`` in a daemon thread (no port: do nothing).

        Raises ConfigurationError, with a one-line message, if the address cannot be
        bound (port in use, unknown host)."""
        if self.port is None or self._server is not None:
            return
        try:
            server, _ = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as error:
            reason = error.strerror or str(error)
            raise ConfigurationError(
                f"cannot serve metrics on {self.host}:{self.port}: {reason}"
            ) from error
        self._server = server
        logger.info("metrics served at http://%s:%d/metrics", self.host, self.port)

    async def stop_server(self) -> None:
        """Stop serving and free the port (waits for the server thread's next poll)."""
        server, self._server = self._server, None
        if server is None:
            return
        await asyncio.to_thread(server.shutdown)
        server.server_close()


class TimedBackend:
    """A backend whose ``claim``, ``renew``, ``finish``, ``release`` and ``save_step``
    are timed (and counted when they raise); every other attribute is the wrapped
    backend's own, untimed (``wait_for_work`` blocks on purpose: not a latency)."""

    def __init__(self, backend: Backend, latency: Histogram, errors: Counter) -> None:
        self.wrapped = backend
        self._latency = {
            name: latency.labels(name)
            for name in ("claim", "renew", "finish", "release", "save_step")
        }
        self._errors = {name: errors.labels(name) for name in self._latency}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    async def _timed(self, operation: str, call: Awaitable[T]) -> T:
        # A call cancelled (worker stopping) is neither a latency nor an error: not seen here.
        started = perf_counter()
        try:
            result = await call
        except Exception:
            self._errors[operation].inc()
            raise
        finally:
            if not _cancelling():
                self._latency[operation].observe(perf_counter() - started)
        return result

    async def claim(
        self,
        queues: Sequence[str],
        worker_id: str,
        limit: int,
        lease_seconds: float,
        max_lease_losses: int,
        now: float,
        *,
        workflows: Sequence[str] | None = None,
        alone: bool = False,
    ) -> ClaimResult:
        claim = self.wrapped.claim(
            queues,
            worker_id,
            limit,
            lease_seconds,
            max_lease_losses,
            now,
            workflows=workflows,
            alone=alone,
        )
        return await self._timed("claim", claim)

    async def renew(
        self,
        leases: Sequence[Lease],
        lease_seconds: float,
        now: float,
        *,
        progress: Mapping[str, str] | None = None,
    ) -> RenewResult:
        renewal = self.wrapped.renew(leases, lease_seconds, now, progress=progress)
        return await self._timed("renew", renewal)

    async def finish(self, finishes: Sequence[Finish], now: float) -> list[bool]:
        return await self._timed("finish", self.wrapped.finish(finishes, now))

    async def release(
        self, leases: Sequence[Lease], now: float, *, attempt_used: bool = False
    ) -> None:
        release = self.wrapped.release(leases, now, attempt_used=attempt_used)
        await self._timed("release", release)

    async def save_step(
        self, lease: Lease, step: StepRecord, now: float, child: NewRun | None = None
    ) -> StepRecord | None:
        return await self._timed("save_step", self.wrapped.save_step(lease, step, now, child))


def _cancelling() -> bool:
    """Whether the current task is being cancelled (its call's time is not a latency)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
