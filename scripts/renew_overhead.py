"""Wall microseconds per lease renewal (``Backend.renew`` of --leases leases), on a
SQLite file and on a local Redis server: for comparing commits on the renewal's hot
path, without and with one cancel-requested run among the leases.

    PYTHONPATH=<checkout>/src:. .venv/bin/python scripts/renew_overhead.py [--renewals 2000]

(``.`` on the path: it starts its redis-server with the tests' helper.) The best of
--rounds rounds is reported: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import tempfile
import time
import uuid

from tests.redis_server import RedisServer

from workpool.backends import open_backend
from workpool.backends.base import Backend, Lease, NewRun

NOW = 1_000_000.0
LEASE_SECONDS = 30.0


async def measure(url: str, leases: int, renewals: int, rounds: int) -> tuple[float, float]:
    """(plain, with one cancel-requested run) microseconds per renew call."""
    backend = await open_backend(url)
    runs = [
        NewRun(id=uuid.uuid4().hex, workflow="w", queue="q", input="null", available_at=NOW)
        for _ in range(leases)
    ]
    await backend.enqueue(runs, NOW)
    claimed = await backend.claim(["q"], "worker", leases, LEASE_SECONDS, 3, NOW)
    held = [run.lease for run in claimed.runs]
    plain = await _best(backend, held, renewals, rounds)
    cancel = backend.cancel
    if "trace_context" in inspect.signature(cancel).parameters:
        traced = '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
        await cancel(held[0].run_id, "stop", NOW, trace_context=traced)
    else:
        await cancel(held[0].run_id, "stop", NOW)
    requested = await _best(backend, held, renewals, rounds)
    await backend.close()
    return plain, requested


async def _best(backend: Backend, held: list[Lease], renewals: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(renewals):
            await backend.renew(held, LEASE_SECONDS, NOW)
        best = min(best, (time.perf_counter() - started) / renewals * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--leases", type=int, default=20)
    parser.add_argument("--renewals", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        sqlite = f"sqlite:///{folder}/renew.db"
        server = RedisServer().start()
        try:
            for name, url in (("sqlite", sqlite), ("redis", server.url)):
                plain, requested = asyncio.run(
                    measure(url, options.leases, options.renewals, options.rounds)
                )
                print(f"{name}: {plain:.1f} us per renew, {requested:.1f} us with a cancel")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
