"""The cost of one lease renewal (``Backend.renew`` of --leases leases), on a SQLite
file and on a local Redis server: for comparing commits on the renewal's hot path,
without and with one cancel-requested run among the leases. Reported: wall and client
CPU microseconds per renew (best of --rounds rounds: the machine may be shared), and on
Redis the server's microseconds per script call (INFO commandstats) and the bytes of
the script's reply (as RESP; it reads the backend's private script object for it).

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
from typing import Any

from redis.asyncio import Redis
from tests.redis_server import RedisServer

from workpool.backends import open_backend
from workpool.backends.base import Backend, Lease, NewRun
from workpool.backends.redis import codec

NOW = 1_000_000.0
LEASE_SECONDS = 30.0


async def measure(url: str, leases: int, renewals: int, rounds: int) -> tuple[str, str]:
    """(plain, with one cancel-requested run): what one renew call costs."""
    backend = await open_backend(url)
    runs = [
        NewRun(id=uuid.uuid4().hex, workflow="w", queue="q", input="null", available_at=NOW)
        for _ in range(leases)
    ]
    await backend.enqueue(runs, NOW)
    claimed = await backend.claim(["q"], "worker", leases, LEASE_SECONDS, 3, NOW)
    held = [run.lease for run in claimed.runs]
    plain = await _best(backend, url, held, renewals, rounds)
    cancel = backend.cancel
    if "trace_context" in inspect.signature(cancel).parameters:
        traced = '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
        await cancel(held[0].run_id, "stop", NOW, trace_context=traced)
    else:
        await cancel(held[0].run_id, "stop", NOW)
    requested = await _best(backend, url, held, renewals, rounds)
    await backend.close()
    return plain, requested


async def _best(backend: Backend, url: str, held: list[Lease], renewals: int, rounds: int) -> str:
    wall = cpu = server = float("inf")
    redis = Redis.from_url(url) if url.startswith("redis") else None
    for _ in range(rounds):
        if redis is not None:
            await redis.config_resetstat()
        started, cpu_started = time.perf_counter(), time.process_time()
        for _ in range(renewals):
            await backend.renew(held, LEASE_SECONDS, NOW)
        wall = min(wall, (time.perf_counter() - started) / renewals * 1e6)
        cpu = min(cpu, (time.process_time() - cpu_started) / renewals * 1e6)
        if redis is not None:
            stats = await redis.info("commandstats")
            server = min(server, float(stats["cmdstat_evalsha"]["usec_per_call"]))
    text = f"wall {wall:.0f} us, client CPU {cpu:.0f} us"
    if redis is not None:
        args = [codec.seconds(NOW + LEASE_SECONDS)]
        args += [part for lease in codec.renewals(held, {}) for part in lease]
        reply = await backend._scripts._renew(args)  # type: ignore[attr-defined]
        text += f", server {server:.1f} us, reply {_resp_bytes(reply)} bytes"
        await redis.aclose()
    return text


def _resp_bytes(reply: Any) -> int:
    """The size of ``reply`` (lists, strings, integers, None) as RESP2 sends it."""
    if isinstance(reply, list):
        return len(f"*{len(reply)}\r\n") + sum(_resp_bytes(item) for item in reply)
    if reply is None:
        return len("$-1\r\n")
    if isinstance(reply, int):
        return len(f":{reply}\r\n")
    data = reply.encode() if isinstance(reply, str) else bytes(reply)
    return len(f"${len(data)}\r\n") + len(data) + 2


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
                print(f"{name}: {plain}\n{name} with a cancel: {requested}")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
