"""B8 SQLite durability: B1 one-at-a-time and B2 two-process drain at synchronous=NORMAL.

workpool's default is ``synchronous=FULL``; compare these figures with B1 and B2 on
SQLite. NORMAL is asked for the supported way, with ``?synchronous=normal`` in the URL
of the harness's pool and of every worker process.
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks.b1_enqueue import one_at_a_time
from benchmarks.b2_drain import drain
from benchmarks.harness import Env, Workload, opened_app
from benchmarks.stats import Measured, MetricSpec
from benchmarks.stores import SqliteStore
from benchmarks.workers import BenchmarkError

QUERY = "synchronous=normal"
ONE = "one at a time (B1), NORMAL"
TWO = "drain, 2 processes (B2), NORMAL"


def _normal_store(env: Env) -> SqliteStore:
    """A store next to the suite's whose URLs ask for synchronous=normal."""
    try:
        from workpool.backends import sqlite_synchronous
    except ImportError:
        raise BenchmarkError("this workpool has no ?synchronous= URL option") from None
    if not isinstance(env.store, SqliteStore):
        raise TypeError("B8 runs on SQLite only")
    sqlite_synchronous(f"sqlite:///check.db?{QUERY}")  # ConfigurationError if refused
    directory = env.store.directory / "normal"
    directory.mkdir(exist_ok=True)
    return SqliteStore(directory, QUERY)


async def run(env: Env) -> Measured:
    """One repetition of each, on fresh files, every connection at NORMAL."""
    singles = 5_000 if env.quick else 20_000
    drained = 10_000 if env.quick else 20_000
    store = _normal_store(env)
    try:
        target = await store.fresh()
        async with opened_app(target) as app:
            one = await one_at_a_time(app, singles)
        two = await drain(replace(env, store=store), 2, drained)
    finally:
        await store.close()
    return Measured({ONE: one, TWO: two})


WORKLOAD = Workload(
    id="B8",
    title="SQLite synchronous=NORMAL",
    backends=("sqlite",),
    metrics=(MetricSpec(ONE, "runs/s"), MetricSpec(TWO, "runs/s")),
    run=run,
)
