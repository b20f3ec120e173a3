"""One of the processes that enqueue debounced runs at once (test_batch_processes).

``python -m tests.integration.debounce_enqueuer ROLE BURSTS``: once its connection is
open it logs ``ready ROLE`` and reads START (seconds since the epoch) from its standard
input, so that a slow start on a loaded machine cannot put one process's bursts out of
step with the other's. Then at START + 3 s * burst, role ``first`` enqueues 10
debounced runs of ``refresh`` 5 ms apart, and role ``last`` 20, then one more, marked
final, 0.4 s after its 20th (when ``first`` is done). Each enqueue logs
``enqueued ROLE BURST SEQUENCE RUN_ID`` (the run its enqueue collapsed into).
"""

from __future__ import annotations

import asyncio
import sys
import time

from tests.integration.batch_app import pool, refresh
from tests.integration.process_app import log

WINDOW = 1.0
"""Seconds a burst's run waits after the last enqueue of the burst."""
BURST_EVERY = 3.0


async def burst(role: str, number: int) -> None:
    for sequence in range(20 if role == "last" else 10):
        change = {"role": role, "burst": number, "sequence": sequence}
        handle = await refresh.run(change, debounce=WINDOW, debounce_key="catalog")
        log("enqueued", role, number, sequence, handle.id)
        await asyncio.sleep(0.005)
    if role == "last":
        await asyncio.sleep(0.4)
        change = {"role": role, "burst": number, "sequence": "final"}
        handle = await refresh.run(change, debounce=WINDOW, debounce_key="catalog")
        log("enqueued", role, number, "final", handle.id)


async def main(role: str, bursts: int) -> None:
    await pool.list_workflows()  # the connection is open
    log("ready", role)
    line = await asyncio.to_thread(sys.stdin.readline)
    start = float(line)
    for number in range(bursts):
        await asyncio.sleep(max(0.0, start + number * BURST_EVERY - time.time()))
        await burst(role, number)
    await pool.aclose()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
