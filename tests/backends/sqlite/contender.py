"""A process that enqueues into one SQLite file as fast as it can, for the lock tests.

``python -m tests.backends.sqlite.contender DB START SECONDS TAG``: opens a backend on
DB, waits until the wall-clock time START, enqueues one run per call for SECONDS, then
prints how many it stored.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from workpool.backends.base import NewRun
from workpool.backends.sqlite.backend import SQLiteBackend


async def contend(database: Path, start: float, seconds: float, tag: str) -> int:
    backend = await SQLiteBackend.open(database)
    try:
        await asyncio.sleep(max(0.0, start - time.time()))
        end = time.time() + seconds
        count = 0
        while (now := time.time()) < end:
            run = NewRun(id=f"{tag}-{count}", workflow="wf", queue="q", input="1", available_at=now)
            await backend.enqueue([run], now)
            count += 1
        return count
    finally:
        await backend.close()


if __name__ == "__main__":
    database, start, seconds, tag = sys.argv[1:5]
    print(asyncio.run(contend(Path(database), float(start), float(seconds), tag)))
