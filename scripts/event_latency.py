"""How long an event takes to reach the run that waits for it, on both backends (issue 17).

Run: ``python scripts/event_latency.py [--runs N]``. On a fresh SQLite file
(``synchronous=FULL``) and a private redis-server, one in-process worker serves a
workflow that waits for an event (``ctx.step.wait_for_event``) and notes the time its
wait returned. For each of N runs, one after the other, the script starts the run,
waits until it is suspended (its slot freed), then sends its event and measures:

- send: the ``pool.send_event`` call (the store of the event and the run's wake-up, one
  atomic operation);
- resume: from just before that call to the handler's return from the wait (the
  wake-up, the claim, the replay and the ``take_event`` that hands it the payload);
- publish: a ``ctx.set_event`` call in the handler, then ``get_event`` of a run that
  has published, and one without the key yet (one read each);
- first wait: the ``wait_for_event`` of a run whose event was sent before it started
  (no suspension: the one ``take_event`` call).

Prints p50 / p99 / max in milliseconds per backend.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workpool import RunContext, Workpool

ROOT = Path(__file__).resolve().parent.parent


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(sample * 1000 for sample in samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    p50 = statistics.median(ordered)
    return f"  {name:<11} p50 {p50:7.2f}  p99 {p99:7.2f}  max {ordered[-1]:7.2f}"


async def measure(url: str, runs: int) -> dict[str, list[float]]:
    pool = Workpool(url, app="event-latency")
    resumed: dict[str, float] = {}
    times: dict[str, list[float]] = {name: [] for name in ("send", "resume", "publish")}
    times |= {"get (set)": [], "get (unset)": [], "first wait": []}

    @pool.workflow(max_concurrency=None)
    async def approval(ctx: RunContext, early: bool) -> object:
        started = time.perf_counter()
        payload = await ctx.step.wait_for_event("decision", "decision")
        if early:
            times["first wait"].append(time.perf_counter() - started)
        resumed[ctx.run_id] = time.perf_counter()
        started = time.perf_counter()
        await ctx.set_event("status", "decided")
        times["publish"].append(time.perf_counter() - started)
        return payload

    async with pool.worker(concurrency=10):
        for _ in range(runs):
            handle = await approval.run(False)
            while (await pool.get_run(handle.id)).status != "suspended":  # noqa: ASYNC110
                await asyncio.sleep(0.001)  # the status is in the store, not in this process
            started = time.perf_counter()
            await pool.send_event(handle.id, "decision", "yes")
            times["send"].append(time.perf_counter() - started)
            await handle.result(timeout=30)
            times["resume"].append(resumed[handle.id] - started)
            for key, name in (("status", "get (set)"), ("unset", "get (unset)")):
                started = time.perf_counter()
                await handle.get_event(key, timeout=0)
                times[name].append(time.perf_counter() - started)
            early = await approval.run(True)
            await early.send_event("decision", "before")
            await early.result(timeout=30)
    await pool.aclose()
    return times


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # the tests' private redis-server
    from tests.redis_server import RedisServer

    with tempfile.TemporaryDirectory() as folder, RedisServer() as server:
        for name, url in (("sqlite", f"sqlite:///{folder}/events.db"), ("redis", server.url)):
            times = await measure(url, options.runs)
            print(f"{name} ({options.runs} runs), ms:")
            for what, samples in times.items():
                print(summary(what, samples))


if __name__ == "__main__":
    asyncio.run(main())
