"""B9 steps: what a ``ctx.step.run`` costs, and a replay after a crash at step 9.

One store and one worker process W (concurrency 1, ``--lease-seconds 60
--renew-seconds 30``, so no lease renewal, a cost per second a run is held and not
per step, falls in anything measured) per repetition.

Per-step overhead. W runs ``ten_steps`` runs (10 ``step.run`` of a no-op async
function) one at a time: the client enqueues a run and waits until it is finished,
and on Redis until W blocks in its BLPOP again, before it enqueues the next. Each run
times its 10 steps in the worker (``time.perf_counter``) and returns the time, so no
queueing or client latency is in it; the figure is the median over runs of that time
/ 10. 5 runs first warm W up and are not counted.

Round trips per step (Redis). ``INFO commandstats`` windows (as in B7) around the N
measured ``ten_steps`` runs and around N ``noop`` runs executed the same way before
them; top-level commands per step = (top-level calls in the ten_steps window - those
in the noop window) / (10 N). Waiting for W's BLPOP after each run makes every run
take the same path (enqueue, wake-up, claim, empty claim, finish), so the subtraction
leaves the steps alone. The harness's own commands in a window (the INFO that opens
it, its ``INFO clients`` and ZCARD polls) are counted and subtracted exactly.

Replay. W first runs 3 ``fail_at_nine`` runs (step 9 raises on attempt 1, retried
after 1 ms: a replay after a retry), so the replay's code path is warm as in a
worker that has run a while. Then, per sample: a ``hold`` run takes W's only slot; a
second worker V (concurrency 1, ``--lease-seconds 1 --renew-seconds 0.2``) is started
and takes a ``crash_at_nine`` run, whose first execution saves steps 1-8 and kills
V with SIGKILL inside step 9's function; the harness checks V died of SIGKILL and
releases the hold. Once V's lease expires W takes the run over and replays it; the
run returns the time from its handler's start to the call of step 9's function (the
saved steps loaded, steps 1-8 returned from them). The lease wait is before the
handler starts and is not in the figure (the details give it as
``takeover_seconds``, and the replays after a retry as ``replay_after_a_retry_ms``).
Every replay must have succeeded on attempt 2 calling only the functions of steps 9
and 10; on Redis the details count the steps loads (HGETALL) of each crash replay.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.app import CRASH_AT, STEPS, BenchApp
from benchmarks.b7_round_trips import script_commands, top_level
from benchmarks.harness import Env, Workload, opened_app, read_succeeded, wait_drained
from benchmarks.stats import Bar, Measured, MetricSpec, percentile
from benchmarks.stores import RedisTarget, Target
from benchmarks.workers import BenchmarkError, WorkerProcess, start_worker, wait_idle, workers
from workpool import Run, Workflow

PER_STEP = "per-step overhead"
REPLAY = "replay to step 9 after a crash"
TOP = "top-level commands per step"
TOTAL = "command executions per step, scripts included"
STEADY = ("--lease-seconds", "60", "--renew-seconds", "30")
"""Options of the measured worker: no renewal within anything measured."""
CRASH = ("--lease-seconds", "1", "--renew-seconds", "0.2")
"""Options of the worker that crashes: its run is taken over within 1 s of its death."""
WARM_UP = 5
"""``ten_steps`` runs the worker executes before it is measured."""
WARM_REPLAYS = 3
"""``fail_at_nine`` runs (a replay after a retry) it executes before the crash replays."""
POLL_SECONDS = 0.005
BLOCKED_POLL_SECONDS = 0.001
RUN_TIMEOUT = 30.0


async def command_stats(target: RedisTarget) -> tuple[dict[str, int], int]:
    """Calls per command name so far, and the microseconds spent in EVALSHA (one INFO)."""
    stats: dict[str, Any] = await target.info("commandstats")
    calls = {key.removeprefix("cmdstat_"): int(value["calls"]) for key, value in stats.items()}
    return calls, int(stats.get("cmdstat_evalsha", {}).get("usec", 0))


class Window:
    """Redis commands executed between ``open`` and ``close``, less the harness's own."""

    def __init__(self, target: RedisTarget) -> None:
        self.target = target
        self._before: dict[str, int] = {}
        self._zcards = 0
        self._infos = 0
        self._evalsha_usec = 0
        self.evalsha_usec = 0
        """Microseconds Redis spent in EVALSHA (scripts) in the last closed window."""

    async def open(self) -> None:
        self._before, self._evalsha_usec = await command_stats(self.target)
        self._zcards = self.target.zcard_calls
        self._infos = 1  # this INFO is counted; the one that closes the window is not

    async def close(self) -> dict[str, int]:
        """Calls per command name in the window (and ``evalsha_usec``: time in scripts)."""
        after, evalsha_usec = await command_stats(self.target)
        self.evalsha_usec = evalsha_usec - self._evalsha_usec
        delta = {name: calls - self._before.get(name, 0) for name, calls in after.items()}
        harness = {"info": self._infos, "zcard": self.target.zcard_calls - self._zcards}
        for name, calls in harness.items():
            delta[name] = delta.get(name, 0) - calls
        return {name: calls for name, calls in sorted(delta.items()) if calls}

    async def wait_blocked(self, processes: Sequence[WorkerProcess]) -> None:
        """Wait until every worker process waits in its BLPOP (``INFO clients``)."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            self._infos += 1
            info = await self.target.info("clients")
            if int(info["blocked_clients"]) >= len(processes):
                return
            for process in processes:
                process.check_alive()
            if time.monotonic() > deadline:
                raise BenchmarkError(f"worker not back in BLPOP after {RUN_TIMEOUT:.0f} s")
            await asyncio.sleep(BLOCKED_POLL_SECONDS)


async def one_at_a_time(
    workflow: Workflow[Any, Any],
    inputs: Sequence[Any],
    target: Target,
    worker: WorkerProcess,
    window: Window | None,
) -> list[str]:
    """Enqueue a run, wait until it is done (and on Redis the worker idle), next."""
    ids: list[str] = []
    for data in inputs:
        ids.append((await workflow.run(data)).id)
        await wait_drained(target, [worker], poll=POLL_SECONDS, timeout=RUN_TIMEOUT)
        if window is not None:
            await window.wait_blocked([worker])
    return ids


@dataclass(slots=True)
class Collected:
    """What one repetition ran (run ids) and counted."""

    unmeasured: list[str] = field(default_factory=list)
    """Runs that must succeed but give no figure (warm-ups, noop, holds)."""
    stepped: list[str] = field(default_factory=list)
    """The measured ``ten_steps`` runs."""
    retried: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    calls: dict[str, dict[str, int]] = field(default_factory=dict)
    """Redis: calls per command in the noop and ten_steps windows."""
    script_usec: int = 0
    """Redis: EVALSHA time of the ten_steps window less the noop window's."""
    killed_at: list[float] = field(default_factory=list)
    loads: list[int] = field(default_factory=list)
    """Redis: HGETALL calls (steps loads) while each crashed run was taken over."""


async def measure_steps(
    app: BenchApp, target: Target, worker: WorkerProcess, window: Window | None, count: int
) -> Collected:
    """Warm-up, then on Redis the noop window; then the ten_steps runs (a window on Redis)."""
    got = Collected()
    got.unmeasured += await one_at_a_time(app.ten_steps, range(WARM_UP), target, worker, window)
    if window is not None:
        await window.open()
        got.unmeasured += await one_at_a_time(app.noop, range(count), target, worker, window)
        got.calls["noop"] = await window.close()
        got.script_usec = -window.evalsha_usec
        await window.open()
    got.stepped = await one_at_a_time(app.ten_steps, range(count), target, worker, window)
    if window is not None:
        got.calls["ten_steps"] = await window.close()
        got.script_usec += window.evalsha_usec
    return got


async def wait_running(app: BenchApp, run_id: str, worker: WorkerProcess) -> None:
    """Wait until the run was claimed (its worker's slot is then taken)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while (await app.pool.get_run(run_id)).status != "running":
        worker.check_alive()
        if time.monotonic() > deadline:
            raise BenchmarkError(f"run {run_id} not started within {RUN_TIMEOUT:.0f} s")
        await asyncio.sleep(POLL_SECONDS)


async def crash_replays(
    app: BenchApp,
    env: Env,
    target: Target,
    procs: list[WorkerProcess],
    window: Window | None,
    samples: int,
    got: Collected,
) -> None:
    """Replays after a retry, then ``samples`` takeovers of a run whose worker died."""
    worker = procs[0]
    got.retried = await one_at_a_time(app.fail_at_nine, range(WARM_REPLAYS), target, worker, window)
    for sample in range(samples):
        release = env.log_dir / f"b9-release-{uuid.uuid4().hex}"
        got.unmeasured.append((await app.hold.run(str(release))).id)
        await wait_running(app, got.unmeasured[-1], worker)
        victim = start_worker(target, 1, env.log_dir, env.worker_env, CRASH)
        procs.append(victim)
        await wait_idle(target, [victim])
        got.crashed.append((await app.crash_at_nine.run(sample)).id)
        await victim.wait_killed(RUN_TIMEOUT)
        got.killed_at.append(time.time())
        if window is not None:
            await window.open()
        release.touch()
        await wait_drained(target, [worker], poll=POLL_SECONDS, timeout=RUN_TIMEOUT)
        if window is not None:
            got.loads.append((await window.close()).get("hgetall", 0))


def check_replays(runs: Sequence[Run]) -> list[float]:
    """Replay times (ms); raise unless each was attempt 2, calling only steps 9 and 10."""
    for run in runs:
        if run.output["attempt"] != 2 or run.output["called"] != [CRASH_AT, STEPS]:
            raise BenchmarkError(
                f"{run.workflow} run {run.id}: the replay was attempt {run.output['attempt']} "
                f"and called steps {run.output['called']}, not attempt 2 calling steps 9 and 10"
            )
    return [1000 * run.output["replay_seconds"] for run in runs]


def round_trips(got: Collected, count: int) -> tuple[dict[str, float], dict[str, Any]]:
    """Redis commands per step: the ten_steps window less the noop window, / 10 N."""
    in_scripts = script_commands()
    top = {name: top_level(calls, in_scripts) for name, calls in got.calls.items()}
    steps = STEPS * count
    values = {
        TOP: (sum(top["ten_steps"].values()) - sum(top["noop"].values())) / steps,
        TOTAL: (sum(got.calls["ten_steps"].values()) - sum(got.calls["noop"].values())) / steps,
    }
    details = {
        "top_level_per_run": {
            name: {command: calls / count for command, calls in of.items()}
            for name, of in top.items()
        },
        "calls": got.calls,
        # Time inside Redis: the EVALSHA time of the ten_steps window less the noop one's.
        "redis_script_usec_per_step": got.script_usec / steps,
        "steps_loads_per_replay": got.loads,
    }
    return values, details


async def run(env: Env) -> Measured:
    """One repetition on a fresh store."""
    count, samples = (50, 2) if env.quick else (300, 5)
    target = await env.store.fresh()
    window = Window(target) if isinstance(target, RedisTarget) else None
    async with opened_app(target) as app:
        async with workers(target, 1, 1, env.log_dir, env.worker_env, STEADY) as procs:
            got = await measure_steps(app, target, procs[0], window, count)
            await crash_replays(app, env, target, procs, window, samples, got)
        ids = [*got.stepped, *got.crashed, *got.retried, *got.unmeasured]
        runs = await read_succeeded(app, ids)
    stepped = runs[:count]
    crashed = runs[count : count + samples]
    retried = runs[count + samples : count + samples + len(got.retried)]
    micros = sorted(1e6 * run.output["steps_seconds"] / STEPS for run in stepped)
    millis = check_replays(crashed)
    values = {PER_STEP: statistics.median(micros), REPLAY: statistics.median(millis)}
    details: dict[str, Any] = {
        "runs": count,
        "per_step_us": {f"p{p}": percentile(micros, p) for p in (10, 90, 99, 100)},
        "replay_ms": millis,
        "replay_after_a_retry_ms": check_replays(retried),
        "takeover_seconds": [
            (run.started_at.timestamp() if run.started_at else float("nan")) - killed
            for run, killed in zip(crashed, got.killed_at, strict=True)
        ],
    }
    if window is not None:
        more_values, more_details = round_trips(got, count)
        values.update(more_values)
        details.update(more_details)
    return Measured(values, details)


WORKLOAD = Workload(
    id="B9",
    title="steps",
    backends=("sqlite", "redis"),
    metrics=(
        MetricSpec(PER_STEP, "µs/step"),
        MetricSpec(REPLAY, "ms"),
        MetricSpec(TOP, "commands/step", {"redis": Bar("<=", 1.0)}, only="redis"),
        MetricSpec(TOTAL, "commands/step", only="redis"),
    ),
    run=run,
)
