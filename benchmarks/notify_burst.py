"""Concurrent enqueuers on PostgreSQL: do their commits serialize on NOTIFY?

``python -m benchmarks.notify_burst [--processes 4] [--callers 25] [--seconds 5]``
starts a private PostgreSQL at its durable defaults (fsync and synchronous commits on,
as in production), then ``--processes`` processes each run ``--callers`` concurrent
``enqueue`` calls of one run each, on one backend per process, for ``--seconds``. It
prints the runs enqueued per second (all processes), and one caller alone for scale.

A transaction that NOTIFYs takes a database-wide lock at commit and holds it through
its WAL flush, so commits that notify cannot share a flush (group commit): with the
NOTIFY inside each enqueue, concurrent callers go no faster than one. See
docs/architecture.md ("PostgreSQL wake-ups").
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time

from tests.conformance.helpers import new_run
from tests.postgres_server import PostgresServer

from workpool.backends import open_backend
from workpool.backends.postgres.migrate import migrate_url


async def _enqueue_for(url: str, callers: int, start_at: float, seconds: float) -> int:
    backend = await open_backend(url)
    done = 0
    await asyncio.sleep(max(0.0, start_at - time.time()))

    async def caller() -> None:
        nonlocal done
        while time.time() < start_at + seconds:
            now = time.time()
            await backend.enqueue([new_run(now)], now)
            done += 1

    try:
        await asyncio.gather(*(caller() for _ in range(callers)))
    finally:
        await backend.close()
    return done


def _process(
    url: str, callers: int, start_at: float, seconds: float, out: multiprocessing.Queue[int]
) -> None:
    out.put(asyncio.run(_enqueue_for(url, callers, start_at, seconds)))


def measure(url: str, processes: int, callers: int, seconds: float) -> float:
    """Runs enqueued per second by ``processes`` times ``callers`` concurrent callers."""
    results: multiprocessing.Queue[int] = multiprocessing.Queue()
    start_at = time.time() + 1.5  # every process connected before the clock starts
    started = [
        multiprocessing.Process(target=_process, args=(url, callers, start_at, seconds, results))
        for _ in range(processes)
    ]
    for process in started:
        process.start()
    total = sum(results.get(timeout=seconds + 60) for _ in started)
    for process in started:
        process.join()
    return total / seconds


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.notify_burst")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--callers", type=int, default=25, help="concurrent callers per process")
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    with PostgresServer(durable=True) as server:
        url = server.url("burst")
        asyncio.run(migrate_url(url))
        alone = measure(url, 1, 1, args.seconds)
        many = measure(url, args.processes, args.callers, args.seconds)
    callers = args.processes * args.callers
    print(f"1 caller: {alone:.0f} runs/s")
    print(
        f"{callers} callers ({args.processes} processes): {many:.0f} runs/s ({many / alone:.1f}x)"
    )


if __name__ == "__main__":
    main()
