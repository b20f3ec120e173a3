"""B7 round trips: Redis commands per no-op run while 2 workers drain, from INFO commandstats
(on PostgreSQL: statements and transactions per run, see ``b7_postgres``).

Method. ``INFO commandstats`` counts every command executed, including each
``redis.call`` inside a Lua script (under the called command's own name). So:

- command executions per run = all calls in the window / runs;
- top-level commands per run = calls of commands that no workpool script calls
  (EVALSHA, BLPOP, HGETALL, connection set-up...) / runs. The commands scripts call are
  read from the ``redis.call('NAME'`` sites of workpool's Lua sources.

The window opens once both workers are idle and closes when the queue is empty; the
client enqueues (``enqueue_many``, batches of 500) while the workers drain. The
harness's own commands in the window are subtracted exactly: the one INFO that opened
it, and the ZCARDs of its completion polls (it counts them: 3 per poll, every 100 ms).

Server CPU, in the same window: the growth of redis-server's ``used_cpu_sys`` +
``used_cpu_user`` (``INFO cpu``, read just outside the commandstats window) per run, and
of EVALSHA's ``usec`` (its scripts' own time, the commands they call included) per run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from benchmarks import b7_postgres
from benchmarks.harness import (
    Env,
    Workload,
    enqueue_batched,
    opened_app,
    read_succeeded,
    wait_drained,
)
from benchmarks.stats import Bar, Measured, MetricSpec
from benchmarks.stores import PostgresTarget, RedisTarget
from benchmarks.workers import BenchmarkError, workers
from workpool.backends import redis as redis_backend

LUA_DIR = Path(redis_backend.__file__).parent / "lua"
"""The Lua sources of the workpool being measured (with PYTHONPATH set to another
version's ``src``, that version's)."""
CALL_SITE = re.compile(r"""redis\.p?call\(\s*['"]([A-Za-z|]+)['"]""")
EXPECTED_TOP_LEVEL = frozenset(
    {"evalsha", "evalsha_ro", "eval", "blpop", "hgetall", "ping", "script|load"}
    | {"client|setinfo", "client|setname", "hello", "select"}
)
"""What workpool's Python code sends; anything else top-level is reported as unexpected."""
TOP = "top-level commands per run"
TOTAL = "command executions per run, scripts included"
SERVER_CPU = "redis-server CPU per run"
SCRIPT_TIME = "EVALSHA time per run"
PROCESSES = 2
CONCURRENCY = 100
POLL_SECONDS = 0.1


def script_commands(lua_dir: Path = LUA_DIR) -> frozenset[str]:
    """Lower-case names of the commands workpool's scripts call."""
    names: set[str] = set()
    for path in lua_dir.rglob("*.lua"):
        names.update(name.lower() for name in CALL_SITE.findall(path.read_text()))
    if not names:
        raise BenchmarkError(f"no redis.call sites found under {lua_dir}")
    return frozenset(names)


async def command_calls(target: RedisTarget) -> dict[str, int]:
    """Calls per command name so far (``cmdstat_<name>: calls=...``)."""
    return calls_of(await target.info("commandstats"))


def calls_of(stats: dict[str, Any]) -> dict[str, int]:
    """Calls per command name in an ``INFO commandstats`` reply."""
    return {key.removeprefix("cmdstat_"): int(value["calls"]) for key, value in stats.items()}


async def cpu_seconds(target: RedisTarget) -> float:
    """redis-server's CPU time so far (user + system, every thread)."""
    cpu: dict[str, Any] = await target.info("cpu")
    return float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])


def usec(stats: dict[str, Any], command: str) -> float:
    """Microseconds the server spent in ``command`` so far (0 if never called)."""
    return float(stats.get(f"cmdstat_{command}", {}).get("usec", 0))


def top_level(delta: dict[str, int], in_scripts: frozenset[str]) -> dict[str, int]:
    """The calls of commands no script makes: what clients sent."""
    return {name: calls for name, calls in delta.items() if name not in in_scripts}


async def run(env: Env) -> Measured:
    """One repetition on an emptied Redis."""
    target = await env.store.fresh()
    if isinstance(target, PostgresTarget):
        return await b7_postgres.run(env, target)
    if not isinstance(target, RedisTarget):
        raise TypeError("B7 runs on Redis and PostgreSQL only")
    count = 5_000 if env.quick else 10_000
    in_scripts = script_commands()
    async with opened_app(target) as app:
        prepared = [app.noop.prepare(number) for number in range(count)]
        async with workers(target, PROCESSES, CONCURRENCY, env.log_dir, env.worker_env) as procs:
            cpu_before = await cpu_seconds(target)
            stats_before = await target.info("commandstats")
            zcards_before = target.zcard_calls
            ids = await enqueue_batched(app, prepared)
            await wait_drained(target, procs, poll=POLL_SECONDS)
            stats_after = await target.info("commandstats")
            cpu_after = await cpu_seconds(target)
            harness = {"info": 1, "zcard": target.zcard_calls - zcards_before}
        await read_succeeded(app, ids)
    before, after = calls_of(stats_before), calls_of(stats_after)
    delta = {name: after[name] - before.get(name, 0) for name in after}
    for name, calls in harness.items():
        delta[name] -= calls
    delta = {name: calls for name, calls in sorted(delta.items()) if calls}
    top = top_level(delta, in_scripts)
    values = {
        TOP: sum(top.values()) / count,
        TOTAL: sum(delta.values()) / count,
        SERVER_CPU: 1e6 * (cpu_after - cpu_before) / count,
        SCRIPT_TIME: (usec(stats_after, "evalsha") - usec(stats_before, "evalsha")) / count,
    }
    details = {
        "runs": count,
        "calls": delta,
        "top_level": top,
        "unexpected_top_level": sorted(set(top) - EXPECTED_TOP_LEVEL),
        # A script's time includes its commands', which are counted under their names too.
        "usec_per_run": {
            name: (usec(stats_after, name) - usec(stats_before, name)) / count for name in delta
        },
        "harness_subtracted": harness,
    }
    return Measured(values, details)


WORKLOAD = Workload(
    id="B7",
    title="round trips",
    backends=("redis", "postgres"),
    metrics=(
        MetricSpec(TOP, "commands/run", {"redis": Bar("<=", 3)}, only="redis"),
        MetricSpec(TOTAL, "commands/run", only="redis"),
        MetricSpec(SERVER_CPU, "µs/run", only="redis"),
        MetricSpec(SCRIPT_TIME, "µs/run", only="redis"),
        *b7_postgres.METRICS,
    ),
    run=run,
)
