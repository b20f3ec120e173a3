"""A handler adding runs to its own run's batch (``ctx.add_to_batch``)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence

from workpool import tracing
from workpool.builder import build_new_run, sent_runs
from workpool.definitions import PreparedRun
from workpool.engine.environment import StepEnvironment, check_lease


async def add_to_own_batch(
    env: StepEnvironment, batch_id: str, name: str, runs: Sequence[PreparedRun]
) -> list[str]:
    """Store ``runs`` in the batch of the leased run, as added by that run (so a closed
    batch takes them: it cannot complete while the run has not ended). Each run without
    an idempotency key gets one from (run id, ``name``, its position), so an add that a
    retry or a replay repeats stores each run once. Returns the stored runs' ids.
    LeaseLost, with nothing stored, once the worker's lease is past confirming (as for a
    step)."""
    check_lease(env, f"add to its batch ({name!r})")
    run_id = env.lease.run_id
    now = env.settings.clock.now()
    with tracing.sending([run.workflow for run in runs], batch=True) as sending:
        new_runs = [
            build_new_run(
                env.registry,
                env.settings,
                _keyed(run, run_id, name, position),
                now,
                batch_id=batch_id,
                trace_context=sending.context,
            )
            for position, run in enumerate(runs)
        ]
        stored = await env.backend.enqueue(new_runs, now, added_by=run_id)
        sending.sent(sent_runs(new_runs, stored))
    return [outcome.run_id for outcome in stored]


def _keyed(run: PreparedRun, run_id: str, name: str, position: int) -> PreparedRun:
    if run.options.idempotency_key is not None:
        return run
    digest = hashlib.sha256(json.dumps([name, position]).encode()).hexdigest()[:32]
    options = dataclasses.replace(run.options, idempotency_key=f"batch:{run_id}:{digest}")
    return dataclasses.replace(run, options=options)
