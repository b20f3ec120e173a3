"""PEERS: workpool beside huey, dramatiq and taskiq, same workloads, same run, interleaved.

Each repetition runs, phase by phase, every subject of the backend in turn (workpool,
then each peer) on a freshly emptied store (the suite's own redis-server, or a new
SQLite file), so a disturbance of the machine falls on all of them alike:

1. enqueue one at a time: ``await noop.run(i)`` for workpool, the peer's async client
   where it has one (taskiq), else its sync client (huey, dramatiq);
2. drain N no-op jobs, enqueued while no worker runs, by 1 worker process: the peers
   at their default settings, then at workpool's CLI default ``--concurrency 10``
   (workpool is measured once at 10: that is its default);
3. enqueue-to-start latency, p50 and p99, of an open loop at 200 jobs/s on an idle
   worker (the same two settings as B3: one process, workpool at concurrency 10, the
   peers at their defaults).

The peers are optional (``make bench-peers`` installs them): a peer that is not
installed, or whose worker does not start, is skipped with the reason, and the other
subjects are still measured. ``ratio_rows`` makes the table of workpool / best peer.
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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.b1_enqueue import one_at_a_time
from benchmarks.b3_latency import open_loop
from benchmarks.harness import (
    Env,
    Workload,
    drain_rate,
    opened_app,
    read_succeeded,
    seconds_between,
    wait_drained,
)
from benchmarks.peer_apps.observe import Client
from benchmarks.stats import Figure, Measured, MetricSpec, percentile
from benchmarks.stores import SqliteTarget, Target
from benchmarks.workers import ROOT, BenchmarkError, workers

WORKPOOL_CONCURRENCY = 10
"""workpool's CLI default ``--concurrency``, also the peers' second setting."""
RATE = 200
SETTLE_SECONDS = 1.0
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0

ENQUEUE = "enqueue one at a time"
DRAIN_DEFAULT = "drain, 1 process, default settings"
DRAIN_TEN = "drain, 1 process, concurrency 10"
P50 = "enqueue to start, p50"
P99 = "enqueue to start, p99"
ROWS: tuple[tuple[str, str, bool], ...] = (
    (ENQUEUE, "runs/s", True),
    (DRAIN_DEFAULT, "runs/s", True),
    (DRAIN_TEN, "runs/s", True),
    (P50, "ms", False),
    (P99, "ms", False),
)
"""Each row: its name, its unit, and whether higher is better."""


@dataclass(frozen=True, slots=True)
class Peer:
    """A peer on one backend: its adapter module and the packages that module imports."""

    name: str
    backend: str
    module: str
    requires: tuple[str, ...]
    settings: str
    """Its settings, as the docs report them."""


PEERS = (
    Peer(
        "huey",
        "redis",
        "benchmarks.peer_apps.huey_redis",
        ("huey", "redis"),
        "RedisHuey, huey_consumer defaults (1 thread); then -w 10 -k thread",
    ),
    Peer(
        "dramatiq",
        "redis",
        "benchmarks.peer_apps.dramatiq_app",
        ("dramatiq", "redis"),
        "RedisBroker, default middleware, --processes 1, 8 threads; then --threads 10",
    ),
    Peer(
        "taskiq",
        "redis",
        "benchmarks.peer_apps.taskiq_app",
        ("taskiq", "taskiq_redis"),
        "RedisStreamBroker, --workers 1, 100 async tasks; then --max-async-tasks 10",
    ),
    Peer(
        "huey",
        "sqlite",
        "benchmarks.peer_apps.huey_sqlite",
        ("huey",),
        "SqliteHuey, huey_consumer defaults (1 thread, polls with backoff); then -w 10",
    ),
)


def missing(peer: Peer) -> str | None:
    """Why ``peer`` cannot run here (a package is not installed), or None."""
    absent = [name for name in peer.requires if importlib.util.find_spec(name) is None]
    if absent:
        return f"not installed ({', '.join(absent)}; `make bench-peers` installs the peers extra)"
    return None


def metric(subject: str, row: str) -> str:
    return f"{subject}: {row}"


def _specs() -> tuple[MetricSpec, ...]:
    specs: list[MetricSpec] = []
    for row, unit, _ in ROWS:
        for backend in ("redis", "sqlite"):
            subjects = ["workpool"] + [p.name for p in PEERS if p.backend == backend]
            for subject in subjects:
                if subject == "workpool" and row == DRAIN_DEFAULT:
                    continue  # workpool's default settings are concurrency 10: one figure
                specs.append(MetricSpec(metric(subject, row), unit, only=backend))
    return tuple(specs)


def peer_url(target: Target) -> str:
    """What the peer's adapter takes: the Redis URL, or a SQLite file beside the target's."""
    if isinstance(target, SqliteTarget):
        return str(target.path.with_name(target.path.stem + "-huey.db"))
    return target.url


class PeerWorker:
    """The peer's own worker command in its own session (it may start children)."""

    def __init__(
        self, peer: Peer, url: str, concurrency: int | None, out: Path, expect: int, log: Path
    ) -> None:
        module = importlib.import_module(peer.module)
        command: list[str] = module.worker_command(concurrency)
        env = {
            **os.environ,
            "BENCH_PEER_URL": url,
            "BENCH_PEER_OUT": str(out),
            "BENCH_PEER_EXPECT": str(expect),
            "PYTHONPATH": str(ROOT),
        }
        self.out = out
        self.log = log
        with open(log, "ab") as handle:
            self.popen = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-15:])
            raise BenchmarkError(f"worker exited with code {self.popen.returncode}:\n{tail}")

    async def wait_file(self, path: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not await asyncio.to_thread(path.exists):
            self.check_alive()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"{path.name} not written within {timeout:.0f} s")
            await asyncio.sleep(0.02)

    def stop(self) -> None:
        """SIGTERM its session, then SIGKILL what is left after 15 s."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=STOP_TIMEOUT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait()


async def _open(peer: Peer, url: str) -> Client:
    module = importlib.import_module(peer.module)
    client: Client = await module.open_client(url)
    return client


async def peer_enqueue(peer: Peer, url: str, count: int) -> float:
    client = await _open(peer, url)
    try:
        start = time.perf_counter()
        for _ in range(count):
            await client.enqueue(0.0)
        return count / (time.perf_counter() - start)
    finally:
        await client.close()


async def peer_drain(env: Env, peer: Peer, count: int, concurrency: int | None) -> float:
    """Jobs/s of one worker process emptying ``count`` jobs stored before it started:
    count / (last start - first start), as the task saw them."""
    target = await env.store.fresh()
    url = peer_url(target)
    client = await _open(peer, url)
    try:
        for _ in range(count):
            await client.enqueue(0.0)
    finally:
        await client.close()
    out = Path(tempfile.mkdtemp(dir=env.log_dir)) / "drain.json"
    worker = PeerWorker(peer, url, concurrency, out, count, env.log_dir / f"{peer.module}.log")
    try:
        await worker.wait_file(out, READY_TIMEOUT + count / 100)
    finally:
        worker.stop()
        await target.close()
    seen: dict[str, Any] = json.loads(out.read_text())
    return float(seen["count"]) / (float(seen["last"]) - float(seen["first"]))


async def peer_latency(env: Env, peer: Peer, seconds: float) -> tuple[float, float]:
    """p50 and p99 (ms) of enqueue-to-start at 200 jobs/s on an idle worker (defaults)."""
    target = await env.store.fresh()
    url = peer_url(target)
    count = int(RATE * seconds)
    out = Path(tempfile.mkdtemp(dir=env.log_dir)) / "latency.json"
    worker = PeerWorker(peer, url, None, out, count, env.log_dir / f"{peer.module}.log")
    client = await _open(peer, url)
    try:
        await client.enqueue(-1.0)
        await worker.wait_file(Path(str(out) + ".ready"), READY_TIMEOUT)
        await asyncio.sleep(SETTLE_SECONDS)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for number in range(count):
            delay = start + number / RATE - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await client.enqueue(time.time())
        await worker.wait_file(out, 60.0)
    finally:
        await client.close()
        worker.stop()
        await target.close()
    delays = [1000 * d for d in json.loads(out.read_text())["delays"]]
    return percentile(delays, 50), percentile(delays, 99)


async def workpool_enqueue(env: Env, count: int) -> float:
    target = await env.store.fresh()
    async with opened_app(target) as app:
        return await one_at_a_time(app, count)


async def workpool_drain(env: Env, count: int) -> float:
    """As B2, with one worker process at the CLI default concurrency (10)."""
    target = await env.store.fresh()
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(count)]
        async with workers(target, 1, WORKPOOL_CONCURRENCY, env.log_dir, env.worker_env) as procs:
            handles = await app.pool.enqueue_many(prepared)
            await wait_drained(target, procs, timeout=60 + count / 100)
        runs = await read_succeeded(app, [handle.id for handle in handles])
    return drain_rate(runs)


async def workpool_latency(env: Env, seconds: float) -> tuple[float, float]:
    """As B3: created_at to started_at of an open loop at 200 runs/s, concurrency 10."""
    target = await env.store.fresh()
    async with opened_app(target) as app:
        async with workers(target, 1, WORKPOOL_CONCURRENCY, env.log_dir, env.worker_env) as procs:
            await asyncio.sleep(SETTLE_SECONDS)
            client = await open_loop(app, RATE, seconds)
            await wait_drained(target, procs)
        runs = await read_succeeded(app, client.run_ids)
    delays = [1000 * seconds_between(run, "created_at", "started_at") for run in runs]
    return percentile(delays, 50), percentile(delays, 99)


class Session:
    """One repetition on one backend: the values so far, and the peers skipped and why."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.peers = [p for p in PEERS if p.backend == env.backend]
        self.skipped = {p.name: why for p in self.peers if (why := missing(p))}
        self.values: dict[str, float] = {}

    @property
    def live(self) -> list[Peer]:
        return [p for p in self.peers if p.name not in self.skipped]

    async def each_peer(
        self, row: str, measure: Callable[[Peer], Awaitable[Any]]
    ) -> list[tuple[Peer, Any]]:
        """``measure`` each live peer in turn; a peer that fails is skipped from then on."""
        results: list[tuple[Peer, Any]] = []
        for peer in self.live:
            try:
                results.append((peer, await measure(peer)))
            except Exception as error:
                first = (str(error) or type(error).__name__).splitlines()[0]
                self.skipped[peer.name] = f"{row}: {type(error).__name__}: {first}"
                print(f"!!! PEERS [{self.env.backend}] {peer.name} skipped: {first}")
        return results


async def run(env: Env) -> Measured:
    """One repetition: every phase, each subject in turn."""
    quick = env.quick
    count = 5_000 if quick else 20_000
    seconds = 5.0 if quick else 10.0
    session = Session(env)
    values = session.values
    if session.live:
        values[metric("workpool", ENQUEUE)] = await workpool_enqueue(env, count)

        async def enqueue(peer: Peer) -> float:
            return await peer_enqueue(peer, peer_url(await env.store.fresh()), count)

        for peer, got in await session.each_peer(ENQUEUE, enqueue):
            values[metric(peer.name, ENQUEUE)] = got
        values[metric("workpool", DRAIN_TEN)] = await workpool_drain(env, count)
        settings: tuple[tuple[str, int | None], ...] = (
            (DRAIN_DEFAULT, None),
            (DRAIN_TEN, WORKPOOL_CONCURRENCY),
        )
        for row, setting in settings:

            async def drain(peer: Peer, setting: int | None = setting) -> float:
                return await peer_drain(env, peer, count, setting)

            for peer, got in await session.each_peer(row, drain):
                values[metric(peer.name, row)] = got
        values[metric("workpool", P50)], values[metric("workpool", P99)] = await workpool_latency(
            env, seconds
        )
        for peer, (p50, p99) in await session.each_peer(
            P50, lambda p: peer_latency(env, p, seconds)
        ):
            values[metric(peer.name, P50)], values[metric(peer.name, P99)] = p50, p99
    for name, reason in session.skipped.items():
        print(f"PEERS [{env.backend}] {name} skipped: {reason}")
    return Measured(values, {"skipped": session.skipped, "settings": _settings(session.peers)})


def _settings(peers: Sequence[Peer]) -> dict[str, str]:
    return {p.name: p.settings for p in peers}


WORKLOAD = Workload(
    id="PEERS",
    title="peers side by side",
    backends=("sqlite", "redis"),
    metrics=_specs(),
    run=run,
)


def ratio_rows(figures: Sequence[Figure]) -> list[dict[str, Any]]:
    """Per backend and row: workpool's median, the best peer's, and workpool / best."""
    medians = {
        (f.backend, f.spec.name): f.median for f in figures if f.workload == "PEERS" and f.values
    }
    rows: list[dict[str, Any]] = []
    for backend in ("redis", "sqlite"):
        for row, unit, higher in ROWS:
            mine = medians.get(
                (backend, metric("workpool", DRAIN_TEN if row == DRAIN_DEFAULT else row))
            )
            peers = {
                p.name: medians[(backend, metric(p.name, row))]
                for p in PEERS
                if p.backend == backend and (backend, metric(p.name, row)) in medians
            }
            if mine is None or not peers:
                continue
            best = (max if higher else min)(peers, key=lambda name: peers[name])
            rows.append(
                {
                    "backend": backend,
                    "row": row,
                    "unit": unit,
                    "workpool": mine,
                    "best_peer": best,
                    "best_peer_value": peers[best],
                    "ratio": mine / peers[best],
                    "higher_is_better": higher,
                    "workpool_leads": mine >= peers[best] if higher else mine <= peers[best],
                }
            )
    return rows


def ratio_table(rows: Sequence[dict[str, Any]]) -> str:
    """The ratio rows as Markdown (printed, and written beside results.json)."""
    lines = [
        "| backend | workload | workpool | best peer | workpool / best peer | |",
        "| --- | --- | ---: | --- | ---: | --- |",
    ]
    for r in rows:
        lead = "workpool leads" if r["workpool_leads"] else "**behind**"
        better = "higher is better" if r["higher_is_better"] else "lower is better"
        lines.append(
            f"| {r['backend']} | {r['row']} ({r['unit']}, {better}) | {r['workpool']:,.2f} | "
            f"{r['best_peer']} {r['best_peer_value']:,.2f} | {r['ratio']:.2f} | {lead} |"
        )
    return "\n".join(lines)


def side_by_side(results: dict[str, Any]) -> str:
    """``results.json``'s PEERS figures as Markdown: one row per workload, one column per
    subject and backend, median (range)."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    columns: list[str] = []
    for entry in results["figures"]:
        if entry["workload"] != WORKLOAD.id or entry["median"] is None:
            continue
        subject, row = entry["metric"].split(": ", 1)
        column = f"{subject} ({entry['backend']})"
        if column not in columns:
            columns.append(column)
        shape = ",.3g" if entry["unit"] == "ms" else ",.0f"
        low, high = entry["min"], entry["max"]
        cells.setdefault((row, entry["unit"]), {})[column] = f"{entry['median']:{shape}}" + (
            f" ({low:{shape}} to {high:{shape}})" if low != high else ""
        )
    lines = [
        "| workload | " + " | ".join(columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    order = [name for name, _, _ in ROWS]
    for (row, unit), by_column in sorted(cells.items(), key=lambda item: order.index(item[0][0])):
        shown = [by_column.get(column, "") for column in columns]
        lines.append(f"| {row} ({unit}) | " + " | ".join(shown) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> None:
    """``python -m benchmarks.peers [results.json]``: the side-by-side and ratio tables."""
    path = Path(argv[0]) if argv else ROOT / "benchmarks" / "results" / "peers" / "results.json"
    results = json.loads(path.read_text())
    print(side_by_side(results))
    print()
    print(ratio_table(results.get("peer_ratios") or []))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
