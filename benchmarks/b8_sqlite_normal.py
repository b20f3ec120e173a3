"""B8 SQLite durability: B1 one-at-a-time and B2 two-process drain at synchronous=NORMAL.

workpool keeps ``synchronous=FULL``; compare these figures with B1 and B2 on SQLite.
The level is set through ``sqlite_knob`` (benchmark-only; workpool is not edited).
"""

from __future__ import annotations

import os
from dataclasses import replace

from benchmarks import sqlite_knob
from benchmarks.b1_enqueue import one_at_a_time
from benchmarks.b2_drain import drain
from benchmarks.harness import Env, Workload, opened_app
from benchmarks.stats import Measured, MetricSpec
from benchmarks.workers import BenchmarkError

SETTINGS = {"synchronous": "NORMAL"}
ONE = "one at a time (B1), NORMAL"
TWO = "drain, 2 processes (B2), NORMAL"


async def run(env: Env) -> Measured:
    """One repetition of each, every connection (harness and workers) at NORMAL."""
    singles = 5_000 if env.quick else 20_000
    drained = 10_000 if env.quick else 20_000
    log_path = env.log_dir / f"sqlite-knob-{os.getpid()}.log"
    log_path.unlink(missing_ok=True)
    try:
        with sqlite_knob.pragmas(SETTINGS, log_path) as worker_env:
            knob_env = replace(env, worker_env={**env.worker_env, **worker_env})
            target = await env.store.fresh()
            async with opened_app(target) as app:
                one = await one_at_a_time(app, singles)
            two = await drain(knob_env, 2, drained)
    except AttributeError as error:
        raise BenchmarkError(f"the SQLite knob no longer fits workpool's code: {error}") from None
    processes = sqlite_knob.processes_with(log_path, SETTINGS)
    if os.getpid() not in processes or len(processes - {os.getpid()}) < 2:
        raise BenchmarkError(f"synchronous=NORMAL reached only processes {sorted(processes)}")
    return Measured({ONE: one, TWO: two})


WORKLOAD = Workload(
    id="B8",
    title="SQLite synchronous=NORMAL",
    backends=("sqlite",),
    metrics=(MetricSpec(ONE, "runs/s"), MetricSpec(TWO, "runs/s")),
    run=run,
)
