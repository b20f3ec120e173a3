"""What every workload shares: its environment, waiting for a batch, reading its runs."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.app import BenchApp, build
from benchmarks.stats import Measured, MetricSpec
from benchmarks.stores import Store, Target
from benchmarks.workers import BenchmarkError, WorkerProcess
from workpool import PreparedRun, Run, RunNotFoundError

POLL_SECONDS = 0.025
"""How often the harness counts active runs while it waits for a batch."""
READ_CONCURRENCY = 32
"""``get_run`` calls in flight at once (redis-py's pool caps connections)."""
BATCH = 500
"""Runs per ``enqueue_many`` call wherever the workloads batch."""


@dataclass(slots=True)
class Env:
    """What a workload repetition gets: the backend's store and the suite's settings."""

    store: Store
    quick: bool
    log_dir: Path
    worker_env: dict[str, str] = field(default_factory=dict)
    """Extra environment for worker processes."""
    redis_pid: int | None = None
    """The suite's redis-server, whose CPU time counts as the suite's."""

    @property
    def backend(self) -> str:
        return self.store.backend


@dataclass(frozen=True, slots=True)
class Workload:
    """A benchmark: an id (B1...), what it measures, and one repetition of it."""

    id: str
    title: str
    backends: tuple[str, ...]
    metrics: tuple[MetricSpec, ...]
    run: Callable[[Env], Awaitable[Measured]]


@asynccontextmanager
async def opened_app(target: Target) -> AsyncIterator[BenchApp]:
    """The benchmark pool on ``target``, its backend opened (so no timing includes it)."""
    app = build(target.url)
    try:
        await app.pool.backend()
        yield app
    finally:
        await app.pool.aclose()
        await target.close()


async def enqueue_batched(app: BenchApp, prepared: Sequence[PreparedRun]) -> list[str]:
    """Store runs with ``enqueue_many`` in batches of 500; return their ids in order."""
    ids: list[str] = []
    for start in range(0, len(prepared), BATCH):
        handles = await app.pool.enqueue_many(prepared[start : start + BATCH])
        ids.extend(handle.id for handle in handles)
    return ids


async def wait_drained(
    target: Target,
    processes: Sequence[WorkerProcess],
    *,
    left: int = 0,
    scheduled: bool = True,
    timeout: float = 120.0,
    poll: float = POLL_SECONDS,
) -> int:
    """Wait until at most ``left`` runs are active; return how many polls that took.

    Raises BenchmarkError if a worker dies or the runs are not done in ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    polls = 0
    while True:
        polls += 1
        active = await target.active_count(scheduled=scheduled)
        if active <= left:
            return polls
        for process in processes:
            process.check_alive()
        if time.monotonic() > deadline:
            raise BenchmarkError(f"{active - left} runs still not finished after {timeout:.0f} s")
        await asyncio.sleep(poll)


async def read_runs(app: BenchApp, run_ids: Sequence[str]) -> list[Run]:
    """Every run's record via ``pool.get_run``, 32 at a time; raise if any is missing."""
    runs: list[Run | None] = [None] * len(run_ids)
    missing: list[str] = []
    next_index = iter(range(len(run_ids)))

    async def reader() -> None:
        for index in next_index:
            try:
                runs[index] = await app.pool.get_run(run_ids[index])
            except RunNotFoundError:
                missing.append(run_ids[index])

    await asyncio.gather(*(reader() for _ in range(READ_CONCURRENCY)))
    if missing:
        raise BenchmarkError(f"LOST RUNS: {len(missing)} of {len(run_ids)} runs are gone")
    return [run for run in runs if run is not None]


def check_succeeded(runs: Iterable[Run]) -> list[Run]:
    """The runs, if every one ``succeeded``; else BenchmarkError with the tally."""
    runs = list(runs)
    statuses = Counter(run.status for run in runs)
    if statuses["succeeded"] != len(runs):
        failed = next((run for run in runs if run.status != "succeeded"), None)
        example = f"; e.g. {failed.id}: {failed.status} {failed.error}" if failed else ""
        raise BenchmarkError(f"NOT ALL RUNS SUCCEEDED: {dict(statuses)}{example}")
    return runs


async def read_succeeded(app: BenchApp, run_ids: Sequence[str]) -> list[Run]:
    """``read_runs`` then ``check_succeeded``."""
    return check_succeeded(await read_runs(app, run_ids))


def drain_rate(runs: Sequence[Run]) -> float:
    """Runs per second from the first start to the last finish."""
    first = min(_stamp(run.started_at) for run in runs)
    last = max(_stamp(run.finished_at) for run in runs)
    return len(runs) / (last - first)


def seconds_between(run: Run, start: str, end: str) -> float:
    """``run.<end> - run.<start>`` in seconds (fields: created_at, started_at, ...)."""
    return _stamp(getattr(run, end)) - _stamp(getattr(run, start))


def _stamp(value: Any) -> float:
    if value is None:
        raise BenchmarkError("a run that succeeded has no start or finish time")
    return float(value.timestamp())
