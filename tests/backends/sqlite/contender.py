"""A process that keeps writing to one SQLite file, for the lock tests.

``python -m tests.backends.sqlite.contender DB START SECONDS TAG``: opens a backend on
DB, waits until the wall-clock time START, then for SECONDS enqueues ``BATCH`` runs a
transaction (a few milliseconds of holding the write lock) and pauses ``PAUSE`` between
two, as a worker does other work between its writes; prints how many writes it made.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from workpool.backends.base import NewRun
from workpool.backends.sqlite.backend import SQLiteBackend

BATCH = 100
PAUSE = 0.002


async def contend(database: Path, start: float, seconds: float, tag: str) -> int:
    backend = await SQLiteBackend.open(database)
    try:
        await asyncio.sleep(max(0.0, start - time.time()))
        end = time.time() + seconds
        count = 0
        while (now := time.time()) < end:
            runs = [
                NewRun(
                    id=f"{tag}-{count}-{n}", workflow="wf", queue="q", input="1", available_at=now
                )
                for n in range(BATCH)
            ]
            await backend.enqueue(runs, now)
            count += 1
            await asyncio.sleep(PAUSE)
        return count
    finally:
        await backend.close()


if __name__ == "__main__":
    database, start, seconds, tag = sys.argv[1:5]
    print(asyncio.run(contend(Path(database), float(start), float(seconds), tag)))
