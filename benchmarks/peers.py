"""PEERS: workpool beside huey, dramatiq, taskiq and a raw bar per store, issue 15's table;
on PostgreSQL beside procrastinate, pgqueuer, DBOS and a raw SKIP LOCKED loop (issue 24:
the rows of ``peer_report.POSTGRES_ROWS`` only, the drain of 10,000 jobs).

Each repetition runs, phase by phase, every subject of the backend in turn (workpool,
then each peer, then the raw bar) on a freshly emptied store (the suite's own
redis-server, or a new SQLite file), so a disturbance of the machine falls on all of
them alike. The phases are the rows of ``peer_report.ROWS``:

1. enqueue one at a time: ``await noop.run(i)`` for workpool, ``noop.run_sync(i)`` too,
   the peer's own client (async for taskiq, sync for the others);
2. enqueue by 100 concurrent callers: rounds of ``asyncio.gather`` (workpool, taskiq),
   100 threads for the sync clients;
3. drain N no-op jobs by 1 and by 2 worker processes at default settings, and
   workpool's 1 and 2 processes at concurrency 100;
4. drain N/2 jobs that each sleep 10 ms, 50 at once;
5. enqueue-to-start latency, p50 and p99, of an open loop at 200 jobs/s on an idle
   worker at default settings.

The peers are optional (``make bench-peers`` installs them): a peer that is not
installed, or whose worker fails, is skipped with the reason, and the other subjects are
still measured.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from benchmarks import peer_report, peer_subjects
from benchmarks.b1_enqueue import concurrent, one_at_a_time, sync_one_at_a_time
from benchmarks.b2_drain import drain as workpool_drain
from benchmarks.b3_latency import open_loop
from benchmarks.b4_io import io_drain
from benchmarks.harness import (
    Env,
    Workload,
    opened_app,
    read_succeeded,
    seconds_between,
    wait_drained,
)
from benchmarks.peer_report import (
    BACKENDS,
    DRAIN_ONE,
    DRAIN_ONE_100,
    DRAIN_TWO,
    DRAIN_TWO_100,
    ENQUEUE,
    ENQUEUE_SYNC,
    GATHER,
    IO,
    P50,
    P99,
    Row,
    metric,
    rows_of,
)
from benchmarks.peer_subjects import IO_CONCURRENCY, RATE, SETTLE_SECONDS, SUBJECTS, Peer
from benchmarks.stats import Figure, Measured, MetricSpec, percentile
from benchmarks.workers import workers

WORKPOOL_CONCURRENCY = 10
"""workpool's CLI default ``--concurrency``."""


def _specs() -> tuple[MetricSpec, ...]:
    specs: list[MetricSpec] = []
    for backend in BACKENDS:
        for row in rows_of(backend):
            subjects = ["workpool"] if "workpool" in row.who else []
            subjects += [
                s.name
                for s in SUBJECTS
                if s.backend == backend and ("raw" if s.raw else "peer") in row.who
            ]
            specs.extend(MetricSpec(metric(name, row), row.unit, only=backend) for name in subjects)
    return tuple(specs)


async def workpool_enqueue(env: Env, count: int, how: Row) -> float:
    target = await env.store.fresh()
    async with opened_app(target) as app:
        if how is ENQUEUE_SYNC:
            return await sync_one_at_a_time(app, count)
        if how is GATHER:
            return await concurrent(app, count)
        return await one_at_a_time(app, count)


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
    """One repetition on one backend: the values so far, and the subjects skipped and why."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.subjects = [s for s in SUBJECTS if s.backend == env.backend]
        self.skipped = {s.name: why for s in self.subjects if (why := peer_subjects.missing(s))}
        self.values: dict[str, float] = {}
        self.details: dict[str, Any] = {}
        self.rows = rows_of(env.backend)

    def live(self, row: Row) -> list[Peer]:
        if row not in self.rows:
            return []
        return [
            s
            for s in self.subjects
            if s.name not in self.skipped and ("raw" if s.raw else "peer") in row.who
        ]

    async def each(self, row: Row, measure: Callable[[Peer], Awaitable[float]]) -> None:
        """``measure`` each live subject of ``row`` in turn; one that fails is skipped
        from then on."""
        for peer in self.live(row):
            try:
                self.values[metric(peer.name, row)] = await measure(peer)
            except Exception as error:
                first = (str(error) or type(error).__name__).splitlines()[0]
                self.skipped[peer.name] = f"{row.name}: {type(error).__name__}: {first}"
                print(f"!!! PEERS [{self.env.backend}] {peer.name} skipped: {first}")

    async def enqueues(self, count: int) -> None:
        for row in (r for r in (ENQUEUE, ENQUEUE_SYNC, GATHER) if r in self.rows):
            self.values[metric("workpool", row)] = await workpool_enqueue(self.env, count, row)

            async def enqueue(peer: Peer, row: Row = row) -> float:
                return await peer_subjects.enqueue_rate(
                    self.env, peer, count, concurrently=row is GATHER
                )

            await self.each(row, enqueue)

    async def drains(self, count: int) -> None:
        env = self.env
        plans = ((DRAIN_ONE, 1, WORKPOOL_CONCURRENCY), (DRAIN_TWO, 2, WORKPOOL_CONCURRENCY))
        for row, processes, concurrency in (plan for plan in plans if plan[0] in self.rows):
            self.values[metric("workpool", row)] = await workpool_drain(
                env, processes, count, supervised=processes > 1, concurrency=concurrency
            )

            async def drain(peer: Peer, row: Row = row, processes: int = processes) -> float:
                rate, details = await peer_subjects.drain_rate(env, peer, count, processes, None)
                self.details[metric(peer.name, row)] = details
                return rate

            await self.each(row, drain)
        if DRAIN_ONE_100 not in self.rows:
            return
        self.values[metric("workpool", DRAIN_ONE_100)] = await workpool_drain(env, 1, count)
        self.values[metric("workpool", DRAIN_TWO_100)] = await workpool_drain(
            env, 2, count, supervised=True
        )

    async def io_bound(self, count: int) -> None:
        if IO not in self.rows:
            return
        rate, self.details[metric("workpool", IO)] = await io_drain(self.env, count)
        self.values[metric("workpool", IO)] = rate

        async def drain(peer: Peer) -> float:
            rate, details = await peer_subjects.drain_rate(
                self.env, peer, count, 1, IO_CONCURRENCY, "io_sleep"
            )
            self.details[metric(peer.name, IO)] = details
            return rate

        await self.each(IO, drain)

    async def latencies(self, seconds: float) -> None:
        values = self.values
        values[metric("workpool", P50)], values[metric("workpool", P99)] = await workpool_latency(
            self.env, seconds
        )

        async def p50(peer: Peer) -> float:
            median, values[metric(peer.name, P99)] = await peer_subjects.latency(
                self.env, peer, seconds
            )
            return median

        await self.each(P50, p50)


async def run(env: Env) -> Measured:
    """One repetition: every phase, each subject in turn."""
    postgres = env.backend == "postgres"
    # PostgreSQL's peers enqueue at 100-300 jobs/s here: 5,000 each keeps a repetition
    # under 10 min; its drain is issue 24's 10,000 no-ops.
    count = 5_000 if env.quick or postgres else 20_000
    drained = 10_000 if postgres and not env.quick else count
    session = Session(env)
    if [s for s in session.subjects if not s.raw and s.name not in session.skipped]:
        await session.enqueues(count)
        await session.drains(drained)
        await session.io_bound(count // 2)
        await session.latencies(5.0 if env.quick else 10.0)
    for name, reason in session.skipped.items():
        print(f"PEERS [{env.backend}] {name} skipped: {reason}")
    details = {
        "skipped": session.skipped,
        "settings": {s.name: {"defaults": s.defaults, "io": s.io} for s in session.subjects},
        "per_figure": session.details,
    }
    return Measured(session.values, details)


WORKLOAD = Workload(
    id=peer_report.WORKLOAD_ID,
    title="peers side by side",
    backends=("sqlite", "redis", "postgres"),
    metrics=_specs(),
    run=run,
)


def ratio_rows(figures: Sequence[Figure]) -> list[dict[str, Any]]:
    """Per backend and row: workpool / best peer and workpool / raw bar (medians)."""
    medians = {
        (f.backend, f.spec.name): f.median
        for f in figures
        if f.workload == WORKLOAD.id and f.values
    }
    return peer_report.ratio_rows(medians)


if __name__ == "__main__":
    peer_report.main(sys.argv[1:])
