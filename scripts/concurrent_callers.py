"""What concurrent callers get from one pool (docs/benchmarks.md, issue 15).

Run: ``python scripts/concurrent_callers.py URL`` (a ``sqlite:///`` file or a
``redis://`` server; the store should be empty). Prints runs/s of 5,000 enqueues one at a
time, by 100 concurrent callers (rounds of ``asyncio.gather``) and by ``enqueue_many``
of 100; then reads of 2,000 runs: ``get_run`` one at a time and 100 concurrent,
``status()`` 100 concurrent. With ``--profile``, the gathered enqueues run under
cProfile and the 25 costliest functions are printed.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workpool import RunContext, Workflow, Workpool

ENQUEUES = 5_000
READS = 2_000
CALLERS = 100


def define_noop(pool: Workpool) -> Workflow[int, int]:
    @pool.workflow()
    async def noop(ctx: RunContext, value: int) -> int:
        return value

    return noop


async def rate(count: int, work: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await work()
    return count / (time.perf_counter() - start)


async def enqueues(pool: Workpool, noop: Workflow[int, int], mode: str) -> float:
    async def one_at_a_time() -> None:
        for number in range(ENQUEUES):
            await noop.run(number)

    async def gathered() -> None:
        for first in range(0, ENQUEUES, CALLERS):
            await asyncio.gather(*(noop.run(n) for n in range(first, first + CALLERS)))

    async def batched() -> None:
        for first in range(0, ENQUEUES, CALLERS):
            await pool.enqueue_many([noop.prepare(n) for n in range(first, first + CALLERS)])

    work = {"one at a time": one_at_a_time, "gather": gathered, "enqueue_many": batched}[mode]
    return await rate(ENQUEUES, work)


async def reads(pool: Workpool, noop: Workflow[int, int]) -> dict[str, float]:
    ids = [h.id for h in await pool.enqueue_many([noop.prepare(n) for n in range(READS)])]

    async def one_at_a_time() -> None:
        for run_id in ids:
            await pool.get_run(run_id)

    async def gathered() -> None:
        for first in range(0, READS, CALLERS):
            await asyncio.gather(*(pool.get_run(r) for r in ids[first : first + CALLERS]))

    async def statuses() -> None:
        for first in range(0, READS, CALLERS):
            chunk = ids[first : first + CALLERS]
            await asyncio.gather(*(pool.handle(r).status() for r in chunk))

    return {
        "get_run one at a time": await rate(READS, one_at_a_time),
        "get_run 100 concurrent": await rate(READS, gathered),
        "status 100 concurrent": await rate(READS, statuses),
    }


async def main(url: str, profile: bool) -> None:
    pool = Workpool(url, app="concurrent-callers")
    noop = define_noop(pool)
    await noop.run(-1)  # opens the backend
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        print(f"gather: {await enqueues(pool, noop, 'gather'):,.0f} runs/s (profiled)")
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    else:
        for mode in ("one at a time", "gather", "enqueue_many"):
            print(f"enqueue, {mode}: {await enqueues(pool, noop, mode):,.0f} runs/s")
        for name, value in (await reads(pool, noop)).items():
            print(f"{name}: {value:,.0f} runs/s")
    await pool.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], "--profile" in sys.argv[2:]))
