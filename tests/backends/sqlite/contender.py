"""A process that keeps writing to one SQLite file, for the lock tests.

``python -m tests.backends.sqlite.contender DB SECONDS TAG``: opens a backend on DB,
prints ``ready``, reads the wall-clock time START from its standard input and waits
until then (so that each contender writes for the same span however long it took to
start), then for SECONDS enqueues ``BATCH`` runs a
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


async def contend(database: Path, seconds: float, tag: str) -> int:
    backend = await SQLiteBackend.open(database)
    try:
        print("ready", flush=True)
        start = float(await asyncio.to_thread(sys.stdin.readline))
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
    database, seconds, tag = sys.argv[1:4]
    print(asyncio.run(contend(Path(database), float(seconds), tag)))
