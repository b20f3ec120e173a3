"""What the Redis scripts of two versions cost the server, side by side (issue 15).

Run: ``python scripts/redis_script_ab.py BASE_TREE NEW_TREE [--batch N] [--block N]
[--rounds N]``, each tree a checkout of workpool (its ``src/`` is read). Both versions'
enqueue, claim and finish scripts are loaded into ONE private redis-server (each under
its own key prefix) and driven in turn, in blocks of ``--block`` runs (enqueue them,
claim them, finish them, ``--batch`` runs per call), alternating which version goes
first. Per run and operation it prints EVALSHA's own time (``INFO commandstats``) and
redis-server's CPU time (``INFO cpu``), as the median and the minimum over the blocks.
On a machine others load, the minimum is the steadier figure; a block sees the same
load for both versions only roughly, so repeat and compare several runs.

Calls go through redis-py from one process; the arguments are this tree's codec, each
run's enqueue fields cut to the count the other version's scripts read (issue 17 added
two at the end; the format did not change otherwise since issue 15).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from workpool.backends.base import Finish, Lease, NewRun
from workpool.backends.redis import codec

ROOT = Path(__file__).resolve().parent.parent
OPERATIONS = ("enqueue", "claim", "finish")
DUMP = """
import json, sys
sys.path.insert(0, sys.argv[1])
from workpool.backends.redis import scripts
try:
    from workpool.backends.redis.sources import script_source
except ImportError:  # before sources.py
    script_source = scripts.script_source
from workpool.backends.redis import codec
sources = {name: script_source(name) for name in OPERATIONS}
print(json.dumps({"sources": sources, "run_fields": codec.RUN_FIELDS}))
""".replace("OPERATIONS", repr(OPERATIONS))


def sources(tree: str) -> tuple[dict[str, str], int]:
    """The enqueue, claim and finish script sources of the workpool at ``tree``, and
    how many fields its enqueue script reads per run."""
    command = [sys.executable, "-c", DUMP, str(Path(tree).resolve() / "src")]
    loaded: dict[str, Any] = json.loads(subprocess.check_output(command))
    return loaded["sources"], int(loaded["run_fields"])


def enqueue_arguments(runs: list[NewRun], now: float, fields: int) -> list[str]:
    """This tree's enqueue arguments, each run's cut to ``fields``."""
    encoded = codec.encode_runs(runs, now)
    return [
        value
        for start in range(0, len(encoded), codec.RUN_FIELDS)
        for value in encoded[start : start + fields]
    ]


class Costs:
    """EVALSHA time and server CPU so far, read between blocks only."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def now(self) -> tuple[float, float]:
        stats: dict[str, Any] = self.client.info("commandstats")
        cpu: dict[str, Any] = self.client.info("cpu")
        usec = float(stats.get("cmdstat_evalsha", {}).get("usec", 0))
        return usec, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def block(
    client: redis.Redis,
    version: tuple[dict[str, str], int],
    tag: str,
    runs: int,
    batch: int,
    first_id: int,
) -> list[tuple[float, float]]:
    """Enqueue, claim and finish ``runs`` runs; per operation (EVALSHA us, CPU us) per run."""
    (shas, fields), costs, now = version, Costs(client), time.time()
    marks = [costs.now()]
    for start in range(first_id, first_id + runs, batch):
        new = [
            NewRun(id=f"r{n}", workflow="noop", queue="default", input="1", available_at=now)
            for n in range(start, start + batch)
        ]
        client.evalsha(shas["enqueue"], 1, tag, repr(now), *enqueue_arguments(new, now, fields))
    marks.append(costs.now())
    rows = []
    for _ in range(0, runs, batch):
        alone = "1" if batch == 1 else "0"
        args = (repr(now), repr(now + 30), "w", batch, 3, alone, 1, "noop", "default")
        rows.append(client.evalsha(shas["claim"], 1, tag, *args)[2:])
    marks.append(costs.now())
    for claimed in rows:
        done = [Finish(Lease(row[0], row[1]), "succeeded", output="1") for row in claimed]
        client.evalsha(shas["finish"], 1, tag, repr(now + 0.001), codec.encode_finishes(done))
    marks.append(costs.now())
    return [
        ((after[0] - before[0]) / runs, 1e6 * (after[1] - before[1]) / runs)
        for before, after in itertools.pairwise(marks)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("--batch", type=int, default=1, help="runs per script call")
    parser.add_argument("--block", type=int, default=500, help="runs per block")
    parser.add_argument("--rounds", type=int, default=8, help="blocks per version")
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT))  # the tests' private redis-server
    from tests.redis_server import RedisServer

    trees = {"base": options.base, "new": options.new}
    results: dict[str, list[list[tuple[float, float]]]] = {name: [] for name in trees}
    with RedisServer() as server:
        client = redis.Redis.from_url(server.url, decode_responses=True)
        versions = {}
        for name, tree in trees.items():
            texts, fields = sources(tree)
            versions[name] = ({op: client.script_load(text) for op, text in texts.items()}, fields)
        first_id = 0
        for round_number in range(options.rounds):
            order = list(trees) if round_number % 2 == 0 else list(trees)[::-1]
            for name in order:
                tag = "{" + name + "}"
                results[name].append(
                    block(client, versions[name], tag, options.block, options.batch, first_id)
                )
                first_id += options.block
    print(f"per run, {options.batch} run(s) per call: median (min) over {options.rounds} blocks")
    for index, operation in enumerate(OPERATIONS):
        line = f"{operation:8s}"
        for name in trees:
            usec = [blocks[index][0] for blocks in results[name]]
            cpu = [blocks[index][1] for blocks in results[name]]
            line += (
                f" | {name}: EVALSHA {statistics.median(usec):5.1f} ({min(usec):5.1f}) us,"
                f" CPU {statistics.median(cpu):5.1f} ({min(cpu):5.1f}) us"
            )
        print(line)


if __name__ == "__main__":
    main()
