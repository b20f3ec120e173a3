"""PEERS: the subjects beside workpool (huey, dramatiq, taskiq, and the raw bars), their
worker processes, and how each workload is measured on them.

A subject's adapter (``benchmarks/peer_apps/``) gives its worker command and its client;
its tasks call ``observe`` as they start, and its worker processes write what they saw
into a directory the harness reads (``peer_apps/observe.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import Env
from benchmarks.peer_apps.observe import Client
from benchmarks.stats import percentile
from benchmarks.stores import PostgresTarget, SqliteTarget, Target
from benchmarks.workers import ROOT, BenchmarkError

RATE = 200
"""Jobs per second of the latency workload's open loop."""
SETTLE_SECONDS = 1.0
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
IO_CONCURRENCY = 50


@dataclass(frozen=True, slots=True)
class Peer:
    """A subject on one backend: its adapter module and the packages that module imports."""

    name: str
    backend: str
    module: str
    requires: tuple[str, ...]
    defaults: str
    """Its default settings, as the docs report them."""
    io: str = ""
    """Its settings for 50 I/O-bound jobs at once; empty: it cannot run them."""
    sync_client: bool = True
    """Its client is synchronous (so its one-at-a-time figure is a sync caller's)."""
    raw: bool = False
    """A raw bar (a floor, not a peer): enqueue, drain by 1 process and latency only."""


SUBJECTS = (
    Peer(
        "huey",
        "redis",
        "benchmarks.peer_apps.huey_redis",
        ("huey", "redis"),
        "RedisHuey, huey_consumer defaults: 1 worker thread; 2 processes: -w 2 -k process",
        "-w 50 -k thread",
    ),
    Peer(
        "dramatiq",
        "redis",
        "benchmarks.peer_apps.dramatiq_app",
        ("dramatiq", "redis"),
        "RedisBroker, default middleware, 8 threads per process, --processes 1 (or 2)",
        "--processes 1 --threads 50",
    ),
    Peer(
        "taskiq",
        "redis",
        "benchmarks.peer_apps.taskiq_app",
        ("taskiq", "taskiq_redis"),
        "RedisStreamBroker, 100 async tasks per process, --workers 1 (or 2)",
        "--workers 1 --max-async-tasks 50",
        sync_client=False,
    ),
    Peer(
        "raw",
        "redis",
        "benchmarks.peer_apps.raw_redis",
        ("redis",),
        "LPUSH of a JSON job; 1 consumer process BRPOPs and runs one job at a time",
        raw=True,
    ),
    Peer(
        "procrastinate",
        "postgres",
        "benchmarks.peer_apps.procrastinate_app",
        ("procrastinate",),
        "PsycopgConnector, async tasks; worker --concurrency 10 (its default is 1), "
        "LISTEN/NOTIFY on, jobs kept",
        sync_client=False,
    ),
    Peer(
        "pgqueuer",
        "postgres",
        "benchmarks.peer_apps.pgqueuer_app",
        ("pgqueuer",),
        "PsycopgDriver on one connection, async entrypoints; pgq run defaults: "
        "--batch-size 10, LISTEN/NOTIFY, no concurrency limit",
        sync_client=False,
    ),
    Peer(
        "dbos",
        "postgres",
        "benchmarks.peer_apps.dbos_app",
        ("dbos",),
        "DBOSClient.enqueue (sync); a queue at its defaults (polled every 1 s, no worker "
        "concurrency limit), async workflows, one process",
    ),
    Peer(
        "raw",
        "postgres",
        "benchmarks.peer_apps.raw_postgres",
        ("psycopg",),
        "INSERT per transaction (a trigger NOTIFYs); 1 consumer process claims 10 per "
        "UPDATE ... FOR UPDATE SKIP LOCKED RETURNING, marks them done in one more UPDATE",
        raw=True,
    ),
    Peer(
        "huey",
        "sqlite",
        "benchmarks.peer_apps.huey_sqlite",
        ("huey",),
        "SqliteHuey, huey_consumer defaults: 1 worker thread, polls from 0.1 s backing off; "
        "2 processes: -w 2 -k process",
        "-w 50 -k thread",
    ),
    Peer(
        "raw",
        "sqlite",
        "benchmarks.peer_apps.raw_sqlite",
        (),
        "WAL, synchronous=FULL; INSERT per transaction; 1 consumer process claims 10 "
        "per UPDATE ... RETURNING, marks them done in one more transaction",
        raw=True,
    ),
)


def missing(peer: Peer) -> str | None:
    """Why ``peer`` cannot run here (a package is not installed), or None."""
    absent = [name for name in peer.requires if importlib.util.find_spec(name) is None]
    if absent:
        return f"not installed ({', '.join(absent)}; `make bench-peers` installs the peers extra)"
    return None


async def peer_url(peer: Peer, target: Target) -> str:
    """What the adapter takes: the Redis URL, a SQLite file beside the target's, or a new
    PostgreSQL database with the peer's tables installed (its adapter's ``install``)."""
    if isinstance(target, SqliteTarget):
        return str(target.path.with_name(f"{target.path.stem}-{peer.name}.db"))
    if isinstance(target, PostgresTarget):
        url = await target.database(peer.name)
        await importlib.import_module(peer.module).install(url)
        return url
    return target.url


class PeerWorker:
    """The subject's own worker command in its own session (it may start children)."""

    def __init__(
        self, peer: Peer, url: str, processes: int, concurrency: int | None, log_dir: Path
    ) -> None:
        module = importlib.import_module(peer.module)
        command: list[str] = module.worker_command(processes, concurrency)
        self.out = Path(tempfile.mkdtemp(dir=log_dir))
        self.log = log_dir / f"{peer.module}.log"
        env = {**os.environ, "BENCH_PEER_URL": url, "BENCH_PEER_OUT": str(self.out)}
        env["PYTHONPATH"] = str(ROOT)
        with open(self.log, "ab") as handle:
            self.popen = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._read: dict[Path, tuple[int, dict[str, list[float]]]] = {}

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
            raise BenchmarkError(f"worker exited with code {self.popen.returncode}:\n{tail}")

    async def wait_ready(self) -> None:
        """Wait until a process of it has run a probe job (``x < 0``)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while not any(self.out.glob("ready-*")):
            self.check_alive()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"no probe job run within {READY_TIMEOUT:.0f} s")
            await asyncio.sleep(0.02)

    async def seen(self, count: int, timeout: float) -> list[dict[str, list[float]]]:
        """Wait until its processes have reported ``count`` jobs; each one's report."""
        deadline = time.monotonic() + timeout
        while True:
            reports = self._reports()
            total = sum(len(report["starts"]) for report in reports)
            if total >= count:
                return reports
            self.check_alive()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"{total} of {count} jobs seen after {timeout:.0f} s")
            await asyncio.sleep(0.05)

    def _reports(self) -> list[dict[str, list[float]]]:
        for path in self.out.glob("seen-*.json"):
            stamp = path.stat().st_mtime_ns
            if self._read.get(path, (None,))[0] != stamp:
                self._read[path] = (stamp, json.loads(path.read_text()))
        return [report for _, report in self._read.values()]

    def stop(self) -> None:
        """SIGTERM its session, then SIGKILL what is left after 15 s."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=STOP_TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()


async def open_client(peer: Peer, url: str, task: str = "noop") -> Client:
    module = importlib.import_module(peer.module)
    client: Client = await module.open_client(url, task)
    return client


async def enqueue_rate(env: Env, peer: Peer, count: int, *, concurrently: bool) -> float:
    """Jobs/s of ``count`` enqueues on an empty store: one at a time, or by 100 callers."""
    target = await env.store.fresh()
    client = await open_client(peer, await peer_url(peer, target))
    try:
        start = time.perf_counter()
        if concurrently:
            await client.enqueue_concurrently([0.0] * count)
        else:
            for _ in range(count):
                await client.enqueue(0.0)
        return count / (time.perf_counter() - start)
    finally:
        await client.close()
        await target.close()


async def fill(peer: Peer, url: str, count: int, task: str) -> None:
    """Store ``count`` jobs (not timed): an async client's concurrently, else one by one."""
    client = await open_client(peer, url, task)
    try:
        if peer.sync_client:
            for _ in range(count):
                await client.enqueue(0.0)
        else:
            await client.enqueue_concurrently([0.0] * count)
    finally:
        await client.close()


async def drain_rate(
    env: Env, peer: Peer, count: int, processes: int, concurrency: int | None, task: str = "noop"
) -> tuple[float, dict[str, Any]]:
    """Jobs/s of worker processes emptying ``count`` jobs stored before they started.

    The window opens when the last process to start took its first job (so a process's
    late start-up does not count) and closes at the last job's start; the rate is the
    jobs started in it over its length. Details: the processes that ran jobs and how far
    apart their first jobs were.
    """
    target = await env.store.fresh()
    url = await peer_url(peer, target)
    await fill(peer, url, count, task)
    worker = PeerWorker(peer, url, processes, concurrency, env.log_dir)
    try:
        reports = await worker.seen(count, READY_TIMEOUT + count / 100)
    finally:
        worker.stop()
        await target.close()
    firsts = [min(report["starts"]) for report in reports if report["starts"]]
    opened = max(firsts)
    starts = [start for report in reports for start in report["starts"] if start >= opened]
    details = {"processes_seen": len(firsts), "first_jobs_spread_s": opened - min(firsts)}
    return len(starts) / (max(starts) - opened), details


async def latency(env: Env, peer: Peer, seconds: float) -> tuple[float, float]:
    """p50 and p99 (ms) of enqueue-to-start at 200 jobs/s on an idle worker (defaults)."""
    target = await env.store.fresh()
    url = await peer_url(peer, target)
    count = int(RATE * seconds)
    worker = PeerWorker(peer, url, 1, None, env.log_dir)
    client = await open_client(peer, url)
    try:
        await client.enqueue(-1.0)
        await worker.wait_ready()
        await asyncio.sleep(SETTLE_SECONDS)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for number in range(count):
            delay = start + number / RATE - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await client.enqueue(time.time())
        reports = await worker.seen(count, 60.0)
    finally:
        await client.close()
        worker.stop()
        await target.close()
    delays = [1000 * delay for report in reports for delay in report["delays"]]
    return percentile(delays, 50), percentile(delays, 99)
