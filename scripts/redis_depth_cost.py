"""Whether the Redis scripts' own time grows with queue depth or history (issue 15).

Run: ``python scripts/redis_depth_cost.py [--depth N]`` (with ``PYTHONPATH=<tree>/src``
to measure another version). On a private redis-server it measures, from EVALSHA's
``usec`` in ``INFO commandstats`` (server time only, so the client and the machine's
other load count far less than in B5's wall-clock figures), the time per run of
enqueueing 2,000 runs (batches of 500) and of claiming and finishing them (100 per
call): first on an empty store, then with N runs scheduled a year ahead in the same
queue (the deep backlog), then once they are all canceled (the long history). Three
repetitions each; the minimum is printed, with its ratio to the empty store's.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import redis

from workpool.backends.base import Finish, NewRun
from workpool.backends.redis.backend import RedisBackend

ROOT = Path(__file__).resolve().parent.parent
RUNS = 2_000
REPEAT = 3


class Store:
    """A backend and a plain client on one server, and the server time spent so far."""

    def __init__(self, backend: RedisBackend, client: redis.Redis) -> None:
        self.backend, self.client, self.made = backend, client, 0

    def usec(self) -> float:
        return float(self.client.info("commandstats").get("cmdstat_evalsha", {}).get("usec", 0))

    def runs(self, count: int, available_at: float) -> list[NewRun]:
        first, self.made = self.made, self.made + count
        return [
            NewRun(
                id=f"r{n}", workflow="noop", queue="default", input="1", available_at=available_at
            )
            for n in range(first, self.made)
        ]

    async def measure(self) -> tuple[float, float]:
        """Server us per run: (enqueue, claim + finish) of RUNS due runs."""
        now = time.time()
        runs = self.runs(RUNS, now)
        start = self.usec()
        for first in range(0, RUNS, 500):
            await self.backend.enqueue(runs[first : first + 500], now)
        enqueued = self.usec()
        done = 0
        while done < RUNS:
            claimed = await self.backend.claim(["default"], "w", 100, 30, 3, now)
            ends = [Finish(run.lease, "succeeded", output="1") for run in claimed.runs]
            await self.backend.finish(ends, now)
            done += len(claimed.runs)
        return (enqueued - start) / RUNS, (self.usec() - enqueued) / RUNS


async def main(depth: int) -> None:
    sys.path.insert(0, str(ROOT))  # the tests' private redis-server
    from tests.redis_server import RedisServer

    with RedisServer() as server:
        backend = await RedisBackend.open(server.url, prefix="depth")
        store = Store(backend, redis.Redis.from_url(server.url, decode_responses=True))
        results = {"empty": [await store.measure() for _ in range(REPEAT)]}
        later = time.time() + 365 * 86_400
        for _ in range(0, depth, 500):
            await backend.enqueue(store.runs(500, later), time.time())
        results["deep backlog"] = [await store.measure() for _ in range(REPEAT)]
        while await backend.cancel_many(None, None, None, 1_000, time.time()):
            pass
        results["long history"] = [await store.measure() for _ in range(REPEAT)]
        await backend.close()
    empty = [min(pair[index] for pair in results["empty"]) for index in (0, 1)]
    for name, pairs in results.items():
        enqueue, claim = (min(pair[index] for pair in pairs) for index in (0, 1))
        print(
            f"{name:13s} enqueue {enqueue:5.1f} us/run ({enqueue / empty[0]:.2f}),"
            f" claim + finish {claim:5.1f} us/run ({claim / empty[1]:.2f})"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depth", type=int, default=100_000, help="runs in the backlog")
    asyncio.run(main(parser.parse_args().depth))
