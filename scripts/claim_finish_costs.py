"""What a claim of 10 runs and a finish of those 10 cost, several versions side by side
(the checks of corrupt run records, docs/architecture.md "Corrupt run records").

Run: ``python scripts/claim_finish_costs.py NAME=TREE [NAME=TREE ...] [--rounds N]
[--calls N]``, each TREE a checkout of workpool (its ``src/`` is put on ``PYTHONPATH``),
e.g. ``old=/tmp/base main=/tmp/main new=.``. One private redis-server and one temporary
directory serve every version. Each round runs every version in turn (the order rotates
round by round), each as a child process that enqueues 10 runs, then times
``backend.claim`` of them and ``backend.finish`` of them, ``--calls`` times, on Redis
(its own key prefix) and on SQLite (a fresh file, ``synchronous=FULL``). It prints the
median over all calls of each version, in µs per call of 10 runs: on Redis the
server's time (EVALSHA ``usec`` in ``INFO commandstats``) and the caller's, on SQLite
the caller's (in-process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BATCH = 10
Times = dict[str, list[float]]


async def claim_and_finish(
    backend: Any, prefix: str, times: Times, server: Callable[[], Awaitable[float]] | None
) -> None:
    """Enqueue BATCH runs, then time the claim of them and the finish of them (and the
    server's time of each, if ``server`` reads it)."""
    from workpool.backends.base import Finish, NewRun

    now = time.time()
    runs = [
        NewRun(id=f"{prefix}{n}", workflow="noop", queue="default", input="1", available_at=now)
        for n in range(BATCH)
    ]
    await backend.enqueue(runs, now)
    marks = [await server()] if server else []
    started = time.perf_counter()
    claimed = await backend.claim(["default"], "worker", BATCH, 30.0, 3, now, alone=False)
    middle = time.perf_counter()
    marks += [await server()] if server else []
    assert len(claimed.runs) == BATCH, claimed
    finishes = [Finish(run.lease, "succeeded", output="1") for run in claimed.runs]
    resumed = time.perf_counter()
    assert all(await backend.finish(finishes, now + 0.001))
    ended = time.perf_counter()
    marks += [await server()] if server else []
    times["claim"].append((middle - started) * 1e6)
    times["finish"].append((ended - resumed) * 1e6)
    if marks:
        times["claim server"].append(marks[1] - marks[0])
        times["finish server"].append(marks[2] - marks[1])


async def redis_child(url: str, prefix: str, calls: int) -> Times:
    """Claim and finish BATCH runs ``calls`` times on Redis: µs per call."""
    import redis.asyncio as aredis

    from workpool.backends.redis.backend import RedisBackend

    backend = await RedisBackend.open(url, prefix=prefix)
    raw = aredis.Redis.from_url(url)

    async def evalsha_usec() -> float:
        stats: dict[str, Any] = await raw.info("commandstats")
        return float(stats.get("cmdstat_evalsha", {}).get("usec", 0))

    times: Times = {"claim": [], "finish": [], "claim server": [], "finish server": []}
    for call in range(calls):
        await claim_and_finish(backend, f"{prefix}-{call}-", times, evalsha_usec)
    await raw.aclose()
    await backend.close()
    return times


async def sqlite_child(path: str, calls: int) -> Times:
    """Claim and finish BATCH runs ``calls`` times on a fresh SQLite file: µs per call."""
    from workpool.backends.sqlite.backend import SQLiteBackend

    backend = await SQLiteBackend.open(Path(path))
    times: Times = {"claim": [], "finish": []}
    for call in range(calls):
        await claim_and_finish(backend, f"s{call}-", times, None)
    await backend.close()
    return times


def run_child(tree: str, arguments: list[str]) -> Times:
    """One child process of the version at ``tree``: its times."""
    environment = dict(os.environ, PYTHONPATH=str(Path(tree).resolve() / "src"))
    command = [sys.executable, __file__, "--child", *arguments]
    output = subprocess.check_output(command, env=environment, cwd=tempfile.gettempdir())
    loaded: Times = json.loads(output)
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", help="NAME=TREE")
    parser.add_argument("--rounds", type=int, default=10, help="child processes per version")
    parser.add_argument("--calls", type=int, default=30, help="claims and finishes per child")
    options = parser.parse_args()
    trees = dict(version.split("=", 1) for version in options.versions)
    sys.path.insert(0, str(ROOT))  # the tests' private redis-server
    from tests.redis_server import RedisServer

    results: dict[tuple[str, str], list[float]] = {}
    calls = str(options.calls)
    with RedisServer() as server, tempfile.TemporaryDirectory() as folder:
        for round_number in range(options.rounds):
            names = list(trees)
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                tag = f"{name}{round_number}"
                children = {
                    "redis": ["redis", server.url, tag, calls],
                    "sqlite": ["sqlite", str(Path(folder) / f"{tag}.db"), calls],
                }
                for kind, arguments in children.items():
                    for label, samples in run_child(trees[name], arguments).items():
                        results.setdefault((f"{kind} {label}", name), []).extend(samples)
    rounds, per = options.rounds, options.calls
    print(f"µs per call of {BATCH} runs, median of {rounds} x {per} calls per version")
    labels = sorted({label for label, _ in results}, key=lambda label: label.split()[::-1])
    print(f"{'':22s}" + "".join(f"{name:>10s}" for name in trees))
    for label in labels:
        medians = [statistics.median(results[label, name]) for name in trees]
        print(f"{label:22s}" + "".join(f"{median:10.0f}" for median in medians))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, *rest = sys.argv[2:]
        if kind == "redis":
            print(json.dumps(asyncio.run(redis_child(rest[0], rest[1], int(rest[2])))))
        else:
            print(json.dumps(asyncio.run(sqlite_child(rest[0], int(rest[1])))))
    else:
        main()
