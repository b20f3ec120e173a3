"""WorkerMetrics on its own: registries, the timing layer, the queue gauges, the server."""

from __future__ import annotations

import asyncio
import logging
import socket
from datetime import timedelta
from typing import Any, cast

import pytest
from prometheus_client import REGISTRY

from workpool.app import Workpool
from workpool.backends.base import Backend, Lease, RenewResult
from workpool.errors import ConfigurationError
from workpool.stats import Figures, Stats
from workpool.worker.metrics import TimedBackend, WorkerMetrics


class FakeBackend:
    """Answers renew, fails finish, and records wait_for_work calls."""

    def __init__(self) -> None:
        self.waits = 0

    async def renew(self, leases: Any, lease_seconds: float, now: float) -> RenewResult:
        return RenewResult(lost=frozenset({"r1"}), cancel_requested=frozenset())

    async def finish(self, finishes: Any, now: float) -> list[bool]:
        raise ConnectionError("backend down")

    async def wait_for_work(self, queues: Any, timeout: float) -> None:
        self.waits += 1


def sample(metrics: WorkerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def test_the_timing_layer_times_run_loop_operations_only() -> None:
    metrics = WorkerMetrics()
    fake = FakeBackend()
    backend = metrics.timed(cast(Backend, fake))
    assert isinstance(backend, TimedBackend)
    result = await backend.renew([Lease("r1", "t")], 20, 0)
    assert result.lost == {"r1"}
    with pytest.raises(ConnectionError):
        await backend.finish([], 0)
    await backend.wait_for_work(["default"], 1)  # forwarded, not timed
    assert fake.waits == 1
    count = "workpool_backend_operation_seconds_count"
    assert sample(metrics, count, operation="renew") == 1
    assert sample(metrics, count, operation="finish") == 1
    assert sample(metrics, count, operation="claim") == 0
    assert sample(metrics, count, operation="wait_for_work") is None
    errors = "workpool_backend_operation_errors_total"
    assert sample(metrics, errors, operation="finish") == 1
    assert sample(metrics, errors, operation="renew") == 0


def test_each_worker_metrics_has_its_own_registry() -> None:
    first, second = WorkerMetrics(), WorkerMetrics()  # the default registry would refuse
    first.lease_lost("charge")
    assert sample(first, "workpool_lease_losses_total", workflow="charge") == 1
    assert sample(second, "workpool_lease_losses_total", workflow="charge") is None
    assert REGISTRY.get_sample_value("workpool_lease_losses_total", {"workflow": "charge"}) is None


def test_events_update_their_metrics() -> None:
    metrics = WorkerMetrics()
    metrics.run_completed("charge", "payments", "retrying", 0.2)
    metrics.run_completed("charge", "payments", "success", 40.0)
    finished = "workpool_runs_finished_total"
    labels = {"workflow": "charge", "queue": "payments"}
    assert sample(metrics, finished, **labels, outcome="retrying") == 1
    assert sample(metrics, finished, **labels, outcome="success") == 1
    duration = "workpool_run_duration_seconds_bucket"
    assert sample(metrics, duration, workflow="charge", le="0.25") == 1
    assert sample(metrics, duration, workflow="charge", le="60.0") == 2
    assert sample(metrics, "workpool_run_duration_seconds_sum", workflow="charge") == 40.2


def test_queue_gauges_cover_the_worker_queues() -> None:
    metrics = WorkerMetrics()
    stats = Stats(
        window=timedelta(minutes=1),
        total=Figures(),
        by_queue={
            "mail": Figures(pending=7, queued=5, scheduled=2, running=3, suspended=1),
            "other": Figures(pending=100),
        },
    )
    metrics.set_queue_stats(stats, ["mail", "idle"])
    assert sample(metrics, "workpool_queue_pending_runs", queue="mail") == 7
    assert sample(metrics, "workpool_queue_running_runs", queue="mail") == 3
    assert sample(metrics, "workpool_queue_suspended_runs", queue="mail") == 1
    assert sample(metrics, "workpool_queue_pending_runs", queue="idle") == 0
    assert sample(metrics, "workpool_queue_pending_runs", queue="other") is None


class FlakyStatsPool:
    """A pool whose first stats read fails; ``read_thrice`` is set at the third read."""

    def __init__(self) -> None:
        self.reads = 0
        self.read_thrice = asyncio.Event()

    async def stats(self, window: timedelta) -> Stats:
        self.reads += 1
        if self.reads == 3:
            self.read_thrice.set()
        if self.reads == 1:
            raise ConnectionError("backend down")
        return Stats(window=window, total=Figures(), by_queue={"default": Figures(pending=4)})


async def test_queue_gauges_carry_on_after_a_failed_read(caplog: pytest.LogCaptureFixture) -> None:
    metrics = WorkerMetrics(refresh_every=0.01)
    pool = FlakyStatsPool()
    task = asyncio.create_task(metrics.watch_queues(cast(Workpool, pool), ["default"]))
    try:
        await asyncio.wait_for(pool.read_thrice.wait(), 5)
    finally:
        task.cancel()
    assert sample(metrics, "workpool_queue_pending_runs", queue="default") == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "reading queue stats failed (ConnectionError: backend down)" in warnings[0]


async def test_a_taken_port_is_a_one_line_configuration_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        metrics = WorkerMetrics(port, host="127.0.0.1")
        with pytest.raises(ConfigurationError) as raised:
            metrics.start_server()
    message = str(raised.value)
    assert message.startswith(f"cannot serve metrics on 127.0.0.1:{port}: ")
    assert "\n" not in message
    await metrics.stop_server()  # nothing was started: nothing to stop


def test_refresh_every_must_be_positive() -> None:
    with pytest.raises(ConfigurationError):
        WorkerMetrics(refresh_every=0)
