"""CPU microseconds per run that one process spends enqueueing runs one at a time and
draining them with an in-process worker, on a SQLite file: for comparing a commit with
tracing off, without the otel extra, or with the SDK on (README "Tracing").

Process CPU time, not wall time: on a shared, loaded machine it moves far less than
throughput does. Uses only the public API, so it runs on commits before tracing too:

    PYTHONPATH=<checkout>/src .venv/bin/python scripts/tracing_overhead.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from workpool import RunContext, Workpool


async def measure(runs: int, folder: Path) -> tuple[float, float]:
    """(enqueue, drain) CPU microseconds per run."""
    pool = Workpool(f"sqlite:///{folder}/overhead.db", app="overhead")

    @pool.workflow(max_concurrency=None)
    async def noop(ctx: RunContext, n: int) -> int:
        return n

    started = time.process_time()
    handles = [await noop.run(n) for n in range(runs)]
    enqueue = (time.process_time() - started) / runs * 1e6
    started = time.process_time()
    async with pool.worker(concurrency=100, lease=timedelta(seconds=30)):
        for handle in handles:  # (the same reads in every configuration)
            await handle.result(timeout=600)
    drain = (time.process_time() - started) / runs * 1e6
    await pool.aclose()
    pool.close()
    return enqueue, drain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            results.append(asyncio.run(measure(args.runs, Path(folder))))
    enqueue = min(result[0] for result in results)
    drain = min(result[1] for result in results)
    print(f"enqueue {enqueue:.1f} us CPU/run, drain {drain:.1f} us CPU/run (min of {args.repeat})")


if __name__ == "__main__":
    main()
