"""What the portal adds to a ``*_sync`` call (docs/benchmarks.md, issue 15).

Run: ``python scripts/portal_cost.py`` with ``PYTHONPATH`` naming the ``src/`` of the
version to measure. Prints the median and minimum µs of ``Portal.call`` of a coroutine
that returns at once (15 blocks of 20,000 calls): starting and stopping the loop, the
task, the driver's bookkeeping; no backend.
"""

from __future__ import annotations

import statistics
import time

from workpool.sync import Portal

CALLS = 20_000
BLOCKS = 15


async def returns_at_once() -> int:
    return 1


def main() -> None:
    portal = Portal()
    samples = []
    for _ in range(BLOCKS):
        started = time.perf_counter()
        for _ in range(CALLS):
            portal.call(returns_at_once(), "cost")
        samples.append((time.perf_counter() - started) / CALLS * 1e6)
    portal.close()
    print(
        f"Portal.call of a coroutine that returns at once: median "
        f"{statistics.median(samples):.2f} µs, min {min(samples):.2f} µs"
    )


if __name__ == "__main__":
    main()
