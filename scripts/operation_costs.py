"""What each hot operation costs a run in work done inside the store (issue 17).

Run: ``PYTHONPATH=<tree>/src:. python scripts/operation_costs.py`` from the repository
root, ``<tree>`` the checkout to measure (its backends, through the Backend protocol
only, so any version since issue 15 runs it). For runs without a batch or a debounce,
gated (``max_concurrency=1000``: every run admitted) and ungated, it prints per
operation: on SQLite the statements its transaction runs (a trace callback on the
backend's connection; BEGIN and COMMIT included), on Redis the commands the server
executes (``INFO commandstats``: each ``redis.call`` of a script counts, the EVALSHA
too). Exact counts, not timings: two versions compare without a quiet machine.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as redis
from tests.redis_server import RedisServer

from workpool.backends import open_backend
from workpool.backends.base import Backend, Finish, Lease, NewRun

NOW = 1_800_000_000.0
BATCH = 10


def runs(count: int, gated: bool) -> list[NewRun]:
    return [
        NewRun(
            id=uuid.uuid4().hex,
            workflow="noop",
            queue="default",
            input="1",
            available_at=NOW,
            max_concurrency=1000 if gated else None,
        )
        for _ in range(count)
    ]


class Counter:
    """Counts what the store does during one awaited call."""

    def __init__(self, backend: Backend, url: str) -> None:
        self.backend, self.url, self.seen = backend, url, 0
        if url.startswith("sqlite"):
            backend._thread._connection.set_trace_callback(self._statement)  # type: ignore[attr-defined]

    def _statement(self, _text: str) -> None:
        self.seen += 1

    async def _redis_total(self) -> int:
        client = redis.Redis.from_url(self.url)
        stats: dict[str, dict[str, int]] = await client.info("commandstats")
        await client.aclose()
        return sum(value["calls"] for name, value in stats.items() if name != "cmdstat_info")

    async def count(self, call: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
        before = self.seen if self.url.startswith("sqlite") else await self._redis_total()
        result = await call()
        after = self.seen if self.url.startswith("sqlite") else await self._redis_total()
        return after - before, result


async def measure(url: str, gated: bool) -> dict[str, float]:
    backend = await open_backend(url)
    counter = Counter(backend, url)
    figures: dict[str, float] = {}
    figures["enqueue 1 run"], _ = await counter.count(lambda: backend.enqueue(runs(1, gated), NOW))
    many, _ = await counter.count(lambda: backend.enqueue(runs(100, gated), NOW))
    figures["enqueue 100 runs, per run"] = many / 100
    spent, result = await counter.count(
        lambda: backend.claim(["default"], "w", BATCH, 30.0, 3, NOW, workflows=["noop"])
    )
    figures[f"claim {BATCH}"] = spent
    leases: list[Lease] = [run.lease for run in result.runs]
    figures[f"renew {BATCH}"], _ = await counter.count(lambda: backend.renew(leases, 30.0, NOW))
    finishes = [Finish(lease, "succeeded", output="1") for lease in leases]
    figures[f"finish {BATCH}"], _ = await counter.count(lambda: backend.finish(finishes, NOW))
    await backend.close()
    return figures


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder, RedisServer() as server:
        for gated in (False, True):
            urls = {
                "sqlite": f"sqlite:///{Path(folder)}/{'g' if gated else 'u'}.db",
                "redis": server.url,
            }
            for name, url in urls.items():
                if name == "redis":
                    await redis.Redis.from_url(url).flushall()
                figures = await measure(url, gated)
                kind = "gated" if gated else "ungated"
                cells = ", ".join(f"{label}: {value:g}" for label, value in figures.items())
                print(f"{name:6} {kind:8} {cells}")
    sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
