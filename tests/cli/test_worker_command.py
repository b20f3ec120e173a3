"""The `workpool worker` command, invoked as a user would."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.cli.helpers import ROOT, workpool
from tests.integration import process_app
from workpool import Workpool


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return workpool(None, *arguments)


@dataclass
class ChoreWorker:
    """What ``worker_ran_a_chore`` gives: the chore's run id, then the worker's stderr."""

    run_id: str = ""
    stderr: bytes = b""


@contextlib.asynccontextmanager
async def worker_ran_a_chore(backend_url: str, *options: str) -> AsyncIterator[ChoreWorker]:
    """A worker process for process_app.pool with ``options``; the block runs once it
    has run one chore. After the block it gets SIGTERM, then its stderr is read."""
    env = {
        **os.environ,
        "WORKPOOL_URL": backend_url,
        "PYTHONPATH": str(ROOT / "src"),
        "WORKPOOL_TEST_LOG": os.devnull,
    }
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        *["-m", "workpool", "worker", "tests.integration.process_app:pool", *options],
        cwd=ROOT,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    ran = ChoreWorker()
    try:
        pool = Workpool(backend_url)
        (handle,) = await pool.enqueue_many([process_app.chore.prepare(1)])
        assert await handle.result(timeout=30) == 1
        await pool.aclose()
        ran.run_id = handle.id
        yield ran
    finally:
        worker.send_signal(signal.SIGTERM)
        _, ran.stderr = await asyncio.wait_for(worker.communicate(), 30)
    assert worker.returncode == 0, ran.stderr.decode()


def test_help_lists_the_worker_options() -> None:
    result = run_cli("worker", "--help")
    assert result.returncode == 0
    for option in (
        "--queues",
        "--concurrency",
        "--lease-seconds",
        "--shutdown-grace",
        "--metrics-port",
        "--metrics-host",
        "--metrics-refresh-seconds",
        "--processes",
        "--max-runs-per-process",
    ):
        assert option in result.stdout
    assert "--supervisor-pipes" not in result.stdout  # the supervisor's, for its processes


def test_processes_and_their_metrics_ports_are_checked_before_anything_starts() -> None:
    result = run_cli("worker", "tests.integration.process_app:pool", "--processes", "0")
    assert result.returncode == 2
    assert "'--processes': must be a whole number from 1 to 1024, got '0'" in result.stderr
    options = ("--processes", "3", "--metrics-port", "65534")
    result = run_cli("worker", "tests.integration.process_app:pool", *options)
    assert result.returncode == 2
    assert "process 3 would serve metrics on port 65536" in result.stderr, result.stderr


def test_bad_pool_path_is_a_clear_error() -> None:
    result = run_cli("worker", "no_such_module:pool")
    assert result.returncode == 2
    assert "cannot import 'no_such_module'" in result.stderr
    result = run_cli("worker", "tests.integration.process_app:chore")
    assert result.returncode == 2
    assert "'tests.integration.process_app:chore' is a Workflow, not a Workpool" in result.stderr
    assert "the Workpool it defines: pool" in result.stderr


def test_worker_processes_of_a_pool_that_cannot_be_imported_fail_at_once() -> None:
    started = time.monotonic()
    result = run_cli("worker", "no_such_module:pool", "--processes", "2")
    took = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert "cannot import 'no_such_module': No module named 'no_such_module'" in result.stderr
    assert f"working directory ({ROOT})" in result.stderr, result.stderr
    assert "PYTHONPATH" in result.stderr
    assert "could not load its pool" in result.stderr  # the supervisor's last word
    assert "starting it again" not in result.stderr
    assert result.stderr.count("process 1 started") == 1  # no second try
    # It retried for 18 s before (1 + 2 + 4 + 8 s between five starts); now it takes
    # three Python start-ups (~1 s each on an idle machine, a few under load).
    assert took < 12, f"took {took:.1f} s"


def test_a_missing_pool_attribute_is_named_with_the_pools_the_module_has() -> None:
    result = run_cli("worker", "tests.integration.process_app:pol")
    assert result.returncode == 2
    assert (
        "module 'tests.integration.process_app' has no attribute 'pol'; "
        "the Workpool it defines: pool"
    ) in result.stderr, result.stderr
    assert "NoneType" not in result.stderr
    result = run_cli("worker", "json:pool")
    assert result.returncode == 2
    assert "module 'json' has no attribute 'pool'; it defines no Workpool" in result.stderr


def test_unreachable_backend_exits_2_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "workpool", "worker", "tests.integration.process_app:pool"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"WORKPOOL_URL": "redis://127.0.0.1:1/0", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("workpool: ")


async def test_json_log_format_writes_one_parsable_line_per_event(backend_url: str) -> None:
    async with worker_ran_a_chore(backend_url, "--log-format", "json") as ran:
        pass
    documents = [json.loads(line) for line in ran.stderr.decode().splitlines() if line.strip()]
    events = {doc["event"]: doc for doc in documents if doc.get("run_id") == ran.run_id}
    assert set(events) == {"started", "completed"}
    assert events["completed"]["outcome"] == "success"
    assert events["completed"]["workflow"] == "chore"
    assert events["started"]["queue"] == "default"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text: str = response.read().decode()
        return text


async def test_metrics_port_serves_prometheus_metrics(backend_url: str) -> None:
    port = free_port()
    options = ("--metrics-port", str(port), "--metrics-host", "127.0.0.1")
    async with worker_ran_a_chore(backend_url, *options):
        # The server starts before the worker claims: it is up once a run completed.
        text = await asyncio.to_thread(scrape, port)
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    chore = (("outcome", "success"), ("queue", "default"), ("workflow", "chore"))
    assert samples[("workpool_runs_finished_total", chore)] == 1
    assert samples[("workpool_run_duration_seconds_count", (("workflow", "chore"),))] == 1
    assert samples[("workpool_backend_operation_seconds_count", (("operation", "claim"),))] >= 1


def test_a_metrics_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                *[sys.executable, "-m", "workpool", "worker"],
                *["tests.integration.process_app:pool", "--metrics-port", str(port)],
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "WORKPOOL_URL": f"sqlite:///{tmp_path}/workpool.db"},
        )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"workpool: cannot serve metrics on 0.0.0.0:{port}: "), last
