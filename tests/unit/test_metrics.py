"""WorkerMetrics on its own: registries, the timing layer, the queue gauges, the server."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from workpool.app import Workpool
from workpool.backends import open_backend
from workpool.backends.base import Finish, Lease
from workpool.errors import BackendUnavailableError, ConfigurationError
from workpool.stats import Figures, Stats
from workpool.worker.health import BackendHealth
from workpool.worker.metrics import TimedBackend, WorkerMetrics


def sample(metrics: WorkerMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def test_the_timing_layer_times_run_loop_operations_only(tmp_path: Path) -> None:
    metrics = WorkerMetrics()
    real = await open_backend(f"sqlite:///{tmp_path}/timed.db")
    backend = metrics.timed(real)
    assert isinstance(backend, TimedBackend)
    result = await backend.renew([Lease("r1", "t")], 20, 0)
    assert result.lost == {"r1"}
    await backend.wait_for_work(["default"], 0.01)  # forwarded, not timed
    await real.close()
    with pytest.raises(BackendUnavailableError, match="is closed"):
        await backend.finish([Finish(Lease("r1", "t"), "succeeded", output="1")], 0)
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


async def test_queue_gauges_carry_on_after_a_failed_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "not-yet"  # the store cannot be opened until it exists
    url = f"sqlite:///{folder}/pool.db"
    metrics = WorkerMetrics(refresh_every=0.01)
    pool = Workpool(url)
    health = BackendHealth()
    task = asyncio.create_task(metrics.watch_queues(pool, ["default"], health))
    try:
        await wait_for(lambda: not health.reachable)
        folder.mkdir()
        async with Workpool(url) as producer:
            for number in range(4):
                await producer.run_by_name("later", number, run_after=timedelta(hours=1))
        pending = "workpool_queue_pending_runs"
        await wait_for(lambda: sample(metrics, pending, queue="default") == 4)
    finally:
        task.cancel()
        await pool.aclose()
    assert health.reachable
    [lost] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert lost.startswith("backend unreachable (metrics: cannot open SQLite database")


async def wait_for(condition: Callable[[], bool], limit: float = 10.0) -> None:
    """Poll until ``condition`` holds; fail after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


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
